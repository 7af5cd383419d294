"""Dagster metadata built from Spark schemas."""

from dagster import TableColumn, TableColumnConstraints, TableSchema


def column_schema(schema) -> TableSchema:
    """`dagster/column_schema` of a table (a pyspark StructType): nested types as Spark writes
    them, comments as descriptions."""
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


def stats_columns(schema) -> str:
    """The columns whose statistics every commit of the table records (a pyspark StructType;
    the table property `delta.dataSkippingStatsColumns`): what a filter can rule files out by."""
    from catalake.platform.warehouse.arrowschemas import arrow_schema
    from catalake.platform.warehouse.files import PARTITION_COLUMN
    from catalake.platform.warehouse.statistics import stats_columns_property, stats_columns as columns

    names = stats_columns_property(columns(arrow_schema(schema), [PARTITION_COLUMN])).split(",")
    return f"{len(names)}: " + ", ".join(names)


def code_version(*modules: str) -> str:
    """A version of the code that computes an asset: a hash of the source files of its modules,
    named as imported (every module of a package), so it changes exactly when that code does
    (Dagster then marks the materializations made by older code). Found by their files, not
    imported: a load imports none of the engine."""
    import hashlib
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]  # catalake/
    digest = hashlib.sha256()
    for module in modules:
        path = package.joinpath(*module.split(".")[1:])
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
        for file in files:
            digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


def days_materialized(context, key, by_day: dict[str, dict], summary: dict):
    """The output of a step that materializes `key` for one day or a backfill's range of days,
    each day with its own metadata (`by_day`: partition -> metadata). One day: its metadata is
    the output's. A range: Dagster gives every partition of the range the output's metadata, so
    the output says what the range did (`summary`), and each day's own materialization is logged
    after it, the partition's latest."""
    from dagster import AssetMaterialization, MaterializeResult

    if len(by_day) == 1:
        (metadata,) = by_day.values()
        yield MaterializeResult(asset_key=key, metadata=metadata)
        return
    yield MaterializeResult(asset_key=key, metadata={"days": len(by_day), **summary})
    from catalake.eventlog import event_batch

    with event_batch(context.instance):
        for day, metadata in by_day.items():
            context.log_event(AssetMaterialization(asset_key=key, partition=day, metadata=metadata))
