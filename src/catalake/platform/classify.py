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
import uuid
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

from . import recovery
from .catalog.model import Catalog
from .classifier import Plan, TaskResult, classifier_for
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from . import uris
from .landing import Piece, display_path, list_day, plan_tasks, tiling_faults
from .message_table import PARTITION_COLUMN, MessageTable, sync_message_tables
from .expectations import suite_expectations
from .quality import ExpectationResult, merge_tallies, results
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
    skipped: list[str] = field(default_factory=list)  # landing paths not read (symbolic links)
    ignored: list[str] = field(default_factory=list)  # landing paths that are not landed files
    landing: str = "read"  # "missing": no folder of the day; "empty": its folders hold no file
    tasks: int = 0

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


def _summary(result: TaskResult) -> dict:
    return {"records": result.records, "files": result.files, "rows": result.rows, "tallies": result.tallies,
            "deadletter": result.deadletter, "per_file": result.per_file}


def classify_partition(
    spark: SparkSession,
    store: DeltaStore,
    catalog: Catalog,
    tables: Sequence[MessageTable],
    landing: str,
    day: dt.date,
    *,
    only: set[str] | None = None,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    progress=lambda message: None,
) -> PartitionResult:
    """Classify and write one day. `only`: table names to write (a subset run); None = all,
    the dead-letter table included."""
    ingested_at = ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    plan = Plan(tuple(tables), store.root, day, ingested_at, uuid.uuid4().hex[:12], frozenset(only) if only is not None else None, strict,
                storage=uris.storage_environment())
    listing = list_day(landing, day)
    files = listing.files
    for path in listing.skipped:
        progress(f"{day}: skipped {display_path(path)}: a symbolic link (the landing root is a jail; links are not followed)")
    for path in listing.ignored:
        progress(f"{day}: not read: {display_path(path)} (not a landed file: .jsonl, .jsonl.gz or .json)")
    if listing.missing:
        progress(f"{day}: WARNING: no folder of this day in the landing zone {uris.normalize(landing)} "
                 f"({day.isoformat()}/ or dt={day.isoformat()}/): nothing was read")
    tasks = plan_tasks(files, _parallelism(spark)) if files else []
    faults = tiling_faults(files, tasks)
    if faults:  # never expected: the planner cuts each file once, at line ends
        raise StorageError(f"{day}: the plan would not read every landed byte once: {'; '.join(faults[:5])}")
    progress(f"{day}: {len(files)} landed file(s) in {len(tasks)} task(s)")
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    # this run replaces the day's partitions: a stopped replay's commits are moot, and what
    # killed runs and replays of the day left is removed
    recovery.recover_day(store, day, names, replace=True, progress=progress)
    summaries = []
    with recovery.recorded(store.root, plan.run, day, kind="run"):
        try:
            if tasks:
                with _job_group(spark, f"catalake-classify-{day}", f"classify {day}: {len(tasks)} task(s)"):
                    rows = spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(_run_tasks(plan, tasks), OUTPUT).collect()
                if sorted(r["task"] for r in rows) != list(range(len(tasks))):
                    raise StorageError(f"{day}: task results {sorted(r['task'] for r in rows)} for {len(tasks)} task(s)")
                summaries = [json.loads(r["json"]) for r in rows]
            result = _commit(store, plan, tables, summaries, progress)
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
        versions = pool.map(lambda item: store.commit_partition(item[0], item[1], PARTITION_COLUMN, day), commits.items())
        result.versions = dict(zip(commits, versions))
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


def conservation(store: DeltaStore, tables: Sequence[MessageTable], day: dt.date, records: int) -> tuple[bool, dict]:
    """Records read == rows of `day` in the per-message tables + dead-letter rows (row counts
    from each table's Delta log)."""
    names = [n for n in [t.name for t in tables] + [DEADLETTER_TABLE] if _has_partition(store, n, day) and store.exists(n)]
    with ThreadPoolExecutor(COMMIT_THREADS) as pool:  # one Delta log read per table
        counts = dict(zip(names, pool.map(lambda n: store.partition_rows(n, PARTITION_COLUMN, day), names)))
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
