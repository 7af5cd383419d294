"""JSON Structure (json-structure.org, core) -> Spark type.

No maintained Python library maps JSON Structure yet, so the mapping is written here.

Primitives: string, uri, uuid, jsonpointer, time, duration -> string; boolean -> boolean;
number, double -> double; float, float8 -> float; int8 -> byte; uint8, int16 -> short;
uint16, int32 -> int; uint32, int64, integer -> long; uint64 -> decimal(20,0);
int128, uint128 -> decimal(38,0); decimal -> decimal(precision, scale) (defaults 38, 18);
date -> date; datetime, timestamp -> timestamp; binary -> binary; null -> string;
any -> JSON string.
Compounds: object -> struct (`required` members non-nullable; `$extends` bases' properties
first); array, set -> array; map -> map<string, values>; tuple -> JSON string; choice ->
a struct with one nullable field per choice (the tagged JSON form `{"<choice>": {...}}`), or,
with a `selector`, one struct of every choice's properties plus the selector.
`type` may be a name, a `{"$ref": "#/definitions/..."}` or a union list: null members make it
nullable, one member left is that member, several follow the JSON Schema union rule (structs
merge, numbers widen to double, otherwise a JSON string). A type that refers to itself is cut
into a JSON string column. `definitions` may nest namespaces; `$root` names the root type.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..catalog.problems import split_pointer
from .json_schema import SchemaError
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
            return DecimalType(int(schema.get("precision", 38)), int(schema.get("scale", 18))), False, {}
        if type_ in PRIMITIVES:
            return PRIMITIVES[type_], False, {}
        if type_ in ("object", "abstract"):
            return self.object(schema, stack), False, {}
        if type_ in ("array", "set"):
            dtype, _, _ = self.map_member(schema.get("items", {"type": "any"}), stack)
            return ArrayType(dtype, True), False, {}
        if type_ == "map":
            dtype, _, _ = self.map_member(schema.get("values", {"type": "any"}), stack)
            return MapType(StringType(), dtype, True), False, {}
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
            return StringType(), True, {**JSON_STRING, "catalake.recursion": True}
        stack = stack + (id(schema),)
        if "type" not in schema and "$root" in schema:
            return self.map(self.lookup(schema["$root"]), stack)
        return self.map_type(schema.get("type"), schema, stack)

    def properties(self, schema: dict, stack) -> tuple[dict, set]:
        props: dict = {}
        required: set = set()
        bases = schema.get("$extends")
        for base_ref in bases if isinstance(bases, list) else [bases] if bases else []:
            base_props, base_required = self.properties(self.lookup(base_ref), stack)
            props.update(base_props)
            required |= base_required
        props.update(schema.get("properties") or {})
        req = schema.get("required") or []
        # `required` may list names, or lists of names (alternatives): only names always required count
        required |= {r for r in req if isinstance(r, str)}
        return props, required

    def object(self, schema: dict, stack) -> DataType:
        props, required = self.properties(schema, stack)
        if not props:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return MapType(StringType(), self.map_member(extra, stack)[0], True)
            return StringType()
        fields = []
        for name, prop in props.items():
            dtype, nullable, meta = self.map_member(prop, stack)
            if isinstance(prop, dict) and prop.get("description"):
                meta = {**meta, "comment": prop["description"]}
            fields.append(StructField(name, dtype, nullable or name not in required, meta))
        return StructType(fields)

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


def json_structure_to_spark(schema: dict, document: dict | None = None, type_name: str | None = None) -> tuple[DataType, bool]:
    """The Spark type of values of a JSON Structure schema, and whether the value may be null.

    `document` is what `#` refers to when `schema` is a part of it; `type_name` picks a named
    definition (the `:TypeName` form of a reference).
    """
    if not isinstance(schema, dict):
        raise SchemaError(f"a JSON Structure schema must be an object, not {type(schema).__name__}")
    mapper = _Mapper(document if isinstance(document, dict) else schema)
    if type_name:
        schema = mapper.find_named(type_name)
    dtype, nullable, _ = mapper.map(schema, ())
    return dtype, nullable
