"""The daily classification: one Spark pass per partition writes every per-message table and the
dead-letter table (a multi-asset that can be subset), with the conservation check."""

import datetime as dt

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    DailyPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)

from catalake.platform.catalog import CatalogError
from catalake.platform.classify import classify_partition, conservation
from catalake.platform.config import Settings
from catalake.platform.deadletter import DEADLETTER_TABLE, REASONS, SCHEMA as DEADLETTER_SCHEMA
from catalake.platform.message_table import PARTITION_COLUMN, message_tables
from catalake.platform.report import markdown_table
from catalake.resources import CatalogSource, LandingZone, SparkSessionResource, Warehouse

from .checks import check_result, expectation_check_spec
from .messages import CATALOG_KEY, message_specs
from .metadata import column_schema

DEADLETTER_KEY = AssetKey("deadletter")


def daily_partitions(settings: Settings) -> DailyPartitionsDefinition:
    return DailyPartitionsDefinition(start_date=settings.start_date)


def deadletter_spec() -> AssetSpec:
    return AssetSpec(
        key=DEADLETTER_KEY,
        description="Landed records no message table takes, each with a machine-readable reason: "
        + "; ".join(f"`{k}`: {v}" for k, v in REASONS.items()),
        group_name="events",
        kinds={"spark", "delta"},
        deps=[CATALOG_KEY],
        metadata={"dagster/column_schema": column_schema(DEADLETTER_SCHEMA), "dagster/table_name": DEADLETTER_TABLE},
        tags={"layer": "messages"},
    )


def build_events_asset(settings: Settings):
    specs = message_specs(settings)
    by_key = {spec.key: spec for spec in specs}

    @multi_asset(
        name="classify_events",
        specs=[*specs, deadletter_spec()],
        partitions_def=daily_partitions(settings),
        can_subset=True,
        check_specs=[
            *[expectation_check_spec(spec.key, spec.metadata["dagster/table_name"]) for spec in specs],
            AssetCheckSpec(
                "conservation",
                asset=DEADLETTER_KEY,
                blocking=True,
                description="Every record read from the partition is in exactly one table: "
                "records read = rows in the per-message tables + dead-letter rows.",
            )
        ],
    )
    def classify_events(
        context: AssetExecutionContext,
        catalog_source: CatalogSource,
        landing: LandingZone,
        spark: SparkSessionResource,
        warehouse: Warehouse,
    ):
        """Reads one day of landed events, classifies every record against the catalog's message
        definitions, and overwrites that day in each per-message table and in `deadletter`; then
        validates each written partition against its definition's expectation suite. A table the
        day does not feed (and never fed) is left alone: no materialization for that partition."""
        day = dt.date.fromisoformat(context.partition_key)
        try:
            catalog = catalog_source.load()
        except CatalogError as exc:
            raise Failure(description=f"invalid message catalog: {len(exc.problems)} problem(s)") from None
        tables, _ = message_tables(catalog, catalog_source.roots())
        key_of = {t.name: AssetKey(["messages", t.message.group_id, t.message.message_id]) for t in tables}
        selected = context.selected_asset_keys
        tables = [t for t in tables if key_of[t.name] in by_key]  # as loaded with the code location
        only = {t.name for t in tables if key_of[t.name] in selected}
        if DEADLETTER_KEY in selected:
            only.add(DEADLETTER_TABLE)
        store = warehouse.store(spark.session)
        result = classify_partition(
            spark.session, store, catalog, tables, landing.root, day, only=only, progress=context.log.info
        )
        # Only the tables the run wrote (the day feeds them, or fed them before): with a large
        # catalog most tables see no event on a given day, and recording a materialization and
        # a check for each would cost more than the classification.
        written = [t for t in tables if t.name in result.written]
        for table in written:
            rows = result.tables.get(table.message.xid, 0)
            yield MaterializeResult(
                asset_key=key_of[table.name],
                metadata={
                    "dagster/partition_row_count": rows,
                    "path": MetadataValue.path(store.path(table.name)),
                    "delta_version": store.version(table.name),
                },
            )
        yield from validate_partitions(context, store, warehouse, written, key_of, result, day)
        if DEADLETTER_KEY in selected:
            rows = sum(result.deadletter.values())
            yield MaterializeResult(
                asset_key=DEADLETTER_KEY,
                metadata={
                    "dagster/partition_row_count": rows,
                    "records_read": result.records,
                    "by_reason": MetadataValue.json(result.deadletter),
                    "per_table": MetadataValue.md(markdown_table(
                        ["message", "rows"], [[x, n] for x, n in sorted(result.tables.items())]
                        + [[f"deadletter: {r}", n] for r, n in sorted(result.deadletter.items())],
                    )),
                    "result": MetadataValue.json(result.as_json()),
                    "path": MetadataValue.path(store.path(DEADLETTER_TABLE)),
                },
            )
            # read back from every table, subset run or not: the day's rows must add up
            ok, counts = conservation(store, tables, day, result.records)
            yield AssetCheckResult(
                asset_key=DEADLETTER_KEY,
                check_name="conservation",
                passed=ok,
                severity=AssetCheckSeverity.ERROR,
                metadata={"records_read": counts["records_read"], "rows_stored": counts["rows_stored"],
                          "per_table": MetadataValue.json(counts["per_table"])},
            )

    return classify_events


def validate_partitions(context, store, warehouse: Warehouse, tables, key_of, result, day: dt.date):
    """The `expectations` check of every written table: its partition against its suite, with one
    data docs rebuild at the end. An empty partition passes without starting GX."""
    from catalake.platform.expectations import build_suite
    from catalake.platform.validation import SuiteOutcome

    written = [t for t in tables if result.tables.get(t.message.xid, 0)]
    validator = warehouse.validator() if written else None
    outcomes = {}
    for table in written:
        partition = store.read(table.name).where(f"{PARTITION_COLUMN} = DATE'{day.isoformat()}'")
        outcomes[table.name] = validator.validate(partition, build_suite(table))
        context.log.info(f"{table.name}: {len(outcomes[table.name].errors)} ERROR, {len(outcomes[table.name].warnings)} WARN failures")
    if validator is not None:
        validator.build_docs()
    for table in tables:
        outcome = outcomes.get(table.name) or SuiteOutcome(table.message.table_name, 0, [])
        yield check_result(key_of[table.name], outcome)
