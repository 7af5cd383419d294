"""A message definition's data schema -> the Spark type of its `data` column."""

from __future__ import annotations

from pyspark.sql.types import DataType

from .avro import avro_to_spark
from .json_schema import SchemaError, json_schema_to_spark
from .json_structure import json_structure_to_spark
from .protobuf import protobuf_to_spark
from .references import DataSchema


def _avro(schema: DataSchema) -> tuple[DataType, bool]:
    content = schema.content
    if schema.type_name and isinstance(content, list):  # a list of named types: pick the one named
        named = [t for t in content if isinstance(t, dict) and str(t.get("name", "")).rsplit(".", 1)[-1] == schema.type_name]
        if not named:
            raise SchemaError(f"{schema.message}: Avro type {schema.type_name!r} not found in {schema.reference!r}")
        return avro_to_spark(named[0], {})
    return avro_to_spark(content)


def spark_type(schema: DataSchema) -> tuple[DataType, bool]:
    """(type, nullable) of the payload; a SchemaError names the message and what is not mapped."""
    try:
        if schema.family == "jsonschema":
            return json_schema_to_spark(schema.content, document=schema.document)
        if schema.family == "jsonstructure":
            return json_structure_to_spark(schema.content, schema.document, schema.type_name)
        if schema.family == "avro":
            return _avro(schema)
        if schema.family == "protobuf":
            return protobuf_to_spark(schema.content, schema.type_name)
    except SchemaError as exc:
        if schema.message in str(exc):
            raise
        raise SchemaError(f"{schema.message}: {exc}") from None
    raise SchemaError(f"{schema.message}: schema format {schema.format!r} is not mapped to Spark (yet)")
