"""Avro schema -> Spark type. The schema is parsed (and checked) by fastavro.

Mapping: record -> struct; enum -> string; array -> array; map -> map<string, T>;
fixed/bytes -> binary; int -> int; long -> long; float -> float; double -> double;
boolean -> boolean; string -> string; null -> string (always null).
Logical types: decimal -> decimal(p, s); date -> date; time-millis -> int and time-micros ->
long (milliseconds/microseconds after midnight; Spark has no time-of-day type in this
version); timestamp-millis/-micros -> timestamp; local-timestamp-millis/-micros ->
timestamp_ntz; uuid -> string.
Unions: [null, T] -> nullable T; [T] -> T; other unions -> a struct with one nullable field per
member (named after the member's type or name). A named type used inside itself (recursion) is
cut into a JSON string column.
"""

from __future__ import annotations

from typing import Any

import fastavro
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType, DecimalType, DoubleType,
                               FloatType, IntegerType, LongType, MapType, StringType, StructField, StructType,
                               TimestampNTZType, TimestampType)

from . import keys
from .json_schema import SchemaError
from .unions import JSON_STRING

PRIMITIVES: dict[str, DataType] = {
    "null": StringType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
LOGICAL: dict[str, DataType] = {
    "date": DateType(),
    "time-millis": IntegerType(),
    "time-micros": LongType(),
    "timestamp-millis": TimestampType(),
    "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(),
    "local-timestamp-micros": TimestampNTZType(),
    "uuid": StringType(),
}
# How Avro's JSON encoding writes these logical types (numbers), for reading JSON payloads
UNITS = {
    "date": "days",
    "timestamp-millis": "millis",
    "timestamp-micros": "micros",
    "local-timestamp-millis": "millis",
    "local-timestamp-micros": "micros",
}


def parse(schema: Any, named: dict | None = None) -> Any:
    """fastavro's parsed form (named types registered in `named`), or a SchemaError."""
    try:
        return fastavro.parse_schema(schema, named_schemas=named if named is not None else {})
    except Exception as exc:  # noqa: BLE001 - fastavro raises SchemaParseException, UnknownType, ValueError...
        raise SchemaError(f"invalid Avro schema: {exc}") from None


def _member_name(schema: Any) -> str:
    if isinstance(schema, str):
        return schema.rsplit(".", 1)[-1]
    if isinstance(schema, dict):
        return str(schema.get("name") or schema.get("logicalType") or schema.get("type")).rsplit(".", 1)[-1]
    return "member"


class _Mapper:
    def __init__(self, named: dict):
        self.named = named

    def map(self, schema: Any, stack: tuple[str, ...]) -> tuple[DataType, bool, dict]:
        if isinstance(schema, list):
            return self.union(schema, stack)
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return PRIMITIVES[schema], schema == "null", {}
            if schema in stack:
                return StringType(), True, {**JSON_STRING, keys.RECURSION: True}
            if schema not in self.named:
                raise SchemaError(f"Avro type {schema!r} is not defined")
            return self.map(self.named[schema], stack)
        kind = schema.get("type")
        logical = schema.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), False, {}
        if logical in LOGICAL:
            return LOGICAL[logical], False, ({keys.UNIT: UNITS[logical]} if logical in UNITS else {})
        if kind == "record" or kind == "error":
            name = schema.get("name")
            if name in stack:
                return StringType(), True, {**JSON_STRING, keys.RECURSION: True}
            inner = stack + ((name,) if name else ())
            fields = []
            for f in schema["fields"]:
                dtype, nullable, meta = self.map(f["type"], inner)
                if f.get("doc"):
                    meta = {**meta, "comment": f["doc"]}
                fields.append(StructField(f["name"], dtype, nullable, meta))
            return StructType(fields), False, ({"comment": schema["doc"]} if schema.get("doc") else {})
        if kind == "enum":
            return StringType(), False, {keys.CHECK: {"enum": list(schema.get("symbols") or [])}}
        if kind == "fixed":
            return BinaryType(), False, {}
        if kind == "array":
            dtype, nullable, _ = self.map(schema["items"], stack)
            return ArrayType(dtype, True), False, {}
        if kind == "map":
            dtype, nullable, _ = self.map(schema["values"], stack)
            return MapType(StringType(), dtype, True), False, {}
        if kind in PRIMITIVES or isinstance(kind, (dict, list)) or kind in self.named:
            return self.map(kind, stack)
        raise SchemaError(f"unknown Avro type {kind!r}")

    def union(self, members: list, stack) -> tuple[DataType, bool, dict]:
        rest = [m for m in members if m != "null"]
        nullable = len(rest) < len(members)
        if len(rest) == 1:
            dtype, _, meta = self.map(rest[0], stack)
            return dtype, nullable, meta
        fields, names = [], set()
        for member in rest:
            name = _member_name(member)
            while name in names:
                name += "_"
            names.add(name)
            dtype, _, meta = self.map(member, stack)
            fields.append(StructField(name, dtype, True, meta))
        return StructType(fields), nullable, {}


def named_type(content: Any, type_name: str | None) -> Any:
    """The schema a `:TypeName` reference means: the named type of a list of types, else `content`."""
    if not (type_name and isinstance(content, list)):
        return content
    for t in content:
        if isinstance(t, dict) and str(t.get("name", "")).rsplit(".", 1)[-1] == type_name:
            return t
    raise SchemaError(f"Avro type {type_name!r} not found")


def avro_to_spark(schema: Any, named: dict | None = None) -> tuple[DataType, bool]:
    """The Spark type of Avro values of `schema`, and whether the value itself may be null.

    `named` carries named types defined elsewhere (e.g. other schemas of the same registry).
    """
    named = dict(named or {})
    parsed = parse(schema, named)
    dtype, nullable, _ = _Mapper(named).map(parsed, ())
    return dtype, nullable
