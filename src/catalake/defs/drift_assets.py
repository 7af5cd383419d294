"""The catalog evolution loop in Dagster: a day's unmatched records as proposed definitions
(`catalog_drift`), and a job that re-matches a day's dead letters after the catalog changed."""

import datetime as dt
import json

from dagster import (
    AssetExecutionContext,
    AssetObservation,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    asset,
    job,
    op,
)

from catalake.platform.runs.drift import candidates, deadletter_rows, markdown, proposals_document
from catalake.platform.runs.replay import replay_partition
from catalake.resources import CatalogSource, SparkSessionResource, Warehouse

from .event_assets import DEADLETTER_KEY

DRIFT_DIR = "drift"


def build_drift_asset(partitions_def: DailyPartitionsDefinition):
    @asset(name="catalog_drift", partitions_def=partitions_def, deps=[DEADLETTER_KEY], group_name="catalog",
           kinds={"python"}, tags={"layer": "catalog"})
    def catalog_drift(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
        """What producers sent that day that no definition describes: the `no_match` dead letters
        grouped by CloudEvents type and protocol, with source/subject/topic generalized into URI
        templates, counts, first and last seen, examples, and a JSON Schema inferred from the
        payloads (genson). Written as proposed definitions, an xRegistry catalog document under
        `drift/<day>.xreg.json` in the warehouse's local folder: add it to the catalog, then run `replay_job` (or
        `catalake replay`) for the day. `ambiguous` records are listed, not proposed."""
        day = dt.date.fromisoformat(context.partition_key)
        found = candidates(deadletter_rows(warehouse.path, day))
        out = warehouse.local / DRIFT_DIR / f"{day.isoformat()}.xreg.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        document = proposals_document(found, day)
        out.write_text(json.dumps(document, indent=2) + "\n")
        proposed = document["messagegroups"]["catalake.drift"]["messages"]
        return MaterializeResult(metadata={
            "proposed_definitions": len(proposed),
            "unmatched_records": sum(c.count for c in found if c.reason == "no_match"),
            "ambiguous_records": sum(c.count for c in found if c.reason == "ambiguous"),
            "proposals": MetadataValue.path(str(out)),
            "preview": MetadataValue.md(markdown(found, document)),
        })

    return catalog_drift


@op
def replay_dead_letters(context: OpExecutionContext, catalog_source: CatalogSource, spark: SparkSessionResource,
                        warehouse: Warehouse) -> None:
    """Re-matches the day's dead letters against the current catalog and moves every record that
    now matches into its table (the day stays conserved; a second replay moves nothing)."""
    day = dt.date.fromisoformat(context.partition_key)
    tables = catalog_source.tables()
    result = replay_partition(spark.session, warehouse.store(spark.session), tables, day, progress=context.log.info)
    context.log_event(AssetObservation(asset_key=DEADLETTER_KEY, partition=context.partition_key, metadata={
        "replayed_dead_letters": result.deadletters, "moved_rows": result.moved_rows,
        "moved": MetadataValue.json(result.moved), "conserved": result.conserved}))


def build_replay_job(partitions_def: DailyPartitionsDefinition):
    @job(partitions_def=partitions_def, description="Re-match one day's dead letters against the current catalog "
         "(after adding definitions, e.g. catalog_drift's proposals) and move what now matches into its tables.")
    def replay_job():
        replay_dead_letters()

    return replay_job
