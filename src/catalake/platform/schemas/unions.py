"""The union rule shared by the JSON Schema and JSON Structure mappings."""

from __future__ import annotations

from pyspark.sql.types import (ByteType, DataType, DoubleType, FloatType, IntegerType, LongType, ShortType, StringType,
                               StructField, StructType)

from . import keys

JSON_STRING = {keys.JSON: True}  # column metadata: the value is JSON text
NUMERIC = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType)


def union_type(members: list[tuple[DataType, dict]]) -> tuple[DataType, dict]:
    """Several non-null member types -> one: structs merge into a struct of all their fields
    (all nullable; a field typed differently by two members becomes JSON text), identical types
    stay, numbers widen to double, anything else is JSON text."""
    types = [t for t, _ in members]
    if all(isinstance(t, StructType) for t in types):
        fields: dict[str, StructField] = {}
        for struct in types:
            for f in struct.fields:
                current = fields.get(f.name)
                if current is None:
                    fields[f.name] = StructField(f.name, f.dataType, True, f.metadata)
                elif current.dataType != f.dataType:
                    fields[f.name] = StructField(f.name, StringType(), True, dict(JSON_STRING))
        return StructType(list(fields.values())), {}
    if all(t == types[0] for t in types):
        return types[0], members[0][1]
    if all(isinstance(t, NUMERIC) for t in types):
        return DoubleType(), {}
    return StringType(), dict(JSON_STRING)
