"""The daily classification: one Spark pass per partition writes every per-message table and the
dead-letter table (a multi-asset that can be subset), with the conservation check.

The engine is imported by the step that runs, not here: a code location's load imports none of it."""

import datetime as dt
import time
from pathlib import Path

from dagster import (AssetCheckEvaluation, AssetCheckResult, AssetCheckSeverity, AssetExecutionContext, AssetKey,
                     AssetMaterialization, AssetSpec, BackfillPolicy, DailyPartitionsDefinition, Failure,
                     AssetObservation, FreshnessPolicy, MetadataValue, multi_asset)

from catalake.display import markdown_table
from catalake.platform import layouts, uris
from catalake.platform.config import DAYS_PER_RUN
# "true": the run reads what landed since the day's last run (retention.py deletes such runs once superseded)
from catalake.retention import INCREMENTAL_TAG

from ..failures import failing_plainly, progress_log
from ..metadata import days_materialized
from ..names import DEFAULT, Names
from ..quality.checks import check_evaluation, expectation_check_spec, partitioned_check_spec, run_targets
from .freshness import freshness_check_spec, freshness_evaluation, freshness_metadata, table_freshness

DEADLETTER_KEY = DEFAULT.deadletter


def deadletter_at_load(spec: AssetSpec, catalog_error: str | None) -> AssetSpec:
    """The state's dead-letter spec as the location shows it: with its freshness, and what is
    wrong with the catalog."""
    return spec.replace_attributes(
        description=(f"**{catalog_error}.** Runs fail until it is fixed.\n\n" if catalog_error else "") + spec.description,
        metadata={**spec.metadata, **({"catalog_error": catalog_error} if catalog_error else {})},
        skippable=False,  # the steps downstream in the same run (dbt, data docs) wait for it
        # the nightly run (daily_events_schedule, 01:00 UTC) writes it: by 03:00 it is from that run
        freshness_policy=FreshnessPolicy.cron(deadline_cron="0 3 * * *", lower_bound_delta=dt.timedelta(hours=2)),
    )


def build_events_asset(partitions: DailyPartitionsDefinition, specs: list[AssetSpec], deadletter: AssetSpec,
                       names: Names = DEFAULT):
    """The classification multi-asset over the message assets `specs` and `deadletter` (from the
    location's state)."""
    deadletter_key = names.deadletter
    by_key = {spec.key: spec for spec in specs}

    @multi_asset(
        name=names.of("classify_events"),
        specs=[*specs, deadletter],
        required_resource_keys=names.resource_keys("catalog_source", "landing", "spark", "warehouse"),
        partitions_def=partitions,
        backfill_policy=BackfillPolicy.multi_run(DAYS_PER_RUN),
        can_subset=True,
        # every check targets one of these specs by construction; Dagster's own test of that compares
        # each check's key with a list of all the keys (quadratic: 1 s at 5,000 tables, on every load)
        allow_arbitrary_check_specs=True,
        check_specs=events_check_specs(specs, partitions, deadletter_key),
    )
    @failing_plainly
    def classify_events(context: AssetExecutionContext):
        """Reads one day of landed events (or each day of a backfill's range), classifies every
        record against the catalog's message definitions, and overwrites those days in each
        per-message table and in `deadletter`, in one Spark job whatever the number of tables or
        days. The same pass evaluates every definition's expectation suite on the records it
        matched: each table's `expectations` check shows, per expectation and per day, the records
        evaluated, the unexpected ones (dead-lettered for an ERROR expectation) and examples with
        their file and line; the GX data docs show the same results per day. A table a day does
        not feed (and never fed) is not written; it is recorded as processed with 0 rows
        (CATALAKE_RECORD_EMPTY).

        A backfill runs ranges of days (BackfillPolicy.multi_run, DAYS_PER_RUN): one Spark job reads
        all of a range's files and each table gets one Delta commit for the range, while every
        day keeps its own materialization, row counts, dead letters and `conservation` and
        `landing` check results (logged per partition). A range fails as a whole: a rerun of it,
        or of any of its days, replaces those days.

        The daily job selects `deadletter` only: the step then writes the whole day and reports
        the materialization and check of every message table it wrote (selecting all of them
        would make Dagster plan two events per table before the run starts: 30 s for 1,000
        tables). Selecting message assets (a subset, from the UI) re-classifies the days for
        those tables only."""
        from catalake.leases import wait_for_days

        days = [dt.date.fromisoformat(key) for key in context.partition_keys]
        wait_for_days(context.instance, context.partition_keys, by=f"run {context.run_id}", run=context.run,
                      say=context.log.info)
        resources = names.resources(context)
        catalog_source, warehouse = resources.catalog_source, resources.warehouse
        tables = catalog_source.tables(catalog_source.load())
        key_of = {t.name: names.message(t.message) for t in tables}
        tables = [t for t in tables if key_of[t.name] in by_key]  # as loaded with the code location
        only = selected_tables(context.selected_asset_keys, tables, key_of, deadletter_key)
        # Spark started on first use: not for a small increment (SparkSessionResource.local_bytes)
        store = warehouse.store(resources.spark)
        results = classify(context, resources, store, tables, days, only)
        report_days(context, warehouse, store, tables, key_of, only is None, results)
        if deadletter_key not in context.selected_asset_keys:
            return  # a subset run of message tables: the days' dead letters are not its output
        yield from deadletter_days(context, resources.landing, warehouse, store, tables, days, only, results,
                                   deadletter_key)

    return classify_events


def events_check_specs(specs: list[AssetSpec], partitions: DailyPartitionsDefinition,
                       deadletter_key: AssetKey) -> list:
    """The `expectations` check of every message asset, and `deadletter`'s `conservation`
    (blocking), `landing` and `freshness` checks."""
    return [
        *[expectation_check_spec(spec.key, spec.metadata["dagster/table_name"], partitions) for spec in specs],
        freshness_check_spec(deadletter_key, partitions),
        partitioned_check_spec(
            "conservation",
            asset=deadletter_key,
            blocking=True,
            partitions_def=partitions,
            description="Every record read from the partition is in exactly one table: "
            "records read = rows in the per-message tables + dead-letter rows.",
        ),
        partitioned_check_spec(
            "landing",
            asset=deadletter_key,
            blocking=False,
            partitions_def=partitions,
            description="The day's folder exists in the landing zone (WARN when it is missing: the day "
            "was processed, but nothing was there to read; an existing empty folder passes).",
        ),
    ]


def classify(context: AssetExecutionContext, resources, store, tables, days: list[dt.date],
             only: set[str] | None) -> dict:
    """Each day's result: what landed since the day's last run, for an incremental run of whole
    days (INCREMENTAL_TAG); else the whole days, in one job."""
    from catalake.platform.maintenance.checkpoints import checkpoint_due
    from catalake.platform.runs.day import classify_days
    from catalake.platform.runs.cadence import EVERY_INCREMENT
    from catalake.platform.runs.increment import classify_increment

    landing, spark, warehouse = resources.landing, resources.spark, resources.warehouse
    if only is None and context.run.tags.get(INCREMENTAL_TAG) == "true":  # what landed since the last run
        # the landing sensor's runs follow each table's cadence; one asked for by hand commits all it fed
        cadence = landing.cadence(warehouse.target_file_bytes) if context.run.tags.get(CADENCE_TAG) == "true" \
            else EVERY_INCREMENT
        return {day: classify_increment(lambda: store.spark, store, tables, landing.root, day,
                                        layout=landing.layout, local_bytes=spark.local_bytes(incremental=True),
                                        compiled=spark.compiled_path, cadence=cadence, progress=progress_log(context))
                for day in days}
    results = classify_days(
        lambda: store.spark, store, tables, landing.root, days, only=only, layout=landing.layout,
        local_bytes=spark.local_bytes(incremental=False), target_file_bytes=warehouse.target_file_bytes,
        compiled=spark.compiled_path, progress=progress_log(context),
    )
    checkpoint_due(store, days, progress=context.log.info)  # a year of daily runs leaves bounded logs
    return results


def report_days(context: AssetExecutionContext, warehouse, store, tables, key_of, every_table: bool,
                results: dict) -> None:
    """Each day's materialization and `expectations` check of every table reported, stored in
    batches; the seconds spent in each day's result (`quality_docs`, `events`). An increment
    reports what changed instead (report_increment)."""
    from catalake.eventlog import event_batch

    clock = time.perf_counter()
    increments = {day: result for day, result in results.items() if result.kind == "incremental"}
    if increments:
        with event_batch(context.instance):
            for day, result in increments.items():
                report_increment(context, tables, key_of, day, result)
        for result in increments.values():
            result.seconds.update(events=round(time.perf_counter() - clock, 3))
        results = {day: result for day, result in results.items() if day not in increments}
        if not results:
            return
        clock = time.perf_counter()
    with event_batch(context.instance):  # stored together: 2 ms a table (eventlog.py)
        reported = {day: report_tables(context, warehouse.record_empty, store, tables, key_of, every_table, day, result)
                    for day, result in results.items()}
    targets = run_targets(context.instance, context.run_id)
    writing = 0.0
    with event_batch(context.instance):
        for day, result in results.items():
            writing += quality_checks(context, warehouse.local, reported[day], key_of, day, result, targets)
    seconds = round(time.perf_counter() - clock - writing, 3)
    for result in results.values():
        result.seconds.update(quality_docs=round(writing, 3), events=seconds)


def deadletter_days(context: AssetExecutionContext, landing, warehouse, store, tables, days: list[dt.date],
                    only: set[str] | None, results: dict, deadletter_key: AssetKey):
    """`deadletter`'s output for the days, then each day's `conservation` and `landing` checks;
    a Failure when a day's rows do not add up to the records read (the blocking check's gate)."""
    from catalake.eventlog import event_batch

    proofs, materializations = proven_days(context, warehouse, store, tables, only, results, deadletter_key)
    # the output (the steps downstream in the same run wait for it), then the checks: a day's
    # as the output's check results, a range's days each tied to that day's materialization; an
    # increment's logged as a range's are (a check result yielded is stored twice: as the step's
    # output and as the evaluation, 3 KB each, 2,880 increments a day)
    yield from days_materialized(context, deadletter_key, {d.isoformat(): m.metadata for d, m in materializations.items()},
                                 range_metadata(results))
    if len(days) == 1 and results[days[0]].kind != "incremental":
        (day, (ok, counts)), = proofs.items()
        for check in deadletter_checks(results[day], ok, counts, landing, day, deadletter_key):
            yield AssetCheckResult(asset_key=check.asset_key, check_name=check.check_name, passed=check.passed,
                                   severity=check.severity, description=check.description, metadata=check.metadata)
    else:
        targets = run_targets(context.instance, context.run_id)
        with event_batch(context.instance):
            for day, (ok, counts) in proofs.items():
                for check in deadletter_checks(results[day], ok, counts, landing, day, deadletter_key,
                                               targets.get((deadletter_key, day.isoformat()))):
                    context.log_event(check)
    lost = [f"{day}: {counts['records_read']} records read, {counts['rows_stored']} rows stored"
            for day, (ok, counts) in proofs.items() if not ok]
    if lost:  # the blocking check's gate: the steps downstream in the same run do not start
        raise Failure(description=f"conservation failed for {len(lost)} day(s): {'; '.join(lost)}")


def proven_days(context: AssetExecutionContext, warehouse, store, tables, only: set[str] | None, results: dict,
                deadletter_key: AssetKey) -> tuple[dict, dict]:
    """Each day's conservation, read back from every table (subset run or not: each day's rows
    must add up), and its `deadletter` materialization."""
    from catalake.platform.runs.day import conservation

    proofs, materializations = {}, {}
    for day, result in results.items():
        clock = time.perf_counter()
        held = set(result.written) if result.kind == "full" and only is None else result.held
        proofs[day] = conservation(store, tables, day, result.records_of_day, result.stored, held, result.staged)
        result.seconds["conservation"] = round(time.perf_counter() - clock, 3)
        context.log.info(f"{day}: seconds per phase: {result.seconds}")
        materializations[day] = deadletter_materialization(result, store, tables, warehouse.compact_files,
                                                           deadletter_key)
    return proofs, materializations


# "true": an incremental run commits each table when it is due (runs/cadence.py), else every table it feeds
CADENCE_TAG = "catalake/cadence"


def selected_tables(selected, tables, key_of, deadletter_key: AssetKey) -> set[str] | None:
    """The tables a run writes: None for the whole day (`deadletter` selected alone, or every
    asset), else the selected message tables (and `deadletter` when it is selected too)."""
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

    only = {t.name for t in tables if key_of[t.name] in selected}
    if not only or (len(only) == len(tables) and deadletter_key in selected):
        return None
    return only | ({DEADLETTER_TABLE} if deadletter_key in selected else set())


def deadletter_materialization(result, store, tables, compact_files: int, key: AssetKey) -> AssetMaterialization:
    """The day's `deadletter` partition, with what the run read, where every record went, the
    engine that ran it, and the tables whose partition now holds more than `compact_files` files
    (`compaction_due`, the first SHOWN_TABLES of them: the compaction sensor requests
    `maintenance_job` for the day, which finds them all). An increment's is a summary of a few KB
    whatever the tables it fed (2,880 a day): the tables it gave the most rows and its dead
    letters once, in `result`, and its lags in brief (its `freshness` check lists the most lagging tables)."""
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

    incremental = result.kind == "incremental"
    sql_of = {t.message.xid: t.message.table_name for t in tables}
    due = sorted(name for name, files in result.partition_files.items() if files > compact_files)
    run = result.as_json()
    if incremental:  # `catalake run` prints these: all tables counted, those given the most rows listed
        fed = sorted(result.tables.items(), key=lambda kv: -kv[1])[:SHOWN_TABLES]
        run.update(tables=dict(fed), tables_fed=sum(1 for n in result.tables.values() if n),
                   rows_to_tables=sum(result.tables.values()))
    else:
        fed = sorted(result.tables.items(), key=lambda kv: sql_of[kv[0]])
    listings = {} if incremental else {  # an increment's are in `result` (tables, deadletter)
        "by_reason": MetadataValue.json(result.deadletter),
        "per_table": MetadataValue.md(markdown_table(
            ["table", "message", "rows"],
            [[sql_of[x], x.rsplit("/", 1)[-1], n] for x, n in fed]
            + [[DEADLETTER_TABLE, r, n] for r, n in sorted(result.deadletter.items())])),
    }
    skipped = [f"- `{p}` (a symbolic link)" for p in result.skipped] + [f"- `{p}` (not a landed file)" for p in result.ignored]
    location = table_location(store, DEADLETTER_TABLE)
    if incremental:
        del location["path"]  # the same as dagster/uri
    return AssetMaterialization(
        asset_key=key,
        partition=result.partition,
        metadata={
            "dagster/partition_row_count": sum(result.deadletter.values()),
            "records_read": result.records,
            "run_kind": result.kind,
            **result.engine.metadata(),
            "compaction_due": MetadataValue.json(due[:SHOWN_TABLES]),
            **({"tables_due_compaction": len(due)} if due else {}),
            **({"fallback": result.fallback} if result.fallback else {}),
            **({"records_read_day": result.records_of_day, "files_read": result.read.get("files", 0),
                "bytes_read": result.read.get("bytes", 0)} if incremental or result.fallback else {}),
            **({"rows_added": sum(result.deadletter.values()), "tables_fed": run["tables_fed"],
                "rows_added_to_tables": run["rows_to_tables"]} if incremental else {}),
            **freshness_metadata(result, listed=not incremental),  # the `freshness` check lists them
            **listings,
            "result": MetadataValue.json(run),
            "seconds": MetadataValue.json(result.seconds),
            "landing": result.landing,
            "landing_files": len(result.files),
            **({"skipped_landing_paths": MetadataValue.md("\n".join(skipped) or "none")}
               if skipped or not incremental else {}),
            **location,
        },
    )


def range_metadata(results: dict) -> dict:
    """What a run of a range of days read, in all (each day's materialization says its own)."""
    days = sorted(results)
    return {"first_day": days[0].isoformat(), "last_day": days[-1].isoformat(),
            "records_read": sum(r.records for r in results.values()),
            "dead_lettered": sum(sum(r.deadletter.values()) for r in results.values()),
            **results[days[0]].engine.metadata()}


def deadletter_checks(result, ok: bool, counts: dict, landing, day: dt.date, key: AssetKey, target=None):
    """`conservation` (every record read is in exactly one table), `landing` (the day's folder
    was there) and `freshness` (every table committed within its target), as results of the
    day's partition, tied to the day's materialization (`target`)."""
    from catalake.platform.warehouse.queries import analyst_name

    per_table = counts["per_table"].items()
    if result.kind == "incremental":  # bounded as the increment's other events (report_increment)
        per_table = sorted(per_table, key=lambda kv: -kv[1])[:SHOWN_TABLES]
    yield AssetCheckEvaluation(
        asset_key=key,
        check_name="conservation",
        passed=ok,
        partition=day.isoformat(),
        target_materialization_data=target,
        blocking=True,
        severity=AssetCheckSeverity.ERROR,
        metadata={"records_read": counts["records_read"], "rows_stored": counts["rows_stored"],
                  **({"rows_staged": counts["rows_staged"]} if "rows_staged" in counts else {}),
                  "tables": len(counts["per_table"]),
                  "per_table": MetadataValue.json({analyst_name(n): rows for n, rows in per_table})},
    )
    yield AssetCheckEvaluation(
        asset_key=key,
        check_name="landing",
        passed=result.landing != "missing",
        partition=day.isoformat(),
        target_materialization_data=target,
        severity=AssetCheckSeverity.WARN,
        description=(f"no folder {layouts.parse(landing.layout).describe(day)} in the landing zone "
                     f"{landing.root}: nothing was read" if result.landing == "missing" else None),
        metadata={"landing": result.landing, "root": landing.root, "layout": landing.layout, "files": len(result.files)},
    )
    yield freshness_evaluation(result, key, day, target)


def partition_rows(store, name: str, day: dt.date, result) -> int:
    """The day's rows in a table after the run: from the run's commit, else from the log."""
    from catalake.platform.warehouse.files import PARTITION_COLUMN

    rows = result.stored.get(name)
    return rows if rows is not None else store.partition_rows(name, PARTITION_COLUMN, day)


def report_tables(context, record_empty: bool, store, tables, key_of, every_table: bool, day: dt.date, result) -> list:
    """A materialization of every table the run wrote in `day` (the day feeds it, or fed it
    before), and with `record_empty` of every table a whole day's full run did not feed (0 rows).
    Logged as events rather than yielded as outputs: Dagster checks every yielded output against
    all the others (quadratic in the number of tables; 80 s for 1,000 of them,
    benchmarks/RESULTS.md). Returns the tables reported."""
    partition = day.isoformat()
    done = set(result.written)
    written = [t for t in tables if t.name in done]
    reported = []
    for table in written:
        rows = (partition_rows(store, table.name, day, result) if result.kind == "incremental"
                else result.tables.get(table.message.xid, 0))
        reported.append(table)
        context.log_event(AssetMaterialization(
            asset_key=key_of[table.name],
            partition=partition,
            metadata={
                "dagster/partition_row_count": rows,
                **table_location(store, table.name),
                **({"delta_version": result.versions[table.name]} if table.name in result.versions else {}),
                "run_kind": result.kind,
                **({"partition_files": result.partition_files[table.name]} if table.name in result.partition_files else {}),
                **({"rows_added": result.rows_added.get(table.name, 0)} if result.kind == "incremental" else {}),
                **table_freshness(result, table.name),
            },
        ))
    if record_empty and every_table and result.kind == "full":
        # the day was processed for every table: one that got no event shows 0 rows rather
        # than a missing partition, and its check passes with nothing to check
        for table in tables:
            if table.name not in done:
                reported.append(table)
                context.log_event(AssetMaterialization(
                    asset_key=key_of[table.name], partition=partition,
                    metadata={"dagster/partition_row_count": 0, **table_location(store, table.name)},
                ))
    return reported


SHOWN_TABLES = 20  # the most an increment reports a table by an event of its own (report_increment)


def report_increment(context, tables, key_of, day: dt.date, result) -> None:
    """What an increment records beside `deadletter`'s materialization and checks: no
    materialization and no check per table it committed (two events a table, thousands an
    increment at 5,000 tables: the day's full run materializes each table's day and its checks),
    but, each bounded by SHOWN_TABLES,
    * an observation of each table past its freshness target, the stalest first, with its lag
      (the `freshness` check on `deadletter` names them all);
    * the `expectations` check of each table whose expectations failed among the tables it
      committed, the most unexpected records first.
    The day's GX results are written by the day's full run, over the whole day (an increment's
    are the day's so far: results.py)."""
    from catalake.platform.quality.validator import pass_outcome
    from catalake.platform.warehouse.queries import analyst_name

    partition = day.isoformat()
    stale = sorted(((name, f) for name, f in result.freshness.items() if not f.fresh and name in key_of),
                   key=lambda item: -max(item[1].lag, item[1].committed_lag or 0.0))
    for name, fresh in stale[:SHOWN_TABLES]:
        context.log_event(AssetObservation(asset_key=key_of[name], partition=partition, metadata={
            "freshness": "stale", "dagster/table_name": analyst_name(name), "run_kind": result.kind,
            **table_freshness(result, name), "staged_rows": fresh.staged_rows}))
    committed = {name for name, f in result.freshness.items() if f.due} or set(result.written)
    failing = []
    for table in tables:
        quality = result.quality.get(table.name)
        if table.name not in committed or quality is None:
            continue
        if not quality.rejected and not quality.types.unexpected and all(r.success for r in quality.results):
            continue  # passed: nothing to build (thousands of tables an increment)
        outcome = pass_outcome(table.message.table_name, quality.results, quality.types, quality.rejected)
        if outcome.errors or outcome.warnings:
            failing.append((sum(o.unexpected_count or 0 for o in outcome.outcomes), table, outcome))
    for _, table, outcome in sorted(failing, key=lambda item: -item[0])[:SHOWN_TABLES]:
        context.log_event(check_evaluation(key_of[table.name], outcome, partition, None, run_kind=result.kind))


def table_location(store, name: str) -> dict:
    """Where a table is, as Dagster's metadata names it: its SQL name and its URI."""
    from catalake.platform.warehouse.queries import analyst_name

    path = store.path(name)
    return {"dagster/table_name": analyst_name(name), "dagster/uri": uris.as_uri(path), "path": MetadataValue.path(path)}


def quality_checks(context, warehouse: Path, reported: list, key_of, day: dt.date, result, targets: dict) -> float:
    """The `expectations` check of every reported table, from the classification pass's results
    (no data read again), and the same results stored in the GX context as validation results
    of the partition (the `data_docs` asset renders them; the check links that day's page).
    Returns the seconds spent writing those documents."""
    from catalake.platform.quality import docsindex
    from catalake.platform.quality.datadocs import day_page, store_validation_result, validation_result_document
    from catalake.platform.quality.validator import SuiteOutcome, pass_outcome

    writing, documents = 0.0, []
    for table in reported:
        quality = result.quality.get(table.name)
        if quality is None:  # nothing of this message this day
            outcome = SuiteOutcome(table.message.table_name, 0, [], dropped=0)
        else:
            clock = time.perf_counter()
            document = validation_result_document(table.name, table.message.table_name, result.partition,
                                                  context.run_id, quality.results, quality.types, quality.rejected)
            stored = store_validation_result(warehouse, document)
            documents.append((stored, document))
            writing += time.perf_counter() - clock
            outcome = pass_outcome(table.message.table_name, quality.results, quality.types, quality.rejected,
                                   day_page(warehouse, stored))
        key = key_of[table.name]
        context.log_event(check_evaluation(key, outcome, day.isoformat(), targets.get((key, day.isoformat()))))
    if documents:
        clock = time.perf_counter()
        docsindex.record(warehouse, result.partition, documents)  # the day's rows of the data docs' index
        writing += time.perf_counter() - clock
    return round(writing, 3)
