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


def code_version(*modules) -> str:
    """A version of the code that computes an asset: a hash of the source files of its modules
    (every module of a package), so it changes exactly when that code does (Dagster then marks the
    materializations made by older code)."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for module in modules:
        path = Path(module.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(file.read_bytes())
    return digest.hexdigest()[:12]
