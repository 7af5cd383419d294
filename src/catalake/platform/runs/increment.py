"""An incremental run of a day: what landed since its last run, appended to the tables.

The day's ledger (ledger.py) says what its runs have read; an increment classifies only the new
files and the new complete lines of JSON lines files that grew, in the same tasks as a full run
(tasks.py), and appends their files to the tables, each append carrying the increment as a Delta
application transaction so that a stopped increment is finished, never committed twice. A day
that cannot be continued gets a full run (day.py).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from pyspark.sql import SparkSession

from ..defaults import LAYOUT
from ..landing.listing import DayListing, check_root, list_day
from ..landing.planning import Piece, pack
from ..uris import Location
from ..warehouse.deadletters import DEADLETTER_TABLE
from ..warehouse.files import PARTITION_COLUMN
from ..warehouse.message_tables import MessageTable, sync_message_tables
from ..warehouse.store import DeltaStore
from . import ledger
from .day import classify_partition, day_run, ensure_deadletter
from .plan import Plan, new_plan
from .results import Merged, PartitionResult, table_quality
from .tasks import engine_for, execute, parallelism


def classify_increment(
    spark: SparkSession | Callable[[], SparkSession],
    store: DeltaStore,
    tables: Sequence[MessageTable],
    landing: str | Location,
    day: dt.date,
    *,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    local_bytes: int = 0,
    layout: str = LAYOUT,
    compiled: bool = True,
    progress=lambda message: None,
) -> PartitionResult:
    """Classify what landed for `day` since its last run and append it to the tables: new files
    and the new complete lines of JSON lines files that grew (ledger.py). A day without a
    recorded run, or whose files changed otherwise, gets a full run (classify_partition), and
    the result says why (`fallback`). The quality results and `stored` are the day's, over all
    its increments; `tables` counts the rows this increment added."""
    clock = time.perf_counter()
    day_ledger = ledger.load(store.location, day)
    landing = check_root(landing)  # the root, opened once
    listing = list_day(landing, day, layout)
    pending, pieces, reads, why = _to_read(landing, day_ledger, listing)
    if why is not None:
        progress(f"{day}: a full run instead of an increment: {why}")
        result = classify_partition(spark, store, tables, landing, day, strict=strict, ingested_at=ingested_at,
                                    local_bytes=local_bytes, layout=layout, compiled=compiled, progress=progress)
        result.kind, result.fallback = "full", why
        result.read = {"files": len(listing.files), "bytes": sum(f.size for f in listing.files)}
        return result
    plan = new_plan(tables, store.location, day, ingested_at=ingested_at, write=None, strict=strict,
                    landing=landing, compiled=compiled)
    entry, pieces = _entry(store, plan, day_ledger, pending, pieces, reads, progress)
    seconds = {"listing": time.perf_counter() - clock}
    result = _increment_result(day, listing, pieces)
    if pieces:
        _run_increment(spark, store, tables, plan, pieces, day_ledger, entry, local_bytes, result, seconds, progress)
    else:
        progress(f"{day}: nothing new since the last run")
    result.day_records = sum(i.get("records", 0) for i in day_ledger["increments"] if i["done"])
    _day_quality(plan, tables, day_ledger, result)
    result.seconds = {k: round(v, 3) for k, v in seconds.items()}
    return result


def _to_read(landing: Location, day_ledger: dict | None,
             listing: DayListing) -> tuple[dict | None, list[Piece], dict, str | None]:
    """What the increment reads: the entry of an increment stopped before its commits (its
    pieces are read again), or the new pieces and what they read of each file (ledger.plan);
    or why the day gets a full run instead."""
    pending = next((i for i in day_ledger["increments"] if not i["done"]), None) if day_ledger else None
    why = "no run of the day is recorded" if day_ledger is None else None
    pieces, reads = [], {}
    if day_ledger is not None and pending is None:
        pieces, reads, why = ledger.plan(landing, day_ledger, listing.files)
    return pending, pieces, reads, why


def _entry(store: DeltaStore, plan: Plan, day_ledger: dict, pending: dict | None, pieces: list[Piece], reads: dict,
           progress) -> tuple[dict | None, list[Piece]]:
    """The ledger's entry of this increment and its pieces: the stopped one's again, or a new
    entry saved before any commit (None: nothing new to read)."""
    day = plan.day
    entry = None
    if pending is not None:  # a run stopped before it finished: its very pieces again
        progress(f"{day}: finishing increment {pending['n']} of run {pending['run']}, stopped before its commits")
        entry = pending
        pieces = [ledger.from_json(p) for p in entry["pieces"]]
    elif pieces:
        entry = {"n": len(day_ledger["increments"]) + 1, "kind": "incremental", "run": plan.run, "reads": reads,
                 "pieces": [ledger.as_json(p) for p in pieces], "done": False}
        day_ledger["increments"].append(entry)
        ledger.save(store.location, day, day_ledger)  # before any commit: a stopped run is finished from here
    return entry, pieces


def _increment_result(day: dt.date, listing: DayListing, pieces: list[Piece]) -> PartitionResult:
    """The increment's result before it runs: what the landing held and what it reads."""
    result = PartitionResult(partition=day.isoformat(), records=0)
    result.kind = "incremental"
    result.landing = "missing" if listing.missing else ("read" if listing.files else "empty")
    result.read = {"files": len({p.path for p in pieces}), "bytes": sum(p.length for p in pieces)}
    return result


def _run_increment(spark, store: DeltaStore, tables: Sequence[MessageTable], plan: Plan, pieces: list[Piece],
                   day_ledger: dict, entry: dict, local_bytes: int, result: PartitionResult,
                   seconds: dict[str, float], progress) -> None:
    """The pieces classified (one Spark job, or local processes for a small increment) and
    appended (_append), then the ledger's entry saved as done."""
    day = plan.day
    size = result.read["bytes"]
    result.engine, session = engine_for(size, local_bytes, spark)
    tasks = pack([(p.length, p) for p in pieces],
                 parallelism(session) if session is not None else (os.cpu_count() or 2))
    progress(f"{day}: increment {entry['n']}: {result.read['files']} file(s), {size} new byte(s) in {len(tasks)} "
             f"task(s) on {result.engine.describe()}")
    with day_run(store, plan, tables, replace=False, sweep=session is not None, progress=progress):
        clock = time.perf_counter()
        merged = execute(plan, [[(day, task)] for task in tasks], session).get(day) or Merged()
        seconds["job"] = time.perf_counter() - clock
        clock = time.perf_counter()
        _append(store, plan, tables, merged, ledger.app_id(day, day_ledger["epoch"]), entry["n"], result,
                seconds=seconds)
        entry.update(merged.kept(), done=True)
        ledger.save(store.location, day, day_ledger)
        seconds["commits"] = time.perf_counter() - clock
    result.records = entry["records"]
    result.tasks = len(tasks)


def _append(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: Merged, app: str, n: int,
            result: PartitionResult, seconds: dict[str, float]) -> None:
    """One Delta append per table the increment fed (dead letters included), each carrying the
    increment as application transaction `app` version `n`: a table whose log has it already (a
    stopped run committed it, or another run of the same range did first) is not appended to
    again. Delta's conflict check covers only commits after the snapshot a commit was made
    from, so the snapshot itself is looked at first."""
    written = merged.written
    result.rows_added, result.deadletter, result.files = merged.rows, merged.deadletter, merged.per_file
    fed = [t for t in tables if t.name in written]
    # each table's log loaded once, all of them first and in threads, for the sync, the check and the append
    clock = time.perf_counter()
    with store.loaded_once(list(written), threads=store.commit_threads):
        seconds["logs"] = time.perf_counter() - clock
        sync_message_tables(store, fed)
        if DEADLETTER_TABLE in written:
            ensure_deadletter(store)
        seconds["sync"] = time.perf_counter() - clock - seconds["logs"]
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

    with ThreadPoolExecutor(min(store.commit_threads, max(len(written), 1))) as pool:
        for name, committed in pool.map(append, list(written)):
            if committed is not None:
                result.versions[name] = committed.version
                result.partition_files[name] = committed.files
            result.stored[name] = committed.rows if committed is not None else None  # None: counted from the log


def _day_quality(plan: Plan, tables: Sequence[MessageTable], day_ledger: dict, result: PartitionResult) -> None:
    """Each table's expectations over the whole day: the tallies of all its increments merged."""
    tallies: dict[str, list] = {}
    for increment in day_ledger["increments"]:
        if increment["done"]:
            for name, found in increment.get("tallies", {}).items():
                tallies.setdefault(name, []).extend(found)
    for table in tables:
        if table.name in tallies and table.name in result.written:
            result.quality[table.name] = table_quality(table, tallies[table.name], plan.strict)
