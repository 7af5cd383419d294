"""A message definition's data schema -> the Spark type of its `data` column."""

from __future__ import annotations

from pyspark.sql.types import DataType

from .json_schema import SchemaError
from .languages import BY_FAMILY, Mapped
from .references import DataSchema


def spark_type(schema: DataSchema) -> tuple[DataType, bool]:
    """(type, nullable) of the payload; a SchemaError names the message and what is not mapped."""
    dtype, nullable, _ = spark_field(schema)
    return dtype, nullable


def spark_field(schema: DataSchema) -> Mapped:
    """(type, nullable, the payload's own metadata: its root checks), by the schema's language."""
    language = BY_FAMILY.get(schema.family or "")
    if language is None or language.derive is None:
        raise SchemaError(f"{schema.message}: schema format {schema.format!r} is not mapped to Spark (yet)")
    try:
        return Mapped(*language.derive(schema))
    except SchemaError as exc:
        if schema.message in str(exc):
            raise
        raise type(exc)(f"{schema.message}: {exc}") from None
