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
from pyspark.sql import SparkSession

from . import increments, recovery
from .catalog.model import Catalog
from .classifier import Plan, classifier_for
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from . import layouts, uris
from .landing import Piece, display_path, list_day, pack, plan_tasks, tiling_faults
from .message_table import PARTITION_COLUMN, MessageTable, sync_message_tables
from .expectations import suite_expectations
from .quality import Counts, ExpectationResult, merge_tallies, results
from .spark import is_session
from .sparkjobs import TASK_OUTPUT, job_group, parallelism
from .storage import DeltaStore, StorageError

COMMIT_THREADS = 8


@dataclass
class TableQuality:
    """A table's expectations in one partition, from the classification pass."""

    table: MessageTable
    results: list[ExpectationResult]
    types: Counts  # the classifier's `type` rule: payload values of the wrong JSON kind
    rejected: int  # records dead-lettered for breaking a rule (schema_violation, malformed_payload)

    @property
    def matched(self) -> int:
        return self.types.evaluated


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
    kind: str = "full"  # or "incremental" (classify_increment)
    fallback: str | None = None  # why an incremental run was a full run
    read: dict = field(default_factory=dict)  # files and bytes the run read
    rows_added: dict[str, int] = field(default_factory=dict)  # table name -> rows an increment appended
    day_records: int | None = None  # records the day's runs read, all increments together

    @property
    def records_of_day(self) -> int:
        return self.records if self.day_records is None else self.day_records

    def as_json(self) -> dict:
        out = {"partition": self.partition, "landing": self.landing, "records": self.records,
               "tables": self.tables, "deadletter": self.deadletter}
        if self.kind == "incremental" or self.fallback:
            out.update(kind=self.kind, fallback=self.fallback, records_of_day=self.records_of_day, read=self.read)
        return out


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
                yield pa.record_batch([pa.array([task], pa.int32()), pa.array([json.dumps(result.summary())])],
                                      names=["task", "json"])

    return run


def _local_task(work: tuple[Plan, int, list[Piece]]) -> dict:
    """One task in a local worker process (run_local)."""
    plan, task, pieces = work
    return classifier_for(plan).run(f"{task}.0", pieces).summary()


IN_PROCESS_BYTES = 8 << 20  # tasks reading at most this much run in the calling process


def run_local(plan: Plan, tasks: list[list[Piece]]) -> list[dict]:
    """The tasks of a small day in local Python processes: the same classifier and files as the
    Spark job, without waiting for a JVM to start (spawned, not forked: the driver holds
    threads, and delta-rs' runtime does not survive a fork). A few megabytes (an increment, a
    quiet day) are classified in this process: starting two interpreters would cost more."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if sum(p.length for t in tasks for p in t) <= IN_PROCESS_BYTES:
        return [_local_task((plan, i, t)) for i, t in enumerate(tasks)]

    workers = min(len(tasks), os.cpu_count() or 2)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_local_task, [(plan, i, t) for i, t in enumerate(tasks)]))


@dataclass
class Merged:
    """The tasks' summaries of one run added up, each task counted once."""

    records: int = 0
    tasks: int = 0
    written: dict[str, list] = field(default_factory=dict)  # table -> Parquet files written
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows
    tallies: dict[str, list] = field(default_factory=dict)  # table -> the tasks' quality tallies
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    per_file: dict[str, int] = field(default_factory=dict)  # landed file -> records read
    moved: dict[str, int] = field(default_factory=dict)  # replay: "<old reason> -> <table>" -> rows

    @classmethod
    def of(cls, summaries: list[dict]) -> "Merged":
        merged = cls(tasks=len(summaries))
        for s in summaries:
            merged.records += s["records"]
            for name, files in s["files"].items():
                merged.written.setdefault(name, []).extend(files)
            for name, tally in s["tallies"].items():
                merged.tallies.setdefault(name, []).append(tally)
            for counts, into in ((s["rows"], merged.rows), (s["deadletter"], merged.deadletter), (s["per_file"], merged.per_file),
                                 (s["moved"], merged.moved)):
                for key, n in counts.items():
                    into[key] = into.get(key, 0) + n
        return merged

    def kept(self) -> dict:
        """What the day's ledger keeps of the run (increments.py): counts and quality tallies."""
        return {"records": self.records, "rows": self.rows, "deadletter": self.deadletter, "tallies": self.tallies}


def table_quality(table: MessageTable, tallies: list, strict: bool) -> TableQuality:
    """A table's expectations in a partition, from the tasks' tallies merged."""
    expectations = suite_expectations(table, strict)
    counts, types, rejected = merge_tallies(tallies, len(expectations))
    return TableQuality(table, results(expectations, counts), types, rejected)


def execute(plan: Plan, tasks: list[list[Piece]], session: SparkSession | None) -> Merged:
    """The tasks' summaries merged: one Spark job, or local processes when there is no session."""
    if not tasks:
        return Merged()
    if session is None:
        return Merged.of(run_local(plan, tasks))
    with job_group(session, f"catalake-classify-{plan.day}", f"classify {plan.day}: {len(tasks)} task(s)"):
        rows = session.range(0, len(tasks), 1, len(tasks)).mapInArrow(_run_tasks(plan, tasks), TASK_OUTPUT).collect()
    if sorted(r["task"] for r in rows) != list(range(len(tasks))):
        raise StorageError(f"{plan.day}: task results {sorted(r['task'] for r in rows)} for {len(tasks)} task(s)")
    return Merged.of([json.loads(r["json"]) for r in rows])


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
                storage=uris.storage_environment(), landing=uris.normalize(landing))
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
    tasks = plan_tasks(files, (os.cpu_count() or 2) if local else parallelism(session)) if files else []
    faults = tiling_faults(files, tasks)
    if faults:  # never expected: the planner cuts each file once, at line ends
        raise StorageError(f"{day}: the plan would not read every landed byte once: {'; '.join(faults[:5])}")
    progress(f"{day}: {len(files)} landed file(s) in {len(tasks)} task(s)"
             + (" in local processes (a small day: no Spark job)" if local and tasks else ""))
    # this run replaces the day's partitions: a stopped replay's commits are moot
    with _day_run(store, plan, tables, replace=True, sweep=True, progress=progress):
        clock = time.perf_counter()
        merged = execute(plan, tasks, session)
        seconds["job"] = time.perf_counter() - clock
        clock = time.perf_counter()
        increments.forget(store.root, day)  # the day is read anew: what increments read is moot
        result = _commit(store, plan, tables, merged, progress)
        if only is None:  # every table now holds what these files hold: increments go on from here
            increments.record_full(store.root, day, plan.run, files, merged.kept())
        seconds["commits"] = time.perf_counter() - clock
        result.seconds = {k: round(v, 3) for k, v in seconds.items()}
        result.skipped = [display_path(p) for p in listing.skipped]
        result.ignored = [display_path(p) for p in listing.ignored]
        result.landing = "missing" if listing.missing else ("read" if files else "empty")
        return result


@contextmanager
def _day_run(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], *, replace: bool, sweep: bool, progress):
    """A run of the day, recorded while it runs (recovery.py): what killed runs and replays of the
    day left is removed first (`replace`: a stopped replay's journal is dropped too). The files of
    this run no commit took are removed after a failure, and after success when `sweep` (Spark
    task attempts that failed or ran twice; local tasks run once)."""
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    recovery.recover_day(store, plan.day, names, replace=replace, progress=progress)
    with recovery.recorded(store.root, plan.run, plan.day, kind="run"):
        try:
            yield
        except BaseException:
            recovery.remove_orphans(store, plan.run, plan.day, names)
            raise
        if sweep:
            recovery.remove_orphans(store, plan.run, plan.day, names)


def _commit(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: Merged, progress) -> PartitionResult:
    day = plan.day
    result = PartitionResult(partition=day.isoformat(), records=merged.records, tasks=merged.tasks,
                             deadletter=merged.deadletter, files=merged.per_file)
    rows, written = merged.rows, merged.written
    progress(f"{day}: {result.records} record(s) classified in {merged.tasks} task(s)")

    writes = plan.write
    # every table the partition feeds, and every table that held rows of it before (emptied)
    with store.loaded_once():  # each table's log loaded once for the sync, the commit and the count
        touched = [t for t in tables if (writes is None or t.name in writes) and (t.name in rows or store.has_partition(t.name, day))]
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
        if table.name in merged.tallies:
            result.quality[table.name] = table_quality(table, merged.tallies[table.name], plan.strict)
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
             if n not in stored and store.has_partition(n, day) and store.exists(n)]
    with ThreadPoolExecutor(COMMIT_THREADS) as pool:  # one Delta log read per table
        counts = dict(zip(names, pool.map(lambda n: store.partition_rows(n, PARTITION_COLUMN, day), names)))
    counts.update({n: rows for n, rows in stored.items() if rows or store.has_partition(n, day)})
    stored = sum(counts.values())
    return stored == records, {"records_read": records, "rows_stored": stored, "per_table": counts}


# -- incremental runs (increments.py)

def classify_increment(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    catalog: Catalog,
    tables: Sequence[MessageTable],
    landing: str,
    day: dt.date,
    *,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    local_bytes: int = 0,
    layout: str = "day",
    progress=lambda message: None,
) -> PartitionResult:
    """Classify what landed for `day` since its last run and append it to the tables: new files
    and the new complete lines of JSON lines files that grew (increments.py). A day without a
    recorded run, or whose files changed otherwise, gets a full run (classify_partition), and
    the result says why (`fallback`). The quality results and `stored` are the day's, over all
    its increments; `tables` counts the rows this increment added."""
    clock = time.perf_counter()
    ledger = increments.load(store.root, day)
    listing = list_day(landing, day, layout)
    pending = next((i for i in ledger["increments"] if not i["done"]), None) if ledger else None
    why = "no run of the day is recorded" if ledger is None else None
    pieces, reads = [], {}
    if ledger is not None and pending is None:
        pieces, reads, why = increments.plan(ledger, listing.files)
    if why is not None:
        progress(f"{day}: a full run instead of an increment: {why}")
        result = classify_partition(spark, store, catalog, tables, landing, day, strict=strict, ingested_at=ingested_at,
                                    local_bytes=local_bytes, layout=layout, progress=progress)
        result.kind, result.fallback = "full", why
        result.read = {"files": len(listing.files), "bytes": sum(f.size for f in listing.files)}
        return result
    ingested_at = ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    plan = Plan(tuple(tables), store.root, day, ingested_at, uuid.uuid4().hex[:12], None, strict,
                storage=uris.storage_environment(), landing=uris.normalize(landing))
    if pending is not None:  # a run stopped before it finished: its very pieces again
        progress(f"{day}: finishing increment {pending['n']} of run {pending['run']}, stopped before its commits")
        entry = pending
        pieces = [increments.from_json(p) for p in entry["pieces"]]
    elif pieces:
        entry = {"n": len(ledger["increments"]) + 1, "kind": "incremental", "run": plan.run, "reads": reads,
                 "pieces": [increments.as_json(p) for p in pieces], "done": False}
        ledger["increments"].append(entry)
        increments.save(store.root, day, ledger)  # before any commit: a stopped run is finished from here
    seconds = {"listing": time.perf_counter() - clock}
    result = PartitionResult(partition=day.isoformat(), records=0)
    result.kind = "incremental"
    result.landing = "missing" if listing.missing else ("read" if listing.files else "empty")
    result.read = {"files": len({p.path for p in pieces}), "bytes": sum(p.length for p in pieces)}
    if pieces:
        size = result.read["bytes"]
        local = size <= local_bytes
        session = None if local else (spark if is_session(spark) else spark())
        tasks = pack([(p.length, p) for p in pieces],
                     (os.cpu_count() or 2) if local else parallelism(session))
        progress(f"{day}: increment {entry['n']}: {result.read['files']} file(s), {size} new byte(s) in {len(tasks)} task(s)")
        with _day_run(store, plan, tables, replace=False, sweep=session is not None, progress=progress):
            clock = time.perf_counter()
            merged = execute(plan, tasks, session)
            seconds["job"] = time.perf_counter() - clock
            clock = time.perf_counter()
            _append(store, plan, tables, merged, increments.app_id(day, ledger["epoch"]), entry["n"], result)
            entry.update(merged.kept(), done=True)
            increments.save(store.root, day, ledger)
            seconds["commits"] = time.perf_counter() - clock
        result.records = entry["records"]
        result.tasks = len(tasks)
    else:
        progress(f"{day}: nothing new since the last run")
    result.day_records = sum(i.get("records", 0) for i in ledger["increments"] if i["done"])
    _day_quality(plan, tables, ledger, result)
    result.seconds = {k: round(v, 3) for k, v in seconds.items()}
    return result


def _append(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: Merged, app: str, n: int,
            result: PartitionResult) -> None:
    """One Delta append per table the increment fed (dead letters included), each carrying the
    increment as application transaction `app` version `n`: a table whose log has it already
    (a stopped run committed it) is not appended to again."""
    written = merged.written
    result.rows_added, result.deadletter, result.files = merged.rows, merged.deadletter, merged.per_file
    fed = [t for t in tables if t.name in written]
    with store.loaded_once():  # each table's log loaded once for the sync, the check and the append
        sync_message_tables(store, fed)
        if DEADLETTER_TABLE in written:
            _ensure_deadletter(store)
        _append_each(store, plan, written, app, n, result)
    for table in fed:
        result.written.append(table.name)
        result.tables[table.message.xid] = result.rows_added.get(table.name, 0)
    if DEADLETTER_TABLE in written:
        result.written.append(DEADLETTER_TABLE)


def _append_each(store: DeltaStore, plan: Plan, written: dict[str, list], app: str, n: int, result: PartitionResult) -> None:
    day = plan.day

    def append(name: str):
        done = store.transaction_version(name, app)
        if done is not None and done >= n:
            store.remove_uncommitted(plan.run, day, [name])  # this run's copy of rows the log has
            return name, None
        return name, store.append_partition(name, written[name], PARTITION_COLUMN, day, transaction=(app, n))

    with ThreadPoolExecutor(min(COMMIT_THREADS, max(len(written), 1))) as pool:
        for name, committed in pool.map(append, list(written)):
            if committed is not None:
                result.versions[name] = committed.version
            result.stored[name] = committed.rows if committed is not None else None  # None: counted from the log


def _day_quality(plan: Plan, tables: Sequence[MessageTable], ledger: dict, result: PartitionResult) -> None:
    """Each table's expectations over the whole day: the tallies of all its increments merged."""
    tallies: dict[str, list] = {}
    for increment in ledger["increments"]:
        if increment["done"]:
            for name, found in increment.get("tallies", {}).items():
                tallies.setdefault(name, []).extend(found)
    for table in tables:
        if table.name in tallies and table.name in result.written:
            result.quality[table.name] = table_quality(table, tallies[table.name], plan.strict)
