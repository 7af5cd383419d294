"""`catalake` command line."""

from __future__ import annotations

import argparse
import gc
import sys
from contextlib import contextmanager
from typing import Iterator

from catalake.platform.errors import CatalakeError
from catalake.platform.errortext import error_text

from . import (catalog_commands as catalog, deadletter_commands as deadletters, maintain_command as maintenance,
               quality_commands as quality, run_command as runs, warehouse_commands as warehouse)
from .context import Context


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="catalake", description="Catalog-driven event lakehouse.")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_catalog_commands, _run_command, _warehouse_commands, _quality_commands, _deadletter_commands,
                _maintain_command):
        add(sub)
    _describe(p)
    return p


def _catalog_commands(sub) -> None:
    """`catalake catalog validate|show`, `catalake state`, `catalake schema show`."""
    cat = sub.add_parser("catalog", help="read and check xRegistry message catalogs").add_subparsers(
        dest="action", required=True
    )
    v = cat.add_parser("validate", help="check catalogs; one line per problem, exit 1 on errors")
    v.add_argument("paths", nargs="+", help="catalog files or directories")
    v.set_defaults(func=catalog.catalog_validate)
    s = cat.add_parser("show", help="list the groups and message definitions of catalogs")
    s.add_argument("paths", nargs="+", help="catalog files or directories")
    s.set_defaults(func=catalog.catalog_show)
    st = sub.add_parser("state", help="write the code location's state, what every load of it reads (when deploying)")
    st.add_argument("--no-analytics", action="store_true", help="leave the dbt project out (no parse)")
    st.set_defaults(func=catalog.state_refresh)
    schema = sub.add_parser("schema", help="data schemas of message definitions").add_subparsers(dest="action", required=True)
    ss = schema.add_parser("show", help="print the Spark schema derived for a message definition, as a tree")
    ss.add_argument("message", help="message id (or xid /messagegroups/g/messages/m)")
    ss.add_argument("--catalog", nargs="+", help="catalog files or directories (default: CATALAKE_CATALOG)")
    ss.set_defaults(func=catalog.schema_show)

def _run_command(sub) -> None:
    """`catalake run`."""
    run = sub.add_parser("run", help="classify landed events of one day or a range of days (a run per range of days)")
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
    run.add_argument("--cadence", action="store_true",
                     help="with --incremental: commit each table when it is due (CATALAKE_FRESHNESS_SECONDS), "
                          "as the landing sensor's runs do; else every table fed is committed now")
    run.add_argument("--no-analytics", action="store_true", help="skip the dbt build after each partition")
    run.add_argument("--verbose", action="store_true",
                     help="print the runs' whole Dagster event stream (by default it stays in the runs' logs and the UI)")
    run.set_defaults(func=runs.run)

def _warehouse_commands(sub) -> None:
    """`catalake tables`, `catalake sql`, `catalake dbt project`."""
    tables = sub.add_parser("tables", help="list the warehouse tables under the names SQL sees them by")
    tables.set_defaults(func=warehouse.tables)
    q = sub.add_parser("sql", help="run a SQL query over the warehouse tables (DuckDB; Spark SQL with --engine spark)")
    q.add_argument("query", help='e.g. "SELECT city, count(*) FROM bikeshare_rides__rideended GROUP BY city"')
    q.add_argument("--limit", type=int, default=100, help="rows printed (default 100)")
    q.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                   help="duckdb (default: no JVM, reads the Delta tables through deltalake) or spark")
    q.set_defaults(func=warehouse.sql)
    dbt = sub.add_parser("dbt", help="the dbt project").add_subparsers(dest="action", required=True)
    dp = dbt.add_parser("project", help="prepare the catalog's dbt project under the warehouse (CATALAKE_DBT_DIR) and print its path")
    dp.set_defaults(func=warehouse.dbt_project)

def _quality_commands(sub) -> None:
    """`catalake validate`, `catalake docs`."""
    val = sub.add_parser("validate", help="run Great Expectations' own checkpoint on the stored partitions of a day")
    val.add_argument("--date", required=True, help="the partition, YYYY-MM-DD")
    val.add_argument("--table", action="append", help="a table (SQL name or messages/<name>); repeat for several; default all")
    val.set_defaults(func=quality.validate)
    docs = sub.add_parser("docs", help="print where the expectation suites and the GX data docs are")
    docs.add_argument("--build", action="store_true", help="rebuild the data docs site from every stored validation result")
    docs.set_defaults(func=quality.docs)

def _deadletter_commands(sub) -> None:
    """`catalake drift`, `catalake replay`."""
    drift = sub.add_parser("drift", help="propose message definitions for a day's unmatched records")
    drift.add_argument("--date", required=True, help="the day (YYYY-MM-DD)")
    drift.add_argument("--out", help="write the proposals as an xRegistry catalog document")
    drift.set_defaults(func=deadletters.drift)
    rp = sub.add_parser("replay", help="re-match the dead letters of days against the current catalog")
    rp.add_argument("--from", dest="start", required=True, help="first day (YYYY-MM-DD)")
    rp.add_argument("--to", dest="end", help="last day (default: the first)")
    rp.set_defaults(func=deadletters.replay, date=None)

def _maintain_command(sub) -> None:
    """`catalake maintain`."""
    mt = sub.add_parser("maintain", help="compact days' table-partitions into files of the target size; vacuum the warehouse; "
                                           "record missing column statistics")
    mt_when = mt.add_mutually_exclusive_group()
    mt_when.add_argument("--date", help="compact this day's partitions (YYYY-MM-DD)")
    mt_when.add_argument("--from", dest="start", help="first day of a range to compact")
    mt.add_argument("--to", dest="end", help="last day of the range (default: --from)")
    mt.add_argument("--min-files", type=int, default=2,
                    help="compact a table-partition only from this many files (default 2: a closed day)")
    mt.add_argument("--vacuum", action="store_true",
                    help="delete the files no version inside retention references, and trim the Delta logs")
    mt.add_argument("--retention-hours", type=float, default=None,
                    help="keep removed files this long for time travel (default CATALAKE_RETENTION_HOURS, 168)")
    mt.add_argument("--statistics", action="store_true",
                    help="record column statistics for the files written without them (a warehouse of an older "
                         "release): one commit per table, no row changed")
    mt.add_argument("--runs", action="store_true",
                    help="delete the Dagster runs of increments older than --keep-days whose day a later full run "
                         "closed, with their events (the full runs, and what did not succeed, are kept)")
    mt.add_argument("--keep-days", type=float, default=None, help="--runs: keep increment runs this long (default 7)")
    mt.add_argument("--dry-run", action="store_true", help="--vacuum: print what would be deleted, delete nothing")
    mt.add_argument("--json", action="store_true", help="print the result as one JSON object")
    mt.set_defaults(func=maintenance.maintain)

def _describe(parser: argparse.ArgumentParser) -> None:
    """Each subcommand's `--help` opens with the line its parent lists it with."""
    for action in parser._actions:  # argparse keeps subcommands here only
        if isinstance(action, argparse._SubParsersAction):
            for listed in action._choices_actions:
                command = action.choices[listed.dest]
                command.description = command.description or listed.help
                _describe(command)


def main(argv: list[str] | None = None) -> int:
    """The command line; `argv` None: this process is the `catalake` command (see `_own_process`)."""
    args = parser().parse_args(argv)
    with _own_process(argv is None):
        try:
            return args.func(args, Context())  # the environment read once, when a command asks
        except CatalakeError as exc:  # what a person can fix (platform/errors.py): its text, no traceback
            print(f"catalake: {error_text(exc)}", file=sys.stderr)  # a Dagster step's Failure says the same
            return 2


@contextmanager
def _own_process(own: bool) -> Iterator[None]:
    """A command's process collects garbage rarely: a run over 1,000 tables builds hundreds of
    thousands of objects that live until it ends, and Python's default thresholds made 9 full
    collections of them before the run started (1.7 s). Not for `main` called in another
    program's process. (Freezing them at the end would spare the interpreter's last collection,
    1.5 s, but native libraries then report the objects left as leaks on stderr.)"""
    if not own:
        yield
        return
    thresholds = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
