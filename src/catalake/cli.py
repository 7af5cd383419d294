"""`catalake` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from catalake.platform.catalog import CatalogError, load_catalog, read_catalog
from catalake.platform import layouts, uris
from catalake.platform.config import Settings
from catalake.platform.context import Context
from catalake.platform.report import catalog_rows, text_table


def _catalog_validate(args) -> int:
    from catalake.platform.message_table import message_tables, schema_problems

    catalog, problems = read_catalog(args.paths)
    if not any(p.severity == "error" for p in problems):
        # data schemas: a forbidden reference is an error, one that does not derive a warning
        try:
            tables, _ = message_tables(catalog, _roots(args.paths))
            problems += schema_problems(tables)
        except CatalogError as exc:
            problems += exc.problems
    for problem in problems:
        print(problem)
    errors = [p for p in problems if p.severity == "error"]
    print(
        f"{len(catalog.files)} file(s), {len(catalog)} message definition(s): "
        f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)",
        file=sys.stderr,
    )
    return 1 if errors else 0


def _catalog_show(args) -> int:
    catalog, problems = read_catalog(args.paths)
    errors = [p for p in problems if p.severity == "error"]
    if errors:  # no table of what could be read: the catalog is not usable as it is
        for problem in errors:
            print(problem, file=sys.stderr)
        print(f"catalake: the catalog is invalid ({len(errors)} error(s)); `catalake catalog validate` lists "
              "warnings too", file=sys.stderr)
        return 2
    headers, rows = catalog_rows(catalog)
    print(text_table(headers, rows))
    print(f"\n{len({m.group_id for m in catalog})} group(s), {len(catalog)} message definition(s)")
    return 0


def _roots(paths) -> list[Path]:
    """Where a catalog given on the command line may read schema files: its own folders."""
    return [p if p.is_dir() else p.parent for p in map(Path, paths)]


def _schema_show(args) -> int:
    from pyspark.sql.types import StructField, StructType

    from catalake.platform.schemas.derive import spark_type
    from catalake.platform.schemas.json_schema import SchemaError
    from catalake.platform.schemas.references import resolve_data_schema

    paths = args.catalog or [str(p) for p in Settings.from_env().catalog]
    catalog = load_catalog(paths)
    matches = [m for m in catalog if args.message in (m.message_id, m.xid)]
    if len(matches) != 1:
        print(f"{len(matches)} message definitions match {args.message!r}", file=sys.stderr)
        return 1
    (message,) = matches
    roots = _roots(paths)
    try:
        schema = resolve_data_schema(message, catalog.schemagroups, roots)
        if schema is None:
            print(f"{message.xid} declares no data schema")
            return 0
        dtype, nullable = spark_type(schema)
    except SchemaError as exc:
        print(exc, file=sys.stderr)
        return 1
    root = dtype if isinstance(dtype, StructType) else StructType([StructField("data", dtype, nullable)])
    print(f"{message.xid}  ({schema.format}, {schema.reference or 'inline'})")
    print(root.treeString().rstrip())
    return 0


class UsageError(Exception):
    """A user error: `main` prints it as one line and exits 2."""


def _date(text: str, flag: str):
    """A YYYY-MM-DD day, or a UsageError naming the flag and the value."""
    import datetime as dt
    import re

    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text or ""):
        raise UsageError(f"{flag} {text!r}: not a day (YYYY-MM-DD, e.g. 2026-11-20)")
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"{flag} {text!r}: {exc}") from None


def _days(args) -> list:
    import datetime as dt

    if args.date:
        return [_date(args.date, "--date")]
    first, last = _date(args.start, "--from"), _date(args.end or args.start, "--to")
    if last < first:
        raise UsageError(f"--to {last} is before --from {first}")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def _start_spark(settings: Settings) -> None:
    """Boot the Spark session and its Python workers in a thread while the code location loads:
    every run needs them (a cold first job costs about 4 s), and the Dagster resource's own
    request then gets this same session."""
    import threading

    from catalake.platform.sparkjobs import warm_up
    from catalake.platform.spark import build_session

    def start() -> None:
        warm_up(build_session(settings.spark_master, "catalake", dict(settings.spark_conf)))

    threading.Thread(target=start, daemon=True, name="spark-start").start()


def _needs_spark(settings: Settings, days) -> bool:
    """Whether some day is too large for local processes (Settings.local_bytes)."""
    from catalake.platform.landing import list_day

    return any(sum(f.size for f in list_day(settings.landing, day, settings.layout).files) > settings.local_bytes for day in days)


def _catalog_current(instance, settings: Settings) -> bool:
    """Whether `message_catalog` was last materialized from this very catalog (same definitions,
    same derived schemas) into this warehouse, whose tables and suites are still there."""
    from dagster import AssetKey
    from deltalake import DeltaTable

    from catalake.platform.catalog_table import CATALOG_TABLE
    from catalake.platform.config import SUITES_DIR
    from catalake.platform.message_table import catalog_fingerprint

    event = instance.get_latest_materialization_event(AssetKey("message_catalog"))
    if event is None or event.asset_materialization is None:
        return False
    metadata = event.asset_materialization.metadata
    stored = metadata.get("catalog_fingerprint")
    path = metadata.get("path")
    if stored is None or path is None or path.value != uris.join(settings.warehouse, CATALOG_TABLE):
        return False
    try:
        tables = Context(settings).tables
    except CatalogError:
        return False
    suites = settings.local / SUITES_DIR
    return (stored.value == catalog_fingerprint(tables)
            and DeltaTable.is_deltatable(path.value, storage_options=uris.delta_options(path.value))
            and all((suites / f"{t.message.table_name}.json").exists() for t in tables))


def _not_partitions(settings: Settings, days) -> str | None:
    """One line naming the days that are not partitions of the daily partitions, or None."""
    from catalake.assets.events import daily_partitions

    keys = daily_partitions(settings).get_partition_keys()
    outside = [d.isoformat() for d in days if d.isoformat() not in set(keys)]
    if not outside:
        return None
    span = f"{keys[0]} to {keys[-1]}" if keys else "none yet"
    return (f"not a partition: {', '.join(outside[:3])}{' ...' if len(outside) > 3 else ''}; the partitions are the "
            f"days from CATALAKE_START_DATE ({settings.start_date}) that have ended: {span}")


def _check_catalog(settings: Settings) -> None:
    """A catalog that cannot be used fails before any run, in one line naming its first problem."""
    try:
        Context(settings).tables
    except CatalogError as exc:
        first = str(exc.problems[0]) if exc.problems else str(exc)
        raise UsageError(f"invalid message catalog ({len(exc.problems)} problem(s); `catalake catalog validate "
                         f"{' '.join(map(str, settings.catalog))}` lists them): {first}") from None


def _first_cause(error) -> str:
    """The innermost error's message, on one line (Dagster wraps a step's error in its own)."""
    while error.cause is not None:
        error = error.cause
    lines = [line for line in error.message.strip().splitlines() if line.strip()]
    return lines[-1] if lines else error.cls_name or "error"


def _run(args) -> int:
    """Materialize the catalog, then per partition a classification run and a dbt build run
    (recorded in DAGSTER_HOME when set)."""
    from catalake.instance import dagster_instance, runs_of_code_location
    from catalake.location import build_definitions
    from catalake.platform.landing import check_root

    days = _days(args)
    settings = Settings.from_env()
    check_root(settings.landing)  # an unreachable landing fails here, in one line
    _check_catalog(settings)
    outside = _not_partitions(settings, days)
    if outside:
        print(outside, file=sys.stderr)
        return 2
    if _needs_spark(settings, days):
        _start_spark(settings)
    instance = dagster_instance()
    if args.no_analytics:
        defs = build_definitions(settings, analytics=False)
    else:  # the code location itself: runs of its very jobs (same snapshots as the UI's)
        from catalake.definitions import defs
    with runs_of_code_location(instance):  # the UI can re-execute them
        return _run_days(args, settings, _Launcher(defs, instance, from_location=not args.no_analytics), instance, days)


class _Launcher:
    """Runs of the definitions' jobs in this process. With a persistent instance and the code
    location's own definitions, through Dagster's `execute_job` of the location's reconstructable
    job: the run records the job as the UI loads it, so "Re-execute" finds the same job snapshot;
    otherwise `execute_in_process` (the UI then warns that the loaded job may differ)."""

    def __init__(self, defs, instance, from_location: bool):
        self.defs, self.instance = defs, instance
        self.from_location = from_location and instance.is_persistent

    def run(self, job: str, partition: str | None = None, tags: dict | None = None, asset_selection=None):
        if not self.from_location:
            return self.defs.resolve_job_def(job).execute_in_process(
                instance=self.instance, raise_on_error=False, partition_key=partition, tags=tags,
                asset_selection=asset_selection)
        import os

        from dagster import execute_job
        from dagster._core.definitions.reconstruct import ReconstructableRepository

        from catalake.instance import CODE_MODULE

        repository = ReconstructableRepository.for_module(CODE_MODULE, "defs", working_directory=os.getcwd())
        job_def = self.defs.resolve_job_def(job)
        if partition is not None:
            tags = {**(tags or {}), **job_def.get_tags_for_partition_key(partition, selected_asset_keys=asset_selection)}
        return execute_job(repository.get_reconstructable_job(job), self.instance, tags=tags, raise_on_error=False,
                           asset_selection=asset_selection)


def _run_days(args, settings: Settings, launcher, instance, days) -> int:
    import json
    import time

    from catalake.assets.events import INCREMENTAL_TAG
    from catalake.assets.jobs import DAILY_SELECTION

    # the UI shows where a run came from: these runs are launched in this process, not by the daemon
    cli_tags = {"catalake/launched_by": "catalake run", "catalake/command": " ".join(["catalake", *sys.argv[1:]])[:200]}
    catalog_seconds = 0.0
    if _catalog_current(instance, settings):
        print("catalog unchanged since its last materialization: catalake_job not run", file=sys.stderr)
    else:
        clock = time.perf_counter()
        catalog_run = launcher.run("catalake_job", tags=cli_tags)
        if not catalog_run.success:
            print("the catalog run failed; see the Dagster UI or the log above", file=sys.stderr)
            return 1
        catalog_seconds = round(time.perf_counter() - clock, 3)
    status = 0
    for day in days:
        run = launcher.run("events_job", day.isoformat(), asset_selection=DAILY_SELECTION,
                           tags={**cli_tags, **({INCREMENTAL_TAG: "true"} if args.incremental else {})})
        result = None
        for event in run.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization
            if materialization.asset_key.to_user_string() == "deadletter":
                result = dict(materialization.metadata["result"].value)
                result["seconds"] = {**materialization.metadata["seconds"].value, "catalog_job": catalog_seconds}
                catalog_seconds = 0.0  # counted with the first day only
        if not run.success or result is None:
            errors = [e.step_failure_data.error for e in run.get_step_failure_events() if e.step_failure_data.error]
            cause = _first_cause(errors[0]) if errors else "see the Dagster UI"
            print(f"{day}: run {run.run_id} failed: {uris.redact(cause)}", file=sys.stderr)
            status = 1
            continue
        if not args.no_analytics:
            analytics = launcher.run("analytics_job", day.isoformat(), tags=cli_tags)
            if not analytics.success:
                print(f"{day}: dbt build (run {analytics.run_id}) failed", file=sys.stderr)
                status = 1
        if args.json:
            print(json.dumps(result, sort_keys=True))
        else:
            dead = sum(result["deadletter"].values())
            if result.get("landing") == "missing":
                print(f"{day}: WARNING: no folder of this day ({layouts.parse(settings.layout).describe(day)}) in the "
                      f"landing zone {settings.landing}", file=sys.stderr)
            kind = {"incremental": "increment: ", "full": "full run: "}.get(result.get("kind"), "")
            if result.get("fallback"):
                print(f"{day}: a full run instead of an increment: {result['fallback']}", file=sys.stderr)
            print(f"{day}: {kind}{result['records']} records -> {sum(result['tables'].values())} in "
                  f"{len([n for n in result['tables'].values() if n])} message table(s), {dead} dead-lettered "
                  f"{dict(sorted(result['deadletter'].items()))}  (run {run.run_id})")
    return status


def _tables(args) -> int:
    """The warehouse's tables under their SQL names (Spark SQL, dbt sources, DuckDB, Polars)."""
    from deltalake import DeltaTable

    from catalake.platform.analyst import warehouse_tables

    warehouse = Settings.from_env().warehouse
    tables = warehouse_tables(warehouse)
    if not tables:
        print(f"no Delta tables under {warehouse} (run `catalake run` first)", file=sys.stderr)
        return 1
    options = uris.delta_options(warehouse)
    rows = [[name, uris.join(warehouse, table), DeltaTable(uris.join(warehouse, table), storage_options=options).version()]
            for name, table in tables.items()]
    print(text_table(["table", "path", "delta version"], rows))
    return 0


def _sql(args) -> int:
    """A SQL query over the warehouse tables, printed as a table: DuckDB over the tables' Arrow
    datasets (no JVM, about a second), or Spark SQL with `--engine spark`."""
    settings = Settings.from_env()
    if args.engine == "duckdb":
        import duckdb

        from catalake.platform.analyst import duckdb_sql

        try:
            columns, rows = duckdb_sql(settings.warehouse, args.query, args.limit)
        except duckdb.Error as exc:
            raise UsageError(f"sql: {str(exc).strip().splitlines()[0]}") from None
    else:
        from pyspark.errors import PySparkException

        from catalake.platform.analyst import sql

        context = Context(settings, "catalake-sql")
        try:
            frame = sql(context.spark, context.store, args.query)
            columns, rows = frame.columns, frame.limit(args.limit).collect()
        except PySparkException as exc:
            raise UsageError(f"sql: {str(exc).strip().splitlines()[0]}") from None
    print(text_table(columns, [["" if v is None else v for v in row] for row in rows]))
    return 0


def _dbt_project(args) -> int:
    """Prepare the configured catalog's dbt project (what the analytics assets run) and print
    where it is, e.g. to run dbt by hand there."""
    from catalake.assets.analytics import dbt_project

    print(dbt_project(Settings.from_env()).project_dir)
    return 0


def _validate(args) -> int:
    """GX's own checkpoint on stored partitions: exit 1 when a stored row breaks an ERROR expectation."""
    from catalake.platform.validation import Validator, validate_stored

    context = Context.from_env("catalake-validate")
    day = _date(args.date, "--date")
    outcomes = validate_stored(context.spark, context.store, context.tables, day, args.table or None,
                               Validator(context.settings.local))
    if args.table and not outcomes:
        print(f"no stored partition {day} for {', '.join(args.table)}", file=sys.stderr)
        return 1
    rows = []
    for name, outcome in sorted(outcomes.items()):
        failed = [o for o in outcome.outcomes if not o.success]
        rows.append([name, outcome.rows, len(outcome.outcomes), len(outcome.errors), len(outcome.warnings),
                     "; ".join(f"{o.id or o.type} ({o.unexpected_count})" for o in failed) or "-"])
    print(text_table(["table", "rows", "expectations", "failed ERROR", "failed WARN", "failed"], rows))
    return 1 if any(o.errors for o in outcomes.values()) else 0


def _drift(args) -> int:
    """The day's unmatched records as proposed message definitions (an xRegistry document)."""
    import json

    from catalake.platform.drift import candidates, deadletter_rows, markdown, proposals_document

    settings = Settings.from_env()
    day = _date(args.date, "--date")
    found = candidates(deadletter_rows(settings.warehouse, day))
    proposals = proposals_document(found, day)
    print(markdown(found, proposals))
    if args.out:
        Path(args.out).write_text(json.dumps(proposals, indent=2) + "\n")
        print(f"proposals: {args.out} (add it to the catalog, then `catalake replay --from {day}`)")
    return 0


def _replay(args) -> int:
    """Re-match the dead letters of a range of days against the current catalog."""
    from catalake.platform.replay import replay_partition

    context = Context.from_env("catalake-replay")
    days = _days(args)
    rows = []
    for day in days:
        result = replay_partition(context.spark, context.store, context.tables, day)
        moves = sorted(result.moved.items()) or [("nothing moved", 0)]
        rows += [[day.isoformat(), result.deadletters, move, n] for move, n in moves]
    print(text_table(["day", "dead letters", "moved (reason -> table)", "rows"], rows))
    return 0


def _docs(args) -> int:
    """Where the expectation suites and the GX data docs of the configured warehouse are."""
    from catalake.platform.config import DOCS_INDEX, SUITES_DIR

    local = Settings.from_env().local
    index = local / DOCS_INDEX
    print(f"expectation suites: {local / SUITES_DIR}")
    if args.build:
        from catalake.platform.validation import Validator

        Validator(local).build_docs()
    if not index.exists():
        print(f"data docs: not built yet (the analytics job's data_docs asset builds a day's pages after its "
              f"partition run; `catalake docs --build` builds them all) at {index}", file=sys.stderr)
        return 1
    print(f"data docs: {index}")
    print(f"open: {index.as_uri()}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="catalake", description="Catalog-driven event lakehouse.")
    sub = p.add_subparsers(dest="command", required=True)
    cat = sub.add_parser("catalog", help="read and check xRegistry message catalogs").add_subparsers(
        dest="action", required=True
    )
    v = cat.add_parser("validate", help="check catalogs; one line per problem, exit 1 on errors")
    v.add_argument("paths", nargs="+", help="catalog files or directories")
    v.set_defaults(func=_catalog_validate)
    s = cat.add_parser("show", help="list the groups and message definitions of catalogs")
    s.add_argument("paths", nargs="+", help="catalog files or directories")
    s.set_defaults(func=_catalog_show)
    schema = sub.add_parser("schema", help="data schemas of message definitions").add_subparsers(dest="action", required=True)
    ss = schema.add_parser("show", help="print the Spark schema derived for a message definition, as a tree")
    ss.add_argument("message", help="message id (or xid /messagegroups/g/messages/m)")
    ss.add_argument("--catalog", nargs="+", help="catalog files or directories (default: CATALAKE_CATALOG)")
    ss.set_defaults(func=_schema_show)
    run = sub.add_parser("run", help="classify landed events of one day or a range of days (one Dagster run per day)")
    when = run.add_mutually_exclusive_group(required=True)
    when.add_argument("--date", help="one partition, YYYY-MM-DD")
    when.add_argument("--from", dest="start", help="first partition of a range, YYYY-MM-DD")
    run.add_argument("--to", dest="end", help="last partition of the range (default: --from)")
    run.add_argument("--json", action="store_true", help="print one JSON result per partition")
    kind = run.add_mutually_exclusive_group()
    kind.add_argument("--incremental", action="store_true",
                      help="read only what landed since the day's last run and append it (a full run when the "
                           "landed files changed otherwise, or the day has no recorded run)")
    kind.add_argument("--full", action="store_true", help="read the whole day and replace its partitions (the default)")
    run.add_argument("--no-analytics", action="store_true", help="skip the dbt build after each partition")
    run.set_defaults(func=_run)
    tables = sub.add_parser("tables", help="list the warehouse tables under the names SQL sees them by")
    tables.set_defaults(func=_tables)
    q = sub.add_parser("sql", help="run a SQL query over the warehouse tables (DuckDB; Spark SQL with --engine spark)")
    q.add_argument("query", help='e.g. "SELECT city, count(*) FROM bikeshare_rides__rideended GROUP BY city"')
    q.add_argument("--limit", type=int, default=100, help="rows printed (default 100)")
    q.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                   help="duckdb (default: no JVM, reads the Delta tables through deltalake) or spark")
    q.set_defaults(func=_sql)
    dbt = sub.add_parser("dbt", help="the dbt project").add_subparsers(dest="action", required=True)
    dp = dbt.add_parser("project", help="prepare the catalog's dbt project under the warehouse (CATALAKE_DBT_DIR) and print its path")
    dp.set_defaults(func=_dbt_project)
    val = sub.add_parser("validate", help="run Great Expectations' own checkpoint on the stored partitions of a day")
    val.add_argument("--date", required=True, help="the partition, YYYY-MM-DD")
    val.add_argument("--table", action="append", help="a table (SQL name or messages/<name>); repeat for several; default all")
    val.set_defaults(func=_validate)
    drift = sub.add_parser("drift", help="propose message definitions for a day's unmatched records")
    drift.add_argument("--date", required=True, help="the day (YYYY-MM-DD)")
    drift.add_argument("--out", help="write the proposals as an xRegistry catalog document")
    drift.set_defaults(func=_drift)
    rp = sub.add_parser("replay", help="re-match the dead letters of days against the current catalog")
    rp.add_argument("--from", dest="start", required=True, help="first day (YYYY-MM-DD)")
    rp.add_argument("--to", dest="end", help="last day (default: the first)")
    rp.set_defaults(func=_replay, date=None)
    docs = sub.add_parser("docs", help="print where the expectation suites and the GX data docs are")
    docs.add_argument("--build", action="store_true", help="rebuild the data docs site from every stored validation result")
    docs.set_defaults(func=_docs)
    _describe(p)
    return p


def _describe(parser: argparse.ArgumentParser) -> None:
    """Each subcommand's `--help` opens with the line its parent lists it with."""
    for action in parser._actions:  # argparse keeps subcommands here only
        if isinstance(action, argparse._SubParsersAction):
            for listed in action._choices_actions:
                command = action.choices[listed.dest]
                command.description = command.description or listed.help
                _describe(command)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (uris.LocationError, UsageError, layouts.LayoutError) as exc:  # a user's error: one line, no traceback
        print(f"catalake: {uris.redact(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
