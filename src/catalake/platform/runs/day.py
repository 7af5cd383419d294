"""A full run of a day: landed records -> per-message tables, the dead-letter table, quality results.

One Spark job does the day, whatever the number of tables: the driver cuts the day's files into
tasks (landing.plan_tasks), and each task, on an executor, classifies its records and writes
every table's Parquet files for them straight into the tables' partition folders
(classifier.py, run by tasks.py). What comes back to the driver is small: per task and table the files written,
row counts and the quality tally. The driver then commits one Delta transaction per table that
the day feeds, or that held rows of the day before (emptied), concurrently; a failed run
removes the files it wrote, and the next run of the day removes those of a killed one
(recovery.py, shared with replay).

Every record read ends in exactly one table, and re-running a partition gives identical tables
(every table the run touches has that partition replaced). `conservation` checks it afterwards
from the tables' own Delta logs.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Callable, Mapping, Sequence

from pyspark.sql import SparkSession

from .. import layouts
from ..defaults import LAYOUT, TARGET_FILE_BYTES
from ..errors import StorageError
from ..landing.listing import DayListing, check_root, display_path, list_day
from ..landing.planning import Piece, plan_tasks, tiling_faults
from ..uris import Location
from ..warehouse.appends import schema_key
from ..warehouse.deadletters import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from ..warehouse.files import PARTITION_COLUMN, PartFile
from ..warehouse.merging import Merge, merge_groups, run_merges, time_order
from ..warehouse.catalog_table import CATALOG_TABLE, create_catalog_table
from ..warehouse.message_tables import MessageTable, create_unfed, sync_message_tables
from ..warehouse.store import Committed, DeltaStore
from . import ledger, recovery
from .plan import Plan, new_plan
from .results import Merged, PartitionResult, table_quality
from .tasks import Task, engine_for, execute, parallelism


def classify_partition(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    tables: Sequence[MessageTable],
    landing: str | Location,
    day: dt.date,
    **options,
) -> PartitionResult:
    """Classify and write one day (`classify_days` of that day alone)."""
    return classify_days(spark, store, tables, landing, [day], **options)[day]


def classify_days(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    tables: Sequence[MessageTable],
    landing: str | Location,
    days: Sequence[dt.date],
    *,
    only: set[str] | None = None,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    local_bytes: int = 0,
    layout: str = LAYOUT,
    target_file_bytes: int = TARGET_FILE_BYTES,
    compiled: bool = True,
    progress=lambda message: None,
) -> dict[dt.date, PartitionResult]:
    """Classify and write a day, or a range of days in one pass: one plan over all the days'
    files, one Spark job (or local processes), and one Delta commit per table replacing every
    day of the range. Each day keeps its own partition, counts, quality results and ledger.
    `only`: table names to write (a subset run); None = all, the dead-letter table included. Days
    of at most `local_bytes` landed bytes in all are classified by local Python processes
    instead of a Spark job (run_local), and `spark` (the session, or a function starting it) is
    then not started; each result's `engine` says which ran. Each table's partition gets at most
    ceil(bytes / `target_file_bytes`) files (bounded_files)."""
    days = sorted(set(days))
    clock = time.perf_counter()
    landing = check_root(landing)  # the root, opened once: what follows asks its fields
    plan = new_plan(tables, store.location, days[0], ingested_at=ingested_at, write=only, strict=strict,
                    landing=landing, compiled=compiled)
    listings = _list_days(landing, days, layouts.parse(layout), progress)
    files = [f for listing in listings.values() for f in listing.files]
    seconds = {"listing": time.perf_counter() - clock}
    clock = time.perf_counter()
    engine, session = engine_for(sum(f.size for f in files), local_bytes, spark)
    seconds["spark_start"] = time.perf_counter() - clock  # waiting for the session (started early by the CLI)
    tasks = _checked_tasks(landing, listings, files, session, days)
    progress(f"{_span(days)}: {len(files)} landed file(s) in {len(tasks)} task(s) on {engine.describe()}")
    # this run replaces the days' partitions: a stopped replay's commits are moot
    with day_run(store, plan, tables, days, replace=True, sweep=True, progress=progress) as sweep:
        merged, fed = _run_tasks(session, store, plan, tasks, days, target_file_bytes, seconds, progress)
        clock = time.perf_counter()
        results = _commit_and_record(store, plan, tables, merged, fed, sweep, only, landing, listings, progress)
        seconds["commits"] = time.perf_counter() - clock
        _describe_results(results, listings, seconds, engine)
        return results


def _span(days: Sequence[dt.date]) -> str:
    """How a message names the run's days: the day, or the first to the last."""
    return f"{days[0]}" if len(days) == 1 else f"{days[0]} to {days[-1]}"


def _list_days(landing: Location, days: Sequence[dt.date], where: layouts.Layout,
               progress) -> dict[dt.date, DayListing]:
    """Each day's files listed, then what of each day is not read said: links skipped, files
    ignored, a day without its folder."""
    listings = {day: list_day(landing, day, where) for day in days}
    for day, listing in listings.items():
        for path in listing.skipped:
            progress(f"{day}: skipped {display_path(path)}: a symbolic link (the landing root is a jail; links are not followed)")
        for path in listing.ignored:
            progress(f"{day}: not read: {display_path(path)}")
        if listing.missing:
            progress(f"{day}: WARNING: no folder of this day in the landing zone {landing.uri} "
                     f"({where.describe(day)}, layout {where.name}): nothing was read")
    return listings


def _checked_tasks(landing: Location, listings: Mapping[dt.date, DayListing], files: list, session,
                   days: Sequence[dt.date]) -> list[Task]:
    """The days' tasks (plan_day_tasks), refused unless they read every landed byte once."""
    tasks = plan_day_tasks(landing, listings, parallelism(session) if session is not None else (os.cpu_count() or 2))
    faults = tiling_faults(files, [[p for _, pieces in task for p in pieces] for task in tasks])
    if faults:  # never expected: the planner cuts each file once, at line ends
        raise StorageError(f"{_span(days)}: the plan would not read every landed byte once: {'; '.join(faults[:5])}")
    return tasks


def _run_tasks(session, store: DeltaStore, plan: Plan, tasks: list[Task], days: Sequence[dt.date], target: int,
               seconds: dict[str, float], progress) -> tuple[dict[dt.date, Merged], dict[dt.date, set[str]]]:
    """The run's job, then each table's files of each day bounded (bounded_files). Returns each
    day's summary and the tables its tasks wrote files into; `seconds` gets the job's and the
    merge's times."""
    clock = time.perf_counter()
    merged = execute(plan, tasks, session)
    merged = {day: merged.get(day) or Merged() for day in days}
    seconds["job"] = time.perf_counter() - clock
    clock = time.perf_counter()
    fed = {day: set(m.written) for day, m in merged.items()}
    for day, written in bounded_files(session, store, plan, {d: m.written for d, m in merged.items()},
                                      target, progress).items():
        merged[day].written = written
    seconds["merge"] = time.perf_counter() - clock
    return merged, fed


def _commit_and_record(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: dict[dt.date, Merged],
                       fed: dict[dt.date, set[str]], sweep: Sweep, only: set[str] | None, landing: Location,
                       listings: Mapping[dt.date, DayListing], progress) -> dict[dt.date, PartitionResult]:
    """The days' commits (_commit), then per day what the sweep looks at and, when the run wrote
    every table, the day's ledger of a full run."""
    for day in merged:
        ledger.forget(store.location, day)  # the day is read anew: what increments read is moot
    results = _commit(store, plan, tables, merged, progress)
    for day, m in merged.items():
        sweep.committed(day, fed[day], {os.path.basename(f.path) for files in m.written.values() for f in files})
        if only is None:  # every table now holds what these files hold: increments go on from here
            result = results[day]
            rows = {name: [result.stored.get(name), result.partition_files.get(name, 0)] for name in result.versions}
            ledger.record_full(store.location, landing, day, plan.run, listings[day].files, m.kept(),
                               rows if None not in (r for r, _ in rows.values()) else None, result.tips)
    return results


def _describe_results(results: dict[dt.date, PartitionResult], listings: Mapping[dt.date, DayListing],
                      seconds: dict[str, float], engine) -> None:
    """Each day's result given the run's times and engine, and what its listing found."""
    for day, result in results.items():
        listing = listings[day]
        result.seconds = {k: round(v, 3) for k, v in seconds.items()}
        result.engine = engine
        result.skipped = [display_path(p) for p in listing.skipped]
        result.ignored = [display_path(p) for p in listing.ignored]
        result.landing = "missing" if listing.missing else ("read" if listing.files else "empty")


def plan_day_tasks(landing: Location, listings: Mapping[dt.date, DayListing], cores: int) -> list[Task]:
    """The days' files cut into pieces and packed into tasks as one plan (plan_tasks: a range
    of small days is a few tasks, not one a day), each task's pieces grouped by their day."""
    day_of = {f.path: day for day, listing in listings.items() for f in listing.files}
    if not day_of:
        return []
    tasks = []
    for pieces in plan_tasks(landing, [f for listing in listings.values() for f in listing.files], cores):
        days: dict[dt.date, list[Piece]] = {}
        for piece in pieces:
            days.setdefault(day_of[piece.path], []).append(piece)
        tasks.append(sorted(days.items()))
    return tasks


def bounded_files(session, store: DeltaStore, plan: Plan, written: dict[dt.date, dict[str, list[PartFile]]], target: int,
                  progress) -> dict[dt.date, dict[str, list[PartFile]]]:
    """Each table's files of the run in each day, at most ceil(bytes / target) of them: a table
    fed by more tasks than that has their files merged by one more job (many tables' merges a
    task, packed by bytes: warehouse/merging.py) before anything is committed, rather than by a
    shuffle of the rows between tasks (measured in benchmarks/RESULTS.md). The merged-from files
    are this run's and uncommitted: the run's sweep removes them."""
    merges, kept = [], {}
    for day, tables in written.items():
        folder = f"{PARTITION_COLUMN}={day.isoformat()}"
        kept[day] = {}
        for name, files in tables.items():
            groups = merge_groups(files, target, partial(time_order, store.location, name))
            merged_from = {f.path for group in groups for f in group}
            kept[day][name] = [f for f in files if f.path not in merged_from]
            merges += [(day, Merge(name, group, f"{folder}/part-{plan.run}-merged-{len(merges) + i}.zstd.parquet"))
                       for i, group in enumerate(groups)]
    if not merges:
        return written
    outputs = run_merges(session, store.location, [merge for _, merge in merges])
    for (day, merge), output in zip(merges, outputs):
        kept[day][merge.table].append(output)
    days = sorted({day for day, _ in merges})
    progress(f"{days[0]}{f' to {days[-1]}' if len(days) > 1 else ''}: {sum(len(m.inputs) for _, m in merges)} file(s) "
             f"of {len({m.table for _, m in merges})} table(s) merged into {len(merges)} (at most one per "
             f"{target >> 20} MiB a table-partition)")
    return kept


class Sweep:
    """What a run's sweep looks at once it committed: per day, the tables its tasks wrote files
    into (a task attempt that failed or ran twice writes into no other) and the names of every
    file it committed, so that no other table is listed and no table's log read."""

    def __init__(self, names: Sequence[str], days: Sequence[dt.date]):
        self.names = list(names)
        self.tables: dict[dt.date, list[str]] = {day: self.names for day in days}
        self.files: dict[dt.date, set[str] | None] = {day: None for day in days}

    def committed(self, day: dt.date, tables: set[str], files: set[str]) -> None:
        self.tables[day], self.files[day] = [n for n in self.names if n in tables], files


@contextmanager
def day_run(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], days: Sequence[dt.date] | None = None, *,
            replace: bool, sweep: bool, progress):
    """A run of the day (or of each of `days`), recorded while it runs (recovery.py): what
    killed runs and replays of the days left is removed first (`replace`: a stopped replay's
    journal is dropped too). The files of this run no commit took are removed after a failure,
    and after success when `sweep` (Spark task attempts that failed or ran twice; local tasks run
    once), of the tables and against the files the yielded Sweep names once the run says what it
    committed."""
    days = list(days or [plan.day])
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    for day in days:
        recovery.recover_day(store, day, names, replace=replace, progress=progress)
    swept = Sweep(names, days)
    with recovery.recorded(store.location, plan.run, days, kind="run"):
        try:
            yield swept
        except BaseException:
            for day in days:
                recovery.remove_orphans(store, plan.run, day, names)
            raise
        if sweep:
            for day in days:
                recovery.remove_orphans(store, plan.run, day, swept.tables[day], committed=swept.files[day])


def _commit(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: dict[dt.date, Merged],
            progress) -> dict[dt.date, PartitionResult]:
    """One Delta commit per table for all the run's days: every day's files of the table, each
    day's partition replaced. Returns each day's result."""
    days = list(merged)
    results = {day: PartitionResult(partition=day.isoformat(), records=m.records, tasks=m.tasks,
                                    deadletter=m.deadletter, files=m.per_file) for day, m in merged.items()}
    for day, m in merged.items():
        progress(f"{day}: {m.records} record(s) classified in {m.tasks} task(s)")

    writes = plan.write
    if writes is None:  # every table a reader of them all opens, on a deployment whose catalog job never ran too
        created = create_unfed(store, tables) + ([CATALOG_TABLE] if create_catalog_table(store) else [])
        if created:
            progress(f"created {len(created)} empty table(s) no run had written yet: {', '.join(created[:5])}"
                     + (" ..." if len(created) > 5 else ""))
    touched = _touched(store, tables, merged, writes)
    deadletters = writes is None or DEADLETTER_TABLE in writes
    committed, intervals = _commit_tables(store, tables, merged, touched, deadletters)
    for name, by_day in committed.items():
        for day, c in by_day.items():
            results[day].versions[name] = c.version
            results[day].stored[name] = c.rows
            results[day].partition_files[name] = c.files
    _tips(store, tables, committed, intervals, results)
    progress(f"{plan.day if len(days) == 1 else f'{days[0]} to {days[-1]}'}: committed {len(committed)} table(s)")

    for day, result in results.items():
        m = merged[day]
        for table in touched[day]:
            result.written.append(table.name)
            result.tables[table.message.xid] = m.rows.get(table.name, 0)
            if table.name in m.tallies:
                result.quality[table.name] = table_quality(table, m.tallies[table.name], plan.strict)
        if deadletters:
            result.written.append(DEADLETTER_TABLE)
    return results


def _touched(store: DeltaStore, tables: Sequence[MessageTable], merged: dict[dt.date, Merged],
             writes: frozenset[str] | None) -> dict[dt.date, list[MessageTable]]:
    """Per day, every table the day feeds and every table that held rows of it before (emptied)."""
    days = list(merged)
    candidates = [t for t in tables if writes is None or t.name in writes]
    if len(days) == 1:
        held = {t.name: {days[0]} if store.has_partition(t.name, days[0]) else set() for t in candidates}
    else:  # one listing a table, not one a table and day
        held = {t.name: store.partition_days(t.name) for t in candidates}
    return {day: [t for t in candidates if t.name in merged[day].rows or day in held[t.name]] for day in days}


def _commit_tables(store: DeltaStore, tables: Sequence[MessageTable], merged: dict[dt.date, Merged],
                   touched: dict[dt.date, list[MessageTable]],
                   deadletters: bool) -> tuple[dict[str, dict[dt.date, Committed]], dict[str, int]]:
    """Each touched table (and the dead-letter table when `deadletters`) created or evolved as
    the catalog says, then committed with its files of each day it touches, in threads; and the
    checkpoint interval of each table that takes appends at a known version (appends.honoured)."""
    days = list(merged)
    touched_names = {day: {t.name for t in found} for day, found in touched.items()}
    names = list(dict.fromkeys(t.name for day in days for t in touched[day]))
    loads = names + ([DEADLETTER_TABLE] if deadletters else [])
    # each table's log loaded once, all of them first and in threads, for the sync, the commit and the count
    with store.loaded_once(loads, threads=store.commit_threads):
        synced = set(names)
        sync_message_tables(store, [t for t in tables if t.name in synced])  # created / evolved as the catalog says
        commits = {name: {day: merged[day].written.get(name, []) for day in days
                          if name in touched_names[day]} for name in names}
        if deadletters:
            ensure_deadletter(store)
            commits[DEADLETTER_TABLE] = {day: merged[day].written.get(DEADLETTER_TABLE, []) for day in days}
        stray = {name for m in merged.values() for name in m.written} - set(commits)
        if stray:
            raise StorageError(f"files written for tables this run does not commit: {sorted(stray)}")
        intervals = {name: store.honours_blind_appends(name) for name in commits}
        with ThreadPoolExecutor(min(store.commit_threads, max(len(commits), 1))) as pool:
            done = dict(zip(commits, pool.map(
                lambda item: store.commit_partitions(item[0], item[1], PARTITION_COLUMN), commits.items())))
    return done, {name: interval for name, interval in intervals.items() if interval}


def _tips(store: DeltaStore, tables: Sequence[MessageTable], committed: dict[str, dict[dt.date, Committed]],
          intervals: dict[str, int], results: dict[dt.date, PartitionResult]) -> None:
    """Each day's tips of the tables the run committed (one HEAD a table, in threads): the
    day's first increment appends at them, reading no log (appends.py)."""
    schemas = {t.name: t.schema for t in tables}
    keys = {name: schema_key(schemas.get(name, DEADLETTER_SCHEMA)) for name in intervals}

    def tip(name: str):
        return name, store.tip_after(name, next(iter(committed[name].values())), keys[name], intervals[name])

    with ThreadPoolExecutor(min(store.commit_threads, max(len(intervals), 1))) as pool:
        for name, made in pool.map(tip, list(intervals)):
            for day, c in committed[name].items():
                if made is not None and c.rows is not None:
                    results[day].tips[name] = replace(made, rows=c.rows, files=c.files).as_json()


def ensure_deadletter(store: DeltaStore) -> None:
    """The dead-letter table, created, or given the columns added since it was."""
    if not store.exists(DEADLETTER_TABLE):
        store.create(DEADLETTER_TABLE, DEADLETTER_SCHEMA, partition_by=[PARTITION_COLUMN],
                     description="Landed records no message table takes, with the reason.")
    elif set(DEADLETTER_SCHEMA.fieldNames()) - set(store.spark_schema(DEADLETTER_TABLE).fieldNames()):
        store.add_columns(DEADLETTER_TABLE, DEADLETTER_SCHEMA)


def conservation(store: DeltaStore, tables: Sequence[MessageTable], day: dt.date, records: int,
                 stored: dict[str, int | None] | None = None, held: set[str] | None = None,
                 staged: dict[str, int] | None = None) -> tuple[bool, dict]:
    """Records read == rows of `day` in the per-message tables + dead-letter rows (row counts
    from each table's Delta log) + rows staged for a later commit (`staged`: the day's ledger
    names their files). `stored`: the counts of tables the run knows, from the snapshot each
    commit left (PartitionResult.stored): their logs are not read again.
    `held`: the tables that may hold rows of the day, when the run knows them (a full run
    committed every one of them, PartitionResult.written; an increment's ledger names every table
    the day's runs committed); else each table's folder is looked at."""
    stored = {n: rows for n, rows in (stored or {}).items() if rows is not None}
    names = [n for n in [t.name for t in tables] + [DEADLETTER_TABLE]
             if n not in stored and (n in held if held is not None else store.has_partition(n, day)) and store.exists(n)]
    with ThreadPoolExecutor(store.commit_threads) as pool:  # one Delta log read per table
        counts = dict(zip(names, pool.map(lambda n: store.partition_rows(n, PARTITION_COLUMN, day), names)))
    counts.update({n: rows for n, rows in stored.items()
                   if rows or (n in held if held is not None else store.has_partition(n, day))})
    waiting = sum((staged or {}).values())
    stored = sum(counts.values())
    proof = {"records_read": records, "rows_stored": stored, "per_table": counts}
    if staged:
        proof.update(rows_staged=waiting, staged_per_table=dict(staged))
    return stored + waiting == records, proof
