"""Spark schemas as Arrow schemas and back, for the tables delta-rs creates and the files
executors write: the column metadata (comments, catalake.* keys) travels with them."""

from __future__ import annotations

import json
from typing import Sequence

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, MapType, StructField, StructType


def spark_schema_of(delta_schema_json: str) -> StructType:
    """A Delta table's schema (its JSON) as Spark sees it, column metadata (comments,
    catalake.*) included.

    Delta's schema JSON is Spark's own; delta-rs keeps metadata values as strings, so ours
    (JSON-encoded on the way in, see _arrow_field) are decoded again.
    """
    return StructType.fromJson(schema_value(delta_schema_json))


def schema_value(delta_schema_json: str) -> dict:
    """A Delta table's schema (its JSON) as Spark's `StructType.jsonValue()` of it."""
    return _decode_metadata(json.loads(delta_schema_json))


def _decode_metadata(node):
    if isinstance(node, dict):
        out = {k: _decode_metadata(v) for k, v in node.items() if k != "metadata"}
        if "metadata" in node:
            out["metadata"] = {
                k: (json.loads(v) if k.startswith("catalake.") and isinstance(v, str) else v)
                for k, v in node["metadata"].items()
            }
        return out
    if isinstance(node, list):
        return [_decode_metadata(v) for v in node]
    return node


def _with_metadata(arrow_type: pa.DataType, spark_type) -> pa.DataType:
    """arrow_type with the Spark fields' metadata attached at every nesting level."""
    if isinstance(spark_type, StructType):
        return pa.struct([_arrow_field(arrow_type.field(i), f) for i, f in enumerate(spark_type.fields)])
    if isinstance(spark_type, ArrayType):
        item = arrow_type.value_field
        return pa.list_(item.with_type(_with_metadata(item.type, spark_type.elementType)))
    if isinstance(spark_type, MapType):
        return pa.map_(arrow_type.key_type, _with_metadata(arrow_type.item_type, spark_type.valueType))
    return arrow_type


def _arrow_field(field: pa.Field, spark_field: StructField) -> pa.Field:
    field = field.with_type(_with_metadata(field.type, spark_field.dataType))
    metadata = {
        k: (v if isinstance(v, str) and not k.startswith("catalake.") else json.dumps(v))
        for k, v in spark_field.metadata.items()
    }
    return field.with_metadata(metadata) if metadata else field


def arrow_schema_with_metadata(schema: StructType) -> pa.Schema:
    """The Arrow schema a Delta table is created with: column metadata kept (JSON-encoded)."""
    arrow = to_arrow_schema(schema, timestamp_utc=True)
    return pa.schema([_arrow_field(f, sf) for f, sf in zip(arrow, schema.fields)])


def arrow_schema(schema: StructType, exclude: Sequence[str] = ()) -> pa.Schema:
    """The Arrow schema data files of the table are written with (no column metadata; the
    partition column, which Delta keeps in the log, excluded)."""
    return to_arrow_schema(StructType([f for f in schema.fields if f.name not in exclude]), timestamp_utc=True)
