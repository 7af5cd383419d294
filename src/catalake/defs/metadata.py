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
    each day's materialization with its own metadata (`by_day`: partition -> metadata), and the
    step's output with none: metadata given to the output is stored twice, on the step's output
    event and on the materialization (an increment's `deadletter` every 30 s), and a range's
    would go to every day of it. What a range did in all (`summary`) goes to the run's log."""
    from dagster import MaterializeResult

    if len(by_day) > 1:
        context.log.info(f"{key.to_user_string()}: {len(by_day)} days: {summary}")
    for day, metadata in by_day.items():
        # partition-scoped: only that day's materialization carries it (not the step's output)
        context.add_asset_metadata(metadata, asset_key=key, partition_key=day)
    yield MaterializeResult(asset_key=key)
