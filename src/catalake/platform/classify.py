"""One partition run: landed records -> per-message tables, the dead-letter table, quality results.

One Spark job does the day, whatever the number of tables: the driver cuts the day's files into
tasks (landing.plan_tasks), and each task, on an executor, classifies its records and writes
every table's Parquet files for them straight into the tables' partition folders
(classifier.py). What comes back to the driver is small: per task and table the files written,
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
import json
import os
import time
import uuid
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

from . import recovery
from .catalog.model import Catalog
from .classifier import Plan, TaskResult, classifier_for
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from . import layouts, uris
from .landing import Piece, display_path, list_day, plan_tasks, tiling_faults
from .message_table import PARTITION_COLUMN, MessageTable, sync_message_tables
from .expectations import suite_expectations
from .quality import ExpectationResult, merge_tallies, results
from .spark import is_session
from .storage import DeltaStore, StorageError

OUTPUT = "task int, json string"
COMMIT_THREADS = 8


@dataclass
class TableQuality:
    """A table's expectations in one partition, from the classification pass."""

    table: MessageTable
    results: list[ExpectationResult]
    types: list  # [evaluated, missing, unexpected, examples] of the `type` rule
    rejected: int  # records dead-lettered for breaking a rule (schema_violation, malformed_payload)

    @property
    def matched(self) -> int:
        return self.types[0]


@dataclass
class PartitionResult:
    partition: str
    records: int
    tables: dict[str, int] = field(default_factory=dict)  # message xid -> rows written
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    written: list[str] = field(default_factory=list)  # warehouse table names overwritten
    quality: dict[str, TableQuality] = field(default_factory=dict)  # table name -> expectations
    files: dict[str, int] = field(default_factory=dict)  # landed file -> records read
    versions: dict[str, int] = field(default_factory=dict)  # table name -> Delta version committed
    stored: dict[str, int | None] = field(default_factory=dict)  # table name -> the day's rows after its commit
    skipped: list[str] = field(default_factory=list)  # landing paths not read (symbolic links)
    ignored: list[str] = field(default_factory=list)  # landing paths that are not landed files
    landing: str = "read"  # "missing": no folder of the day; "empty": its folders hold no file
    tasks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds (listing, job, commits)

    def as_json(self) -> dict:
        return {"partition": self.partition, "landing": self.landing, "records": self.records,
                "tables": self.tables, "deadletter": self.deadletter}


def _has_partition(store: DeltaStore, name: str, day: dt.date) -> bool:
    """Whether the table may hold rows of `day` (a cheap directory check on local warehouses;
    a false positive only costs an overwrite with nothing)."""
    filesystem, path = uris.filesystem(uris.join(store.path(name), f"{PARTITION_COLUMN}={day.isoformat()}"))
    return filesystem.get_file_info(path).type == pafs.FileType.Directory


def _parallelism(spark: SparkSession) -> int:
    try:
        return max(int(spark.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return os.cpu_count() or 2


@contextmanager
def _job_group(spark: SparkSession, group: str, description: str):
    """The pass's Spark job named in the Spark UI and event log (classic Spark only)."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        yield
        return
    context.setJobGroup(group, description)
    try:
        yield
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)


def _run_tasks(plan: Plan, tasks: list[list[Piece]]):
    """The function of the Spark job: task ids in, one JSON summary per task out."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        classifier = classifier_for(plan)
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        for batch in batches:
            for task in batch.column(0).to_pylist():
                result = classifier.run(f"{task}.{attempt}", tasks[task])
                yield pa.record_batch([pa.array([task], pa.int32()), pa.array([json.dumps(_summary(result))])],
                                      names=["task", "json"])

    return run


def _local_task(work: tuple[Plan, int, list[Piece]]) -> dict:
    """One task in a local worker process (run_local)."""
    plan, task, pieces = work
    return _summary(classifier_for(plan).run(f"{task}.0", pieces))


def run_local(plan: Plan, tasks: list[list[Piece]]) -> list[dict]:
    """The tasks of a small day in local Python processes: the same classifier and files as the
    Spark job, without waiting for a JVM to start (spawned, not forked: the driver holds
    threads, and delta-rs' runtime does not survive a fork)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = min(len(tasks), os.cpu_count() or 2)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_local_task, [(plan, i, t) for i, t in enumerate(tasks)]))


def _summary(result: TaskResult) -> dict:
    return {"records": result.records, "files": result.files, "rows": result.rows, "tallies": result.tallies,
            "deadletter": result.deadletter, "per_file": result.per_file}


def classify_partition(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    catalog: Catalog,
    tables: Sequence[MessageTable],
    landing: str,
    day: dt.date,
    *,
    only: set[str] | None = None,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    local_bytes: int = 0,
    layout: str = "day",
    progress=lambda message: None,
) -> PartitionResult:
    """Classify and write one day. `only`: table names to write (a subset run); None = all,
    the dead-letter table included. A day of at most `local_bytes` landed bytes is classified
    by local Python processes instead of a Spark job (run_local), and `spark` (the session, or a
    function starting it) is then not started."""
    ingested_at = ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    clock = time.perf_counter()
    plan = Plan(tuple(tables), store.root, day, ingested_at, uuid.uuid4().hex[:12], frozenset(only) if only is not None else None, strict,
                storage=uris.storage_environment())
    where = layouts.parse(layout)
    listing = list_day(landing, day, where)
    files = listing.files
    for path in listing.skipped:
        progress(f"{day}: skipped {display_path(path)}: a symbolic link (the landing root is a jail; links are not followed)")
    for path in listing.ignored:
        progress(f"{day}: not read: {display_path(path)}")
    if listing.missing:
        progress(f"{day}: WARNING: no folder of this day in the landing zone {uris.normalize(landing)} "
                 f"({where.describe(day)}, layout {where.name}): nothing was read")
    local = sum(f.size for f in files) <= local_bytes
    seconds = {"listing": time.perf_counter() - clock}
    clock = time.perf_counter()
    session = None if local else (spark if is_session(spark) else spark())
    seconds["spark_start"] = time.perf_counter() - clock  # waiting for the session (started early by the CLI)
    tasks = plan_tasks(files, (os.cpu_count() or 2) if local else _parallelism(session)) if files else []
    faults = tiling_faults(files, tasks)
    if faults:  # never expected: the planner cuts each file once, at line ends
        raise StorageError(f"{day}: the plan would not read every landed byte once: {'; '.join(faults[:5])}")
    progress(f"{day}: {len(files)} landed file(s) in {len(tasks)} task(s)"
             + (" in local processes (a small day: no Spark job)" if local and tasks else ""))
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    # this run replaces the day's partitions: a stopped replay's commits are moot, and what
    # killed runs and replays of the day left is removed
    recovery.recover_day(store, day, names, replace=True, progress=progress)
    summaries = []
    with recovery.recorded(store.root, plan.run, day, kind="run"):
        try:
            clock = time.perf_counter()
            if tasks and local:
                summaries = run_local(plan, tasks)
            elif tasks:
                with _job_group(session, f"catalake-classify-{day}", f"classify {day}: {len(tasks)} task(s)"):
                    rows = session.range(0, len(tasks), 1, len(tasks)).mapInArrow(_run_tasks(plan, tasks), OUTPUT).collect()
                if sorted(r["task"] for r in rows) != list(range(len(tasks))):
                    raise StorageError(f"{day}: task results {sorted(r['task'] for r in rows)} for {len(tasks)} task(s)")
                summaries = [json.loads(r["json"]) for r in rows]
            seconds["job"] = time.perf_counter() - clock
            clock = time.perf_counter()
            result = _commit(store, plan, tables, summaries, progress)
            seconds["commits"] = time.perf_counter() - clock
            result.seconds = {k: round(v, 3) for k, v in seconds.items()}
            result.skipped = [display_path(p) for p in listing.skipped]
            result.ignored = [display_path(p) for p in listing.ignored]
            result.landing = "missing" if listing.missing else ("read" if files else "empty")
            return result
        finally:
            # files of this run no commit took: failed or duplicate task attempts, or a failed run
            recovery.remove_orphans(store, plan.run, day, names)


def _commit(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], summaries: list[dict], progress) -> PartitionResult:
    day = plan.day
    result = PartitionResult(partition=day.isoformat(), records=sum(s["records"] for s in summaries), tasks=len(summaries))
    rows: dict[str, int] = {}
    tallies: dict[str, list] = {}
    written: dict[str, list] = {}
    for s in summaries:
        for name, files in s["files"].items():
            written.setdefault(name, []).extend(files)
        for name, n in s["rows"].items():
            rows[name] = rows.get(name, 0) + n
        for name, tally in s["tallies"].items():
            tallies.setdefault(name, []).append(tally)
        for reason, n in s["deadletter"].items():
            result.deadletter[reason] = result.deadletter.get(reason, 0) + n
        for path, n in s["per_file"].items():
            result.files[path] = result.files.get(path, 0) + n
    progress(f"{day}: {result.records} record(s) classified in {len(summaries)} task(s)")

    writes = plan.write
    # every table the partition feeds, and every table that held rows of it before (emptied)
    with store.loaded_once():  # each table's log loaded once for the sync, the commit and the count
        touched = [t for t in tables if (writes is None or t.name in writes) and (t.name in rows or _has_partition(store, t.name, day))]
        sync_message_tables(store, touched)  # created / evolved as the catalog says
        commits = {t.name: written.get(t.name, []) for t in touched}
        if writes is None or DEADLETTER_TABLE in writes:
            _ensure_deadletter(store)
            commits[DEADLETTER_TABLE] = written.get(DEADLETTER_TABLE, [])
        stray = set(written) - set(commits)
        if stray:
            raise StorageError(f"files written for tables this run does not commit: {sorted(stray)}")
        with ThreadPoolExecutor(min(COMMIT_THREADS, max(len(commits), 1))) as pool:
            committed = dict(zip(commits, pool.map(
                lambda item: store.commit_partition(item[0], item[1], PARTITION_COLUMN, day), commits.items())))
        result.versions = {name: c.version for name, c in committed.items()}
        result.stored = {name: c.rows for name, c in committed.items()}
    progress(f"{day}: committed {len(commits)} table(s)")

    for table in touched:
        result.written.append(table.name)
        result.tables[table.message.xid] = rows.get(table.name, 0)
        if table.name in tallies:
            expectations = suite_expectations(table, plan.strict)
            counts, types, rejected = merge_tallies(tallies[table.name], len(expectations))
            result.quality[table.name] = TableQuality(table, results(expectations, counts),
                                                      [types.evaluated, types.missing, types.unexpected, types.examples],
                                                      rejected)
    if DEADLETTER_TABLE in commits:
        result.written.append(DEADLETTER_TABLE)
    return result


def _ensure_deadletter(store: DeltaStore) -> None:
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
             if n not in stored and _has_partition(store, n, day) and store.exists(n)]
    with ThreadPoolExecutor(COMMIT_THREADS) as pool:  # one Delta log read per table
        counts = dict(zip(names, pool.map(lambda n: store.partition_rows(n, PARTITION_COLUMN, day), names)))
    counts.update({n: rows for n, rows in stored.items() if rows or _has_partition(store, n, day)})
    stored = sum(counts.values())
    return stored == records, {"records_read": records, "rows_stored": stored, "per_table": counts}


def _import_engine(batches):
    import pyarrow as pa

    from . import classifier  # noqa: F401 - what a partition run's workers import first

    for _ in batches:
        yield pa.record_batch([pa.array([0], pa.int32())], names=["ready"])


def warm_up(session: SparkSession) -> None:
    """One tiny job over every core: the JVM compiles its first plan and the Python workers start
    and import the engine, so the first real job of a run does not pay for it."""
    try:
        cores = max(int(session.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - Spark Connect: the server's workers are not ours to warm
        return
    session.range(0, cores, 1, cores).mapInArrow(_import_engine, "ready int").collect()
