"""Dagster metadata built from Spark schemas."""

from dagster import TableColumn, TableColumnConstraints, TableSchema
from pyspark.sql.types import StructType


def column_schema(schema: StructType) -> TableSchema:
    """`dagster/column_schema` of a table: nested types as Spark writes them, comments as descriptions."""
    return TableSchema(
        columns=[
            TableColumn(
                name=f.name,
                type=f.dataType.simpleString(),
                description=f.metadata.get("comment"),
                constraints=TableColumnConstraints(nullable=f.nullable),
            )
            for f in schema.fields
        ]
    )
