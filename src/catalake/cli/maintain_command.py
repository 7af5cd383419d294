"""`catalake maintain`: compact days' table-partitions, vacuum the warehouse, record the column
statistics of files written without them (the same steps as `maintenance_job`, in this process)."""

from __future__ import annotations

import json
import sys

from . import usage
from .context import Context
from .usage import UsageError


def maintain(args, context: Context) -> int:
    """Compact the partitions of `--date`/`--from..--to` (each table whose files exceed one per
    target size); with `--vacuum`, delete what no version inside retention needs; with
    `--statistics`, record the column statistics of files written without them."""
    from catalake.platform.maintenance import analyze_warehouse, compact_day, vacuum_warehouse
    from catalake.platform.warehouse.catalog_table import CATALOG_TABLE
    from catalake.platform.warehouse.queries import warehouse_tables

    if not (args.date or args.start or args.vacuum or args.statistics or args.runs):
        raise UsageError("maintain: say what: --date D (or --from D [--to D]) to compact, --vacuum to vacuum, "
                         "--statistics to record missing column statistics, --runs to delete superseded "
                         "increment runs, or several")
    if args.dry_run and not args.vacuum:
        raise UsageError("maintain: --dry-run goes with --vacuum (a compaction is either made or not)")
    settings, store = context.settings, context.store
    names = [t for t in warehouse_tables(store.root).values() if t != CATALOG_TABLE]
    spark = None if settings.engine == "local" else (lambda: context.spark)
    report: dict = {"compacted": [], "vacuumed": [], "statistics": [], "runs": None}
    days = usage.days(args) if (args.date or args.start) else []
    _pass_dead_runs(days)
    for day in days:
        done = compact_day(spark, store, names, day, target=settings.target_file_bytes, min_files=args.min_files)
        report["compacted"] += [c.as_json() for c in done]
        if not args.json:
            merged = [c for c in done if not c.skipped]
            print(f"{day}: {len(merged)} table-partition(s) compacted, {sum(c.files_before for c in merged)} -> "
                  f"{sum(c.files_after for c in merged)} file(s), {sum(c.bytes_before for c in merged)} -> "
                  f"{sum(c.bytes_after for c in merged)} bytes; {len(done) - len(merged)} skipped"
                  + "".join(f"\n  {c.table}: skipped: {c.skipped}" for c in done if c.skipped))
    if args.statistics:
        analyzed = analyze_warehouse(store, [*names, CATALOG_TABLE])
        report["statistics"] = [a.as_json() for a in analyzed]
        if not args.json:
            done = [a for a in analyzed if a.files]
            print(f"statistics: recorded for {sum(a.files for a in done)} file(s) in {len(done)} of {len(analyzed)} "
                  f"table(s); every live file now carries them"
                  + "".join(f"\n  {a.table}: {a.files} of {a.live_files} file(s) (version {a.version})" for a in done))
    if args.vacuum:
        hours = settings.retention_hours if args.retention_hours is None else args.retention_hours
        if hours < 0:
            raise UsageError(f"maintain: --retention-hours {hours} is negative")
        vacuumed = vacuum_warehouse(store, [*names, CATALOG_TABLE], retention_hours=hours, dry_run=args.dry_run)
        report["vacuumed"] = [{k: v for k, v in x.as_json().items() if args.json or k != "paths"} for x in vacuumed]
        if not args.json:
            verb = "would delete" if args.dry_run else "deleted"
            print(f"vacuum (retention {hours:g} h): {verb} {sum(v.files for v in vacuumed)} file(s), "
                  f"{sum(v.bytes for v in vacuumed)} bytes, in {sum(1 for v in vacuumed if v.files)} of "
                  f"{len(vacuumed)} table(s)"
                  + "".join(f"\n  {v.table}: {v.files} file(s), {v.bytes} bytes" for v in vacuumed if v.files))
    if args.runs:
        report["runs"] = _delete_runs(args, settings)
        if not args.json:
            runs = report["runs"]
            print(f"runs: deleted {runs['deleted']} increment run(s) of {len(runs['days'])} day(s) their full runs "
                  f"closed; {runs['kept_open']} kept (their day has no full run yet)")
    if args.json:
        print(json.dumps(report, sort_keys=True))
    return 0


def _delete_runs(args, settings) -> dict:
    """The increment runs a later full run of their day superseded, deleted (retention.py)."""
    import os

    if not os.environ.get("DAGSTER_HOME"):
        raise UsageError("maintain --runs: DAGSTER_HOME is not set: which Dagster instance?")
    from catalake.defs.names import DEFAULT
    from catalake.instance import dagster_instance
    from catalake.retention import KEEP_DAYS, delete_runs

    keep = KEEP_DAYS if args.keep_days is None else args.keep_days
    if keep < 0:
        raise UsageError(f"maintain: --keep-days {keep:g} is negative")
    with dagster_instance() as instance:
        return delete_runs(instance, DEFAULT.of("events_job"), keep).as_json()


def _pass_dead_runs(days) -> None:
    """A compaction goes beside the day's live runs (its commit names the files it merged), but
    a run of one of its days whose process died is marked failed here, as any command of a day
    does (leases.py), so that the day's queue moves on."""
    import os

    if not days or not os.environ.get("DAGSTER_HOME"):
        return
    from catalake.instance import dagster_instance
    from catalake.leases import command, pass_dead_runs, runs_in_progress

    with dagster_instance() as instance:
        for day in days:
            for run, why in pass_dead_runs(instance, runs_in_progress(instance, [day.isoformat()]),
                                               command("catalake maintain")):
                print(f"{day}: run {run.run_id} ({run.job_name}) of the same day marked failed: {why}",
                      file=sys.stderr)
