"""`catalake run`: per range of days (at most DAYS_PER_RUN, as a backfill's runs) a Dagster run of
the classification and one of the dbt build, launched in this process after the catalog's run
when the catalog changed; an increment is a run of one day."""

from __future__ import annotations

import sys
from pathlib import Path

from catalake.platform import layouts, uris
from catalake.platform.catalog import CatalogError
from catalake.platform.config import Settings

from . import usage
from .context import Context
from .launching import check_catalog, command_tags, failure


def _start_spark(context: Context) -> None:
    """Boot the Spark session and its Python workers in a thread while the code location loads:
    every run needs them (a cold first job costs about 4 s), and the Dagster resource's own
    request then gets this same session."""
    import threading

    from catalake.platform.runs.tasks import warm_up

    def start() -> None:
        warm_up(context.spark)

    threading.Thread(target=start, daemon=True, name="spark-start").start()


def _needs_spark(settings: Settings, days, incremental: bool) -> bool:
    """Whether some day's full run is a Spark job (Settings.local_bytes). An increment's size
    is known only from the day's ledger: its run starts Spark when it needs it."""
    from catalake.platform.landing.listing import list_day

    if incremental:
        return False
    limit = settings.local_bytes(incremental=False)
    return any(sum(f.size for f in list_day(settings.landing, day, settings.layout).files) > limit for day in days)


def _catalog_current(instance, context: Context, analytics: bool) -> bool:
    """Whether `message_catalog` was last materialized from this very catalog (same definitions,
    same derived schemas) into this warehouse, whose tables and suites (and with the analytics,
    the parsed dbt project) are still there, and whose code location's state was made from these
    catalog files (else the catalog run refreshes it)."""
    from dagster import AssetKey
    from deltalake import DeltaTable

    from catalake.platform.config import SUITES_DIR
    from catalake.platform.warehouse.catalog_table import CATALOG_TABLE
    from catalake.platform.warehouse.message_tables import catalog_fingerprint

    settings = context.settings
    event = instance.get_latest_materialization_event(AssetKey("message_catalog"))
    if event is None or event.asset_materialization is None:
        return False
    metadata = event.asset_materialization.metadata
    stored = metadata.get("catalog_fingerprint")
    path = metadata.get("path")
    if stored is None or path is None or path.value != uris.join(settings.warehouse, CATALOG_TABLE):
        return False
    try:
        tables = context.tables
    except CatalogError:
        return False
    from catalake.defs.catalog.state import changed_files, state_file, state_for
    from catalake.defs.names import DEFAULT

    suites = settings.local / SUITES_DIR
    configured = context.configured
    state = state_for(state_file(configured, DEFAULT), configured, DEFAULT)
    if state is None or changed_files(state, configured):
        return False
    if analytics:
        from catalake.defs.analytics.environment import parsed_as_built
        from catalake.defs.analytics.project import manifest_path

        if not manifest_path(configured.warehouse).exists() or state.manifest is None:
            return False
        if not parsed_as_built(configured.warehouse):  # parsed by an earlier release: every build would parse again
            return False
        from catalake.platform.warehouse.dbt_sources import project_current

        warehouse = configured.warehouse
        if not project_current(Path(warehouse.dbt_template), warehouse.dbt_dir, tables):  # a release changed the models
            return False
    return (stored.value == catalog_fingerprint(tables)
            and DeltaTable.is_deltatable(path.value, storage_options=uris.delta_options(path.value))
            and all((suites / f"{t.message.table_name}.json").exists() for t in tables))


def _not_partitions(context: Context, days) -> str | None:
    """One line naming the days that are not partitions of the daily partitions, or None."""
    from dagster import DailyPartitionsDefinition

    from catalake.defs.catalog.state import read_state, start_date, state_file
    from catalake.defs.names import DEFAULT

    configured = context.configured
    first = start_date(configured, read_state(state_file(configured, DEFAULT)))
    keys = DailyPartitionsDefinition(start_date=first).get_partition_keys()
    outside = [d.isoformat() for d in days if d.isoformat() not in set(keys)]
    if not outside:
        return None
    span = f"{keys[0]} to {keys[-1]}" if keys else "none yet"
    return (f"not a partition: {', '.join(outside[:3])}{' ...' if len(outside) > 3 else ''}; the partitions are the "
            f"days from CATALAKE_START_DATE (else the landing's first day) that have ended: {span}")


def run(args, context: Context) -> int:
    """Materialize the catalog, then per range of days a classification run and a dbt build run
    (recorded in DAGSTER_HOME when set)."""
    from catalake.platform.landing.listing import check_root

    from .launching import launcher

    days = usage.days(args)
    if args.cadence and not args.incremental:
        print("catalake run: --cadence goes with --incremental (a full run commits every table)", file=sys.stderr)
        return 2
    settings = context.settings
    check_root(settings.landing)  # an unreachable landing fails here, in one line
    check_catalog(context)
    outside = _not_partitions(context, days)
    if outside:
        print(outside, file=sys.stderr)
        return 2
    if _needs_spark(settings, days, args.incremental):
        _start_spark(context)
    from .progress import QUIET, quiet_warnings

    with quiet_warnings(), launcher(context, code_location=not args.no_analytics,
                                    console=None if getattr(args, "verbose", False) else QUIET) as (runs, instance):
        return _run_days(args, context, runs, instance, days)


def ranges(days: list, incremental: bool) -> list[list]:
    """The runs of a command's days: consecutive days in ranges of at most DAYS_PER_RUN (as a
    backfill launched from the UI runs them); an increment is of one day."""
    from catalake.platform.config import DAYS_PER_RUN

    size = 1 if incremental else DAYS_PER_RUN
    return [days[i:i + size] for i in range(0, len(days), size)]


def _run_days(args, context: Context, launcher, instance, days) -> int:
    """The catalog's run (unless it is current), then a run per range of days; exit status 1
    when any run failed."""
    import time

    cli_tags = command_tags("catalake run")
    catalog_seconds = 0.0
    if _catalog_current(instance, context, analytics=not args.no_analytics):
        print("catalog unchanged since its last materialization: catalake_job not run", file=sys.stderr)
    else:
        clock = time.perf_counter()
        print("materializing the catalog (catalake_job)", file=sys.stderr, flush=True)
        catalog_run = launcher.run("catalake_job", tags=cli_tags)
        if not catalog_run.success:
            print("the catalog run failed; see the Dagster UI or the log above", file=sys.stderr)
            return 1
        launcher.reload()  # what the run kept for loads: the dbt project's models, the first day
        catalog_seconds = round(time.perf_counter() - clock, 3)
    from contextlib import redirect_stdout

    from .progress import Progress

    status, out = 0, sys.stdout
    spans = ranges(days, args.incremental)
    # what the runs print (dbt's log) goes to stderr: stdout is the days' results (and --json's)
    with Progress(spans) as progress, redirect_stdout(sys.stderr):
        for index, span in enumerate(spans):
            status |= _run_range(args, context, launcher, span, cli_tags, catalog_seconds, out,
                                 lambda what, i=index: progress.step(i, what))
            progress.done(index)
            catalog_seconds = 0.0  # counted with the first day only
    return status


def _run_range(args, context: Context, launcher, span: list, cli_tags: dict, catalog_seconds: float, out,
               step) -> int:
    """One run of `events_job` over the days of `span` (and its dbt build), each day reported on
    `out`; `step(what)` says which step starts."""
    from catalake.defs.events.assets import CADENCE_TAG, INCREMENTAL_TAG
    from catalake.defs.events.jobs import DAILY_SELECTION

    first, last = span[0].isoformat(), span[-1].isoformat()
    step(f"classifying {len(span)} day(s)" if len(span) > 1 else "classifying")
    run = launcher.run("events_job", first, last=last, asset_selection=DAILY_SELECTION,
                       tags={**cli_tags, **({INCREMENTAL_TAG: "true"} if args.incremental else {}),
                             **({CADENCE_TAG: "true"} if args.incremental and args.cadence else {})})
    results, spark = {}, {}
    for event in run.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        # each day's own (a range's output, what the range read in all, has no `result`)
        if materialization.asset_key.to_user_string() == "deadletter" and "result" in materialization.metadata:
            result = dict(materialization.metadata["result"].value)
            result["seconds"] = {**materialization.metadata["seconds"].value, "catalog_job": catalog_seconds}
            results[materialization.partition] = result
            spark = {k: materialization.metadata[k].value for k in ("spark_application", "spark_ui")
                     if k in materialization.metadata}
            catalog_seconds = 0.0
    shown = first if first == last else f"{first} to {last}"
    if not run.success or len(results) < len(span):
        print(f"{shown}: run {run.run_id} failed: {failure(run)}", file=sys.stderr)
        return 1
    status = 0
    if not args.no_analytics:
        step("dbt build and data docs")
        analytics = launcher.run("analytics_job", first, last=last, tags=cli_tags)
        if not analytics.success:
            print(f"{shown}: dbt build (run {analytics.run_id}) failed", file=sys.stderr)
            status = 1
    for day in span:
        _report(args, context.settings, day, results[day.isoformat()], run.run_id, out)
    if spark and not args.json:
        print(f"{shown}: Spark application {spark.get('spark_application')}, Spark UI "
              f"{spark.get('spark_ui', 'disabled')} (while the run's session lives)", file=out)
    return status


def _report(args, settings: Settings, day, result: dict, run_id: str, out) -> None:
    """A day's line on `out`: its records and where they went (with --json, its result)."""
    import json

    if args.json:
        print(json.dumps(result, sort_keys=True), file=out)
        return
    dead = sum(result["deadletter"].values())
    if result.get("landing") == "missing":
        print(f"{day}: WARNING: no folder of this day ({layouts.parse(settings.layout).describe(day)}) in the "
              f"landing zone {settings.landing}", file=sys.stderr)
    kind = {"incremental": "increment: ", "full": "full run: "}.get(result.get("kind"), "")
    if result.get("fallback"):
        print(f"{day}: a full run instead of an increment: {result['fallback']}", file=sys.stderr)
    # an increment's result lists the tables it added most rows to, and counts them all
    rows = result.get("rows_to_tables", sum(result["tables"].values()))
    fed = result.get("tables_fed", len([n for n in result["tables"].values() if n]))
    print(f"{day}: {kind}{result['records']} records -> {rows} in {fed} message table(s), {dead} dead-lettered "
          f"{dict(sorted(result['deadletter'].items()))}  (engine: {result['engine']}; run {run_id})", file=out)
