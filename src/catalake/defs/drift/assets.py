"""The catalog evolution loop in Dagster: a day's unmatched records as proposed definitions
(`catalog_drift`), and a job that re-matches a day's dead letters after the catalog changed."""

import datetime as dt
import json

from dagster import (AssetExecutionContext, AssetMaterialization, AssetObservation, BackfillPolicy,
                     DailyPartitionsDefinition, MetadataValue, OpExecutionContext, asset, job, op)

from catalake.platform.config import DAYS_PER_RUN

from ..events.assets import table_location
from ..failures import failing_plainly, progress_log
from ..metadata import days_materialized
from ..names import DEFAULT, Names

DRIFT_DIR = "drift"


def build_drift_asset(partitions_def: DailyPartitionsDefinition, names: Names = DEFAULT):
    @asset(key=names.key("catalog_drift"), partitions_def=partitions_def, deps=[names.deadletter],
           group_name=names.group_of("catalog"), kinds={"python"}, tags={"layer": "catalog"},
           required_resource_keys=names.resource_keys("warehouse"), backfill_policy=BackfillPolicy.multi_run(DAYS_PER_RUN))
    @failing_plainly
    def catalog_drift(context: AssetExecutionContext):
        """What producers sent that day that no definition describes: the `no_match` dead letters
        grouped by CloudEvents type and protocol, with source/subject/topic generalized into URI
        templates, counts, first and last seen, examples, and a JSON Schema inferred from the
        payloads (genson). Written as proposed definitions, an xRegistry catalog document under
        `drift/<day>.xreg.json` in the warehouse's local folder: add it to the catalog, then run `replay_job` (or
        `catalake replay`) for the day. `ambiguous` records are listed, not proposed. A backfill's
        run writes each day of its range."""
        from catalake.platform.runs.drift import candidates, deadletter_rows, markdown, proposals_document

        warehouse = names.resources(context).warehouse
        by_day = {}
        for key in context.partition_keys:
            day = dt.date.fromisoformat(key)
            found = candidates(deadletter_rows(warehouse.path, day))
            out = warehouse.local / DRIFT_DIR / f"{key}.xreg.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            document = proposals_document(found, day)
            out.write_text(json.dumps(document, indent=2) + "\n")
            proposed = document["messagegroups"]["catalake.drift"]["messages"]
            by_day[key] = {
                "proposed_definitions": len(proposed),
                "unmatched_records": sum(c.count for c in found if c.reason == "no_match"),
                "ambiguous_records": sum(c.count for c in found if c.reason == "ambiguous"),
                "proposals": MetadataValue.path(str(out)),
                "preview": MetadataValue.md(markdown(found, document)),
            }
        yield from days_materialized(context, context.asset_key, by_day, {
            "proposed_definitions": sum(m["proposed_definitions"] for m in by_day.values()),
            "proposals": MetadataValue.path(str(warehouse.local / DRIFT_DIR))})

    return catalog_drift


def build_replay_job(partitions_def: DailyPartitionsDefinition, names: Names = DEFAULT):
    @op(name=names.of("replay_dead_letters"),
        required_resource_keys=names.resource_keys("catalog_source", "spark", "warehouse"))
    @failing_plainly
    def replay_dead_letters(context: OpExecutionContext) -> None:
        """Re-matches the day's dead letters against the current catalog and moves every record that
        now matches into its table (the day stays conserved; a second replay moves nothing). Each
        table it changed is materialized for the day (`rows_moved_in`, and `deadletter`'s
        `rows_moved_out`); the replay itself is an observation of `deadletter`."""
        from catalake.platform.runs.replay import replay_partition
        from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

        day = dt.date.fromisoformat(context.partition_key)
        resources = names.resources(context)
        spark, warehouse = resources.spark, resources.warehouse
        tables = resources.catalog_source.tables()
        store = warehouse.store(spark.session)
        result = replay_partition(spark.session, store, tables, day, progress=progress_log(context))
        context.log_event(AssetObservation(asset_key=names.deadletter, partition=context.partition_key, metadata={
            "replayed_dead_letters": result.deadletters, "moved_rows": result.moved_rows,
            "moved": MetadataValue.json(result.moved), "conserved": result.conserved}))
        into = result.rows_into
        if not into:
            return
        stored = result.counts.get("per_table", {})
        by_name = {t.name: t for t in tables}
        for name, rows in sorted(into.items()):
            context.log_event(AssetMaterialization(
                asset_key=names.message(by_name[name].message), partition=context.partition_key,
                metadata={"run_kind": "replay", "rows_moved_in": rows, **table_location(store, name),
                          **({"dagster/partition_row_count": stored[name]} if name in stored else {})}))
        context.log_event(AssetMaterialization(
            asset_key=names.deadletter, partition=context.partition_key,
            metadata={"run_kind": "replay", "rows_moved_out": sum(into.values()),
                      "moved": MetadataValue.json(result.moved), **table_location(store, DEADLETTER_TABLE),
                      **({"dagster/partition_row_count": stored[DEADLETTER_TABLE]} if DEADLETTER_TABLE in stored else {})}))

    @job(name=names.of("replay_job"), partitions_def=partitions_def,
         description="Re-match one day's dead letters against the current catalog (after adding definitions, e.g. "
         "catalog_drift's proposals) and move what now matches into its tables.")
    def replay_job():
        replay_dead_letters()

    return replay_job
