"""JSON Structure (json-structure.org, core) -> Spark type.

No maintained Python library maps JSON Structure yet, so the mapping is written here.

Primitives: string, uri, uuid, jsonpointer, time, duration -> string; boolean -> boolean;
number, double -> double; float, float8 -> float; int8 -> byte; uint8, int16 -> short;
uint16, int32 -> int; uint32, int64, integer -> long; uint64 -> decimal(20,0);
int128, uint128 -> decimal(38,0); decimal -> decimal(precision, scale) (the spec's defaults:
34, 7); date -> date; datetime, timestamp -> timestamp; binary -> binary; null -> string;
any -> JSON string.

What the payload typing (payload.py) needs to check a value beyond its Spark type rides in the
field metadata, like the JSON Schema mapping's: `catalake.encoding: "string"` for the types the
spec encodes as JSON strings (int64, uint64, int128, uint128, decimal; a JSON number is taken
too), `catalake.range` for integers whose Spark type is wider than theirs (unsigned ones),
`catalake.format` for the string types with a syntax (uuid, uri, jsonpointer, time, duration),
`catalake.check` for the validation keywords (enum, const, pattern, minimum/maximum and their
exclusive forms, minLength/maxLength, minItems/maxItems, uniqueItems and the `set` type as
`unique`, and `additionalProperties: false` as a closed object), `catalake.items` / `catalake.values` for the metadata of an array's
items / a map's values, and `catalake.wire` for a property whose JSON name differs from its schema
name (`altnames: {"json": ...}`): the column keeps the schema name, the record's key is the
wire name.
Compounds: object -> struct (`required` members non-nullable; `$extends` bases' properties
first, the first base winning a name); array, set -> array; map -> map<string, values>;
tuple -> JSON string; choice ->
a struct with one nullable field per choice (the tagged JSON form `{"<choice>": {...}}`), or,
with a `selector`, one struct of every choice's properties plus the selector.
`type` may be a name, a `{"$ref": "#/definitions/..."}` or a union list: null members make it
nullable, one member left is that member, several follow the JSON Schema union rule (structs
merge, numbers widen to double, otherwise a JSON string). A type that refers to itself is cut
into a JSON string column. `definitions` may nest namespaces; `$root` names the root type.
An `abstract` type is no data schema (core, "The abstract keyword"): a SchemaError.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DecimalType,
                               DoubleType, FloatType, IntegerType, LongType, MapType, ShortType, StringType,
                               StructField, StructType, TimestampType)

from ..problems import split_pointer
from . import keys
from .json_schema import BOUNDS, SchemaError, constraints
from .unions import JSON_STRING, union_type

PRIMITIVES: dict[str, DataType] = {
    "string": StringType(), "uri": StringType(), "uuid": StringType(), "jsonpointer": StringType(),
    "time": StringType(), "duration": StringType(), "boolean": BooleanType(),
    "number": DoubleType(), "double": DoubleType(), "float": FloatType(), "float8": FloatType(),
    "int8": ByteType(), "uint8": ShortType(), "int16": ShortType(), "uint16": IntegerType(),
    "int32": IntegerType(), "uint32": LongType(), "int64": LongType(), "integer": LongType(),
    "uint64": DecimalType(20, 0), "int128": DecimalType(38, 0), "uint128": DecimalType(38, 0),
    "date": DateType(), "datetime": TimestampType(), "timestamp": TimestampType(), "binary": BinaryType(),
}
STRING_ENCODED = frozenset({"int64", "uint64", "int128", "uint128", "decimal"})
# integer types whose Spark type holds values outside their range
RANGES = {"uint8": (0, 2**8 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
          "int128": (-2**127, 2**127 - 1), "uint128": (0, 2**128 - 1)}
FORMATTED = frozenset({"uuid", "uri", "jsonpointer", "time", "duration"})
# JSON Structure validation (json-structure/validation): the keywords checked natively
KEYWORDS = ("enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
            "minLength", "maxLength", "pattern", "minItems", "maxItems")
DECIMAL_DEFAULTS = (34, 7)  # core, "decimal": the precision and scale of IEEE 754 decimal128


def primitive_metadata(type_: str) -> dict:
    """What a value of a primitive type must be beyond its Spark type (see the module doc)."""
    meta: dict = {}
    if type_ in STRING_ENCODED:
        meta[keys.ENCODING] = "string"
    if type_ in RANGES:
        meta[keys.RANGE] = list(RANGES[type_])
    if type_ in FORMATTED:
        meta[keys.FORMAT] = type_
    return meta


def _number(value):
    """A bound of a string-encoded type is written as a string too (`"minimum": "0"`)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value  # left for constraints() to refuse
    return value


def structure_constraints(schema: dict) -> dict:
    """The validation keywords of one schema node, as the platform's `catalake.check`
    (validated like JSON Schema's: an impossible value is a catalog error)."""
    picked = {k: _number(schema[k]) if k in BOUNDS else schema[k] for k in KEYWORDS if k in schema}
    checks = constraints(picked) if picked else {}
    if schema.get("uniqueItems") is True or schema.get("type") == "set":
        checks["unique"] = True
    return checks


def wire_name(name: str, prop) -> str:
    """The JSON key of a property (alternate-names: the `json` altname), else its name."""
    alt = prop.get("altnames") if isinstance(prop, dict) else None
    wire = alt.get("json") if isinstance(alt, dict) else None
    return wire if isinstance(wire, str) and wire else name


class _Mapper:
    def __init__(self, document: dict):
        self.document = document

    def lookup(self, ref: str) -> dict:
        node: Any = self.document
        for token in split_pointer(ref):
            if not isinstance(node, dict) or token not in node:
                raise SchemaError(f"JSON Structure $ref {ref!r} does not resolve")
            node = node[token]
        if not isinstance(node, dict):
            raise SchemaError(f"JSON Structure $ref {ref!r} is not a type definition")
        return node

    def find_named(self, name: str) -> dict:
        """A definition by name, searching nested namespaces."""
        def search(defs):
            for key, value in (defs or {}).items():
                if not isinstance(value, dict):
                    continue
                if key == name and "type" in value:
                    return value
                if "type" not in value:
                    found = search(value)
                    if found:
                        return found
            return None

        found = search(self.document.get("definitions"))
        if found is None:
            raise SchemaError(f"JSON Structure type {name!r} is not defined")
        return found

    def map_type(self, type_: Any, schema: dict, stack: tuple[int, ...]) -> tuple[DataType, bool, dict]:
        if isinstance(type_, list):
            return self.union(type_, schema, stack)
        if isinstance(type_, dict) and "$ref" in type_:
            return self.map(self.lookup(type_["$ref"]), stack)
        if isinstance(type_, dict):
            return self.map(type_, stack)
        if type_ == "null":
            return StringType(), True, {}
        if type_ == "decimal":
            precision, scale = DECIMAL_DEFAULTS
            return (DecimalType(int(schema.get("precision", precision)), int(schema.get("scale", scale))), False,
                    primitive_metadata(type_))
        if type_ in PRIMITIVES:
            return PRIMITIVES[type_], False, primitive_metadata(type_)
        if type_ == "object":
            dtype, meta = self.object(schema, stack)
            return dtype, meta == JSON_STRING, meta
        if type_ in ("array", "set"):
            dtype, _, meta = self.map_member(schema.get("items", {"type": "any"}), stack)
            return ArrayType(dtype, True), False, {keys.ITEMS: meta} if meta else {}
        if type_ == "map":
            dtype, _, meta = self.map_member(schema.get("values", {"type": "any"}), stack)
            return MapType(StringType(), dtype, True), False, {keys.VALUES: meta} if meta else {}
        if type_ == "choice":
            return self.choice(schema, stack), False, {}
        if type_ in ("tuple", "any", None):
            return StringType(), True, dict(JSON_STRING)
        raise SchemaError(f"unknown JSON Structure type {type_!r}")

    def map_member(self, member: Any, stack) -> tuple[DataType, bool, dict]:
        """`items`, `values`, a property or a union member: a schema, or just a type reference."""
        if isinstance(member, dict) and "type" not in member and "$ref" in member:
            return self.map(self.lookup(member["$ref"]), stack)
        if isinstance(member, (str, list)):
            return self.map_type(member, {}, stack)
        return self.map(member, stack)

    def map(self, schema: dict, stack: tuple[int, ...]) -> tuple[DataType, bool, dict]:
        if id(schema) in stack:
            return StringType(), True, {**JSON_STRING, keys.RECURSION: True}
        if schema.get("abstract") is True:
            raise SchemaError(f"the abstract type {schema.get('name') or ''!r} is used as a type; "
                              "abstract types are only bases of $extends")
        stack = stack + (id(schema),)
        if "type" not in schema and "$root" in schema:
            return self.map(self.lookup(schema["$root"]), stack)
        dtype, nullable, meta = self.map_type(schema.get("type"), schema, stack)
        checks = structure_constraints(schema)
        if checks and keys.JSON not in meta:
            meta = {**meta, keys.CHECK: {**meta.get(keys.CHECK, {}), **checks}}
        return dtype, nullable, meta

    def properties(self, schema: dict, stack) -> tuple[dict, set]:
        props: dict = {}
        required: set = set()
        bases = schema.get("$extends")
        for base_ref in bases if isinstance(bases, list) else [bases] if bases else []:
            base_props, base_required = self.properties(self.lookup(base_ref), stack)
            for name, prop in base_props.items():
                props.setdefault(name, prop)  # the first base's property wins (core, "$extends")
            required |= base_required
        props.update(schema.get("properties") or {})
        req = schema.get("required") or []
        # `required` may list names, or lists of names (alternatives): only names always required count
        required |= {r for r in req if isinstance(r, str)}
        return props, required

    def object(self, schema: dict, stack) -> tuple[DataType, dict]:
        props, required = self.properties(schema, stack)
        if not props:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return MapType(StringType(), self.map_member(extra, stack)[0], True), {}
            return StringType(), dict(JSON_STRING)
        fields = []
        for name, prop in props.items():
            dtype, nullable, meta = self.map_member(prop, stack)
            if isinstance(prop, dict) and prop.get("description"):
                meta = {**meta, "comment": prop["description"]}
            if wire_name(name, prop) != name:
                meta = {**meta, keys.WIRE: wire_name(name, prop)}
            fields.append(StructField(name, dtype, nullable or name not in required, meta))
        closed = {"closed": sorted(wire_name(n, p) for n, p in props.items())} if schema.get("additionalProperties") is False else {}
        return StructType(fields), {keys.CHECK: closed} if closed else {}

    def choice(self, schema: dict, stack) -> DataType:
        choices = schema.get("choices") or {}
        if schema.get("selector"):
            merged: dict[str, StructField] = {schema["selector"]: StructField(schema["selector"], StringType(), True)}
            for member in choices.values():
                dtype, _, _ = self.map_member(member, stack)
                for f in dtype.fields if isinstance(dtype, StructType) else []:
                    merged.setdefault(f.name, StructField(f.name, f.dataType, True, f.metadata))
            return StructType(list(merged.values()))
        return StructType([StructField(name, self.map_member(member, stack)[0], True) for name, member in choices.items()])

    def union(self, members: list, schema: dict, stack) -> tuple[DataType, bool, dict]:
        nullable = any(m == "null" for m in members)
        mapped = [self.map_member(m, stack) for m in members if m != "null"]
        if not mapped:
            return StringType(), True, {}
        if len(mapped) == 1:
            return mapped[0][0], nullable, mapped[0][2]
        dtype, meta = union_type([(t, m) for t, _, m in mapped])
        return dtype, nullable or meta == JSON_STRING, meta


def json_structure_field(schema: dict, document: dict | None = None, type_name: str | None = None) -> tuple[DataType, bool, dict]:
    """The Spark type of values of a JSON Structure schema, whether the value may be null, and
    the value's own metadata (its checks: a closed root object, a root enum, ...).

    `document` is what `#` refers to when `schema` is a part of it; `type_name` picks a named
    definition (the `:TypeName` form of a reference).
    """
    if not isinstance(schema, dict):
        raise SchemaError(f"a JSON Structure schema must be an object, not {type(schema).__name__}")
    mapper = _Mapper(document if isinstance(document, dict) else schema)
    if type_name:
        schema = mapper.find_named(type_name)
    return mapper.map(schema, ())


def json_structure_to_spark(schema: dict, document: dict | None = None, type_name: str | None = None) -> tuple[DataType, bool]:
    dtype, nullable, _ = json_structure_field(schema, document, type_name)
    return dtype, nullable
