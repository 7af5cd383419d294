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
from typing import Callable, Sequence

from pyspark.sql import SparkSession

from .. import layouts, uris
from ..errors import StorageError
from ..landing.listing import check_root, display_path, list_day
from ..landing.planning import plan_tasks, tiling_faults
from ..warehouse.deadletters import DEADLETTER_TABLE
from ..warehouse.deadletters import SCHEMA as DEADLETTER_SCHEMA
from ..warehouse.files import PARTITION_COLUMN, PartFile
from ..warehouse.merging import TARGET_FILE_BYTES, Merge, merge_groups, run_merges
from ..warehouse.message_tables import MessageTable, sync_message_tables
from ..warehouse.store import DeltaStore
from ..uris import Location
from . import ledger, recovery
from .plan import Plan, new_plan
from .results import Merged, PartitionResult, table_quality
from .tasks import engine_for, execute, parallelism


def classify_partition(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    tables: Sequence[MessageTable],
    landing: str | Location,
    day: dt.date,
    *,
    only: set[str] | None = None,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    local_bytes: int = 0,
    layout: str = "day",
    target_file_bytes: int = TARGET_FILE_BYTES,
    batch: bool = True,
    progress=lambda message: None,
) -> PartitionResult:
    """Classify and write one day. `only`: table names to write (a subset run); None = all,
    the dead-letter table included. A day of at most `local_bytes` landed bytes is classified
    by local Python processes instead of a Spark job (run_local), and `spark` (the session, or a
    function starting it) is then not started; `result.engine` says which ran. Each table's
    partition gets at most ceil(bytes / `target_file_bytes`) files (bounded_files)."""
    clock = time.perf_counter()
    landing = check_root(landing)  # the root, opened once: what follows asks its fields
    plan = new_plan(tables, store.root, day, ingested_at=ingested_at, write=only, strict=strict,
                    storage=uris.storage_environment(), landing=landing.uri, batch=batch)
    where = layouts.parse(layout)
    listing = list_day(landing, day, where)
    files = listing.files
    for path in listing.skipped:
        progress(f"{day}: skipped {display_path(path)}: a symbolic link (the landing root is a jail; links are not followed)")
    for path in listing.ignored:
        progress(f"{day}: not read: {display_path(path)}")
    if listing.missing:
        progress(f"{day}: WARNING: no folder of this day in the landing zone {landing.uri} "
                 f"({where.describe(day)}, layout {where.name}): nothing was read")
    seconds = {"listing": time.perf_counter() - clock}
    clock = time.perf_counter()
    engine, session = engine_for(sum(f.size for f in files), local_bytes, spark)
    seconds["spark_start"] = time.perf_counter() - clock  # waiting for the session (started early by the CLI)
    tasks = plan_tasks(files, parallelism(session) if session is not None else (os.cpu_count() or 2)) if files else []
    faults = tiling_faults(files, tasks)
    if faults:  # never expected: the planner cuts each file once, at line ends
        raise StorageError(f"{day}: the plan would not read every landed byte once: {'; '.join(faults[:5])}")
    progress(f"{day}: {len(files)} landed file(s) in {len(tasks)} task(s) on {engine.describe()}")
    # this run replaces the day's partitions: a stopped replay's commits are moot
    with day_run(store, plan, tables, replace=True, sweep=True, progress=progress) as sweep:
        clock = time.perf_counter()
        merged = execute(plan, tasks, session)
        seconds["job"] = time.perf_counter() - clock
        clock = time.perf_counter()
        fed = set(merged.written)
        merged.written = bounded_files(session, store, plan, merged.written, target_file_bytes, progress)
        seconds["merge"] = time.perf_counter() - clock
        clock = time.perf_counter()
        ledger.forget(store.root, day)  # the day is read anew: what increments read is moot
        result = _commit(store, plan, tables, merged, progress)
        sweep.committed(fed, {os.path.basename(f.path) for files in merged.written.values() for f in files})
        if only is None:  # every table now holds what these files hold: increments go on from here
            ledger.record_full(store.root, day, plan.run, files, merged.kept())
        seconds["commits"] = time.perf_counter() - clock
        result.seconds = {k: round(v, 3) for k, v in seconds.items()}
        result.engine = engine
        result.skipped = [display_path(p) for p in listing.skipped]
        result.ignored = [display_path(p) for p in listing.ignored]
        result.landing = "missing" if listing.missing else ("read" if files else "empty")
        return result


def bounded_files(session, store: DeltaStore, plan: Plan, written: dict[str, list[PartFile]], target: int,
                  progress) -> dict[str, list[PartFile]]:
    """Each table's files of the run, at most ceil(bytes / target) of them: a table fed by more
    tasks than that has their files merged by one more job (many tables' merges a task, packed
    by bytes: warehouse/merging.py) before anything is committed, rather than by a shuffle of
    the rows between tasks (measured in benchmarks/RESULTS.md). The merged-from files are this
    run's and uncommitted: the run's sweep removes them."""
    folder = f"{PARTITION_COLUMN}={plan.day.isoformat()}"
    merges, kept = [], {}
    for name, files in written.items():
        groups = merge_groups(files, target)
        merged_from = {f.path for group in groups for f in group}
        kept[name] = [f for f in files if f.path not in merged_from]
        merges += [Merge(name, group, f"{folder}/part-{plan.run}-merged-{len(merges) + i}.zstd.parquet")
                   for i, group in enumerate(groups)]
    if not merges:
        return written
    outputs = run_merges(session, store.root, merges)
    for merge, output in zip(merges, outputs):
        kept[merge.table].append(output)
    progress(f"{plan.day}: {sum(len(m.inputs) for m in merges)} file(s) of {len({m.table for m in merges})} table(s) "
             f"merged into {len(merges)} (at most one per {target >> 20} MiB a table-partition)")
    return kept


class Sweep:
    """What a run's sweep looks at once it committed: the tables its tasks wrote files into
    (a task attempt that failed or ran twice writes into no other) and the names of every file
    it committed, so that no other table is listed and no table's log read."""

    def __init__(self, names: Sequence[str]):
        self.names, self.files = list(names), None

    def committed(self, tables: set[str], files: set[str]) -> None:
        self.names, self.files = [n for n in self.names if n in tables], files


@contextmanager
def day_run(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], *, replace: bool, sweep: bool, progress):
    """A run of the day, recorded while it runs (recovery.py): what killed runs and replays of the
    day left is removed first (`replace`: a stopped replay's journal is dropped too). The files of
    this run no commit took are removed after a failure, and after success when `sweep` (Spark
    task attempts that failed or ran twice; local tasks run once), of the tables and against the
    files the yielded Sweep names once the run says what it committed."""
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    recovery.recover_day(store, plan.day, names, replace=replace, progress=progress)
    swept = Sweep(names)
    with recovery.recorded(store.root, plan.run, plan.day, kind="run"):
        try:
            yield swept
        except BaseException:
            recovery.remove_orphans(store, plan.run, plan.day, names)
            raise
        if sweep:
            recovery.remove_orphans(store, plan.run, plan.day, swept.names, committed=swept.files)


def _commit(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: Merged, progress) -> PartitionResult:
    day = plan.day
    result = PartitionResult(partition=day.isoformat(), records=merged.records, tasks=merged.tasks,
                             deadletter=merged.deadletter, files=merged.per_file)
    rows, written = merged.rows, merged.written
    progress(f"{day}: {result.records} record(s) classified in {merged.tasks} task(s)")

    writes = plan.write
    # every table the partition feeds, and every table that held rows of it before (emptied)
    touched = [t for t in tables if (writes is None or t.name in writes) and (t.name in rows or store.has_partition(t.name, day))]
    loads = [t.name for t in touched] + ([DEADLETTER_TABLE] if writes is None or DEADLETTER_TABLE in writes else [])
    # each table's log loaded once, all of them first and in threads, for the sync, the commit and the count
    with store.loaded_once(loads, threads=store.commit_threads):
        sync_message_tables(store, touched)  # created / evolved as the catalog says
        commits = {t.name: written.get(t.name, []) for t in touched}
        if writes is None or DEADLETTER_TABLE in writes:
            ensure_deadletter(store)
            commits[DEADLETTER_TABLE] = written.get(DEADLETTER_TABLE, [])
        stray = set(written) - set(commits)
        if stray:
            raise StorageError(f"files written for tables this run does not commit: {sorted(stray)}")
        with ThreadPoolExecutor(min(store.commit_threads, max(len(commits), 1))) as pool:
            committed = dict(zip(commits, pool.map(
                lambda item: store.commit_partition(item[0], item[1], PARTITION_COLUMN, day), commits.items())))
        result.versions = {name: c.version for name, c in committed.items()}
        result.stored = {name: c.rows for name, c in committed.items()}
        result.partition_files = {name: c.files for name, c in committed.items()}
    progress(f"{day}: committed {len(commits)} table(s)")

    for table in touched:
        result.written.append(table.name)
        result.tables[table.message.xid] = rows.get(table.name, 0)
        if table.name in merged.tallies:
            result.quality[table.name] = table_quality(table, merged.tallies[table.name], plan.strict)
    if DEADLETTER_TABLE in commits:
        result.written.append(DEADLETTER_TABLE)
    return result


def ensure_deadletter(store: DeltaStore) -> None:
    """The dead-letter table, created, or given the columns added since it was."""
    if not store.exists(DEADLETTER_TABLE):
        store.create(DEADLETTER_TABLE, DEADLETTER_SCHEMA, partition_by=[PARTITION_COLUMN],
                     description="Landed records no message table takes, with the reason.")
    elif set(DEADLETTER_SCHEMA.fieldNames()) - set(store.spark_schema(DEADLETTER_TABLE).fieldNames()):
        store.add_columns(DEADLETTER_TABLE, DEADLETTER_SCHEMA)


def conservation(store: DeltaStore, tables: Sequence[MessageTable], day: dt.date, records: int,
                 stored: dict[str, int | None] | None = None) -> tuple[bool, dict]:
    """Records read == rows of `day` in the per-message tables + dead-letter rows (row counts
    from each table's Delta log). `stored`: the counts of tables the run just committed, from the
    snapshot each commit left loaded (PartitionResult.stored): their logs are not read again."""
    stored = {n: rows for n, rows in (stored or {}).items() if rows is not None}
    names = [n for n in [t.name for t in tables] + [DEADLETTER_TABLE]
             if n not in stored and store.has_partition(n, day) and store.exists(n)]
    with ThreadPoolExecutor(store.commit_threads) as pool:  # one Delta log read per table
        counts = dict(zip(names, pool.map(lambda n: store.partition_rows(n, PARTITION_COLUMN, day), names)))
    counts.update({n: rows for n, rows in stored.items() if rows or store.has_partition(n, day)})
    stored = sum(counts.values())
    return stored == records, {"records_read": records, "rows_stored": stored, "per_table": counts}
