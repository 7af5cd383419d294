"""Expectation suites as Dagster asset checks: the adapter from GX 1.x validation results to
`AssetCheckResult` (dagster-ge only supports GX before 1.0)."""

import datetime as dt
import warnings

from dagster import (AssetCheckEvaluation, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey,
                     MetadataValue, PreviewWarning)

from catalake.display import markdown_table

CHECK_NAME = "expectations"
SHOWN = 50  # expectations listed in the markdown table; all of them are in the JSON


def partitioned_check_spec(name: str, **kwargs) -> AssetCheckSpec:
    """A check with one result per partition (a preview feature of Dagster 1.13: without it a
    partition run's check result is recorded for no partition)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(name, **kwargs)


def expectation_check_spec(key: AssetKey, suite: str, partitions_def=None) -> AssetCheckSpec:
    return partitioned_check_spec(
        CHECK_NAME,
        asset=key,
        blocking=True,
        partitions_def=partitions_def,
        description=(
            f"The day's stored rows meet the Great Expectations suite `{suite}` generated from the catalog.\n\n"
            "- **Passed**: every stored row meets every expectation and no record was dead-lettered for breaking one "
            "(a day with no record of this message passes with 0 rows).\n"
            "- **Failed, WARN** (blocks nothing): records broke an ERROR expectation (what the catalog requires) and "
            "were dead-lettered instead of stored (`records_dead_lettered`), or stored rows break a WARN expectation.\n"
            "- **Failed, ERROR** (blocks the assets downstream in the same run): stored rows break an ERROR "
            "expectation, found by GX on the stored partition (`validate_job`, `catalake validate`).\n\n"
            "`records_matched` counts the day's records of this message; `rows_stored` the rows the table holds."),
    )


def _example(example) -> str:
    """An unexpected value, with where it was landed when the classification pass found it."""
    if isinstance(example, dict):
        return f"{example['value']} ({example['source_file'].rsplit('/', 1)[-1]}:{example['source_line']})"
    return str(example)


def check_evaluation(key: AssetKey, outcome, partition: str | None, target=None, **metadata) -> AssetCheckEvaluation:
    """The check result as an event of the partition (the run that computes it need not select
    the check, see events/assets.py), tied to the materialization it checks (`target`)."""
    result = check_result(key, outcome)
    return AssetCheckEvaluation(asset_key=key, check_name=CHECK_NAME, passed=result.passed,
                                metadata={**result.metadata, **metadata},
                                severity=result.severity, description=result.description, partition=partition,
                                target_materialization_data=target, blocking=True)


def check_targets(instance, run_id: str | None, partition: str, keys: list[AssetKey]) -> dict:
    """The materialization of each key's partition a check evaluation is tied to (what Dagster
    looks up itself for a yielded check result): the one this run just stored, or with `run_id`
    None the latest of any run (a validation of stored rows). One query for all keys; a key
    materialized since for another partition is looked up on its own."""
    # not exported by Dagster (1.13): the one way to tie a logged check evaluation to its materialization
    from dagster import AssetRecordsFilter
    from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData as Target

    targets = {}
    for record in instance.get_asset_records(keys):
        last = record.asset_entry.last_materialization_record
        if last is not None and run_id in (None, last.run_id) and last.partition_key == partition:
            targets[record.asset_entry.asset_key] = Target(storage_id=last.storage_id, run_id=last.run_id,
                                                           timestamp=last.timestamp)
    for key in keys:
        if key not in targets:
            found = instance.fetch_materializations(AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1)
            if found.records and run_id in (None, found.records[0].run_id):
                last = found.records[0]
                targets[key] = Target(storage_id=last.storage_id, run_id=last.run_id, timestamp=last.timestamp)
    return targets


def run_targets(instance, run_id: str) -> dict:
    """The materializations run `run_id` stored, by (asset key, partition): what each check
    evaluation the run logs is tied to (one query, whatever the tables and days of the run).
    Their storage ids are the asset index's, which Dagster compares with an asset's latest
    materialization to call a check current: on SQLite a run's own database numbers its events
    apart (`get_records_for_run`), and a check tied to those ids was never current there."""
    from dagster import AssetKey, DagsterEventType
    from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData as Target

    storage = instance.event_log_storage
    if not hasattr(storage, "index_connection"):  # not a SQL storage: its one numbering
        targets = {}
        for record in instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION).records:
            event = record.event_log_entry
            materialization = event.dagster_event.step_materialization_data.materialization
            targets[(materialization.asset_key, materialization.partition)] = Target(
                storage_id=record.storage_id, run_id=run_id, timestamp=event.timestamp)
        return targets
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as events
    from sqlalchemy import select

    query = select(events.c.id, events.c.asset_key, events.c.partition, events.c.timestamp).where(
        (events.c.run_id == run_id) & (events.c.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION.value))
    with storage.index_connection() as conn:
        rows = conn.execute(query).fetchall()
    # the column holds the time as naive UTC
    return {(AssetKey.from_db_string(key), partition): Target(
        storage_id=id_, run_id=run_id, timestamp=at.replace(tzinfo=dt.timezone.utc).timestamp())
        for id_, key, partition, at in rows}


def check_result(key: AssetKey, outcome) -> AssetCheckResult:
    """One check result per suite, per-expectation results in the metadata (the expectation_check_spec
    description says what passed, WARN and ERROR mean)."""
    rows = [
        [o.id or "", o.type.removeprefix("expect_"), o.severity, "pass" if o.success else "FAIL",
         "" if o.evaluated is None else o.evaluated,
         "" if o.unexpected_count is None else o.unexpected_count,
         "" if o.unexpected_percent is None else f"{o.unexpected_percent:.2f}",
         ", ".join(map(_example, o.examples)) or (o.error or "")]
        for o in sorted(outcome.outcomes, key=lambda o: o.success)[:SHOWN]
    ]
    metadata = {}
    if outcome.dropped is not None:  # from the classification pass
        metadata["records_matched"] = outcome.rows
        metadata["records_dead_lettered"] = outcome.dropped
    metadata |= {
        "rows_stored": outcome.stored,
        "expectations": len(outcome.outcomes),
        "failed_error": len(outcome.errors),
        "failed_warn": len(outcome.warnings),
        "results": MetadataValue.md(markdown_table(
            ["expectation", "type", "severity", "result", "evaluated", "unexpected", "unexpected %", "examples"], rows)),
        "details": MetadataValue.json([o.as_json() for o in outcome.outcomes]),
    }
    if outcome.docs is not None:
        metadata["data_docs"] = MetadataValue.path(str(outcome.docs))
    stored_rows_fail = bool(outcome.errors) and outcome.dropped is None
    return AssetCheckResult(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=outcome.success,
        severity=AssetCheckSeverity.ERROR if stored_rows_fail or outcome.success else AssetCheckSeverity.WARN,
        metadata=metadata,
        description=_summary(outcome),
    )


def _summary(outcome) -> str:
    """One line of what the evaluation found, shown beside the result in the UI."""
    if outcome.dropped is None:
        found = (f"{len(outcome.errors)} ERROR and {len(outcome.warnings)} WARN expectation(s) fail on the "
                 f"{outcome.stored} stored row(s)") if not outcome.success else f"the {outcome.stored} stored row(s) meet the suite"
        return f"GX on the stored partition: {found}"
    if not outcome.rows:
        return "no record of this message this day: nothing to check"
    parts = [f"{outcome.rows} record(s) matched, {outcome.stored} stored"]
    if outcome.dropped:
        parts.append(f"{outcome.dropped} broke an ERROR expectation and {'was' if outcome.dropped == 1 else 'were'} dead-lettered")
    if outcome.warnings:
        parts.append(f"{len(outcome.warnings)} WARN expectation(s) fail on stored rows")
    return "; ".join(parts) + ("; the stored rows meet the suite" if not outcome.warnings else "")
