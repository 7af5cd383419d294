"""A message definition's data schema -> the Spark type of its `data` column."""

from __future__ import annotations

from pyspark.sql.types import DataType

from .avro import avro_to_spark, named_type
from .json_schema import SchemaError, json_schema_field
from .json_structure import json_structure_field
from .protobuf import protobuf_to_spark
from .references import DataSchema


def _avro(schema: DataSchema) -> tuple[DataType, bool]:
    try:
        content = named_type(schema.content, schema.type_name)
    except SchemaError as exc:
        raise SchemaError(f"{schema.message}: {exc} in {schema.reference!r}") from None
    return avro_to_spark(content, {} if content is not schema.content else None)


def spark_type(schema: DataSchema) -> tuple[DataType, bool]:
    """(type, nullable) of the payload; a SchemaError names the message and what is not mapped."""
    dtype, nullable, _ = spark_field(schema)
    return dtype, nullable


def spark_field(schema: DataSchema) -> tuple[DataType, bool, dict]:
    """(type, nullable, the payload's own metadata: its root checks)."""
    try:
        if schema.family == "jsonschema":
            return json_schema_field(schema.content, document=schema.document)
        if schema.family == "jsonstructure":
            return json_structure_field(schema.content, schema.document, schema.type_name)
        if schema.family == "avro":
            return (*_avro(schema), {})
        if schema.family == "protobuf":
            return (*protobuf_to_spark(schema.content, schema.type_name), {})
    except SchemaError as exc:
        if schema.message in str(exc):
            raise
        raise type(exc)(f"{schema.message}: {exc}") from None
    raise SchemaError(f"{schema.message}: schema format {schema.format!r} is not mapped to Spark (yet)")
