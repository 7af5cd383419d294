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
from dataclasses import dataclass
from typing import Callable, Sequence

from pyspark.sql import SparkSession

from ..defaults import LAYOUT
from ..landing.listing import DayListing, check_root, list_day
from ..landing.planning import Piece, arrivals, pack
from ..uris import Location
from ..warehouse.appends import Tip, schema_key
from ..warehouse.deadletters import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from ..warehouse.files import PARTITION_COLUMN, PartFile
from ..warehouse.message_tables import MessageTable, sync_message_tables
from ..warehouse.store import DeltaStore
from . import ledger
from .cadence import EVERY_INCREMENT, Cadence
from .day import classify_partition, day_run, ensure_deadletter
from .plan import Plan, new_plan
from .results import Freshness, Merged, PartitionResult, table_quality
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
    cadence: Cadence = EVERY_INCREMENT,
    clock: Callable[[], float] = time.time,
    progress=lambda message: None,
) -> PartitionResult:
    """Classify what landed for `day` since its last run and append it to the tables: new files
    and the new complete lines of JSON lines files that grew (ledger.py). Each table fed is
    committed when it is due by `cadence` (cadence.py; by default every increment), else its
    files stay staged for a later increment; `clock`: the time now, in seconds since the epoch.
    A day without a recorded run, or whose files changed otherwise, gets a full run
    (classify_partition), and the result says why (`fallback`). The quality results and `stored`
    are the day's, over all its increments; `tables` counts the rows this increment added."""
    started = time.perf_counter()
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
    waiting = day_ledger.get("staged", {})
    targets = cadence.targets(tables)
    due_now = pending is None and not pieces and any(
        cadence.due(files, targets.get(name, cadence.target(None)), clock(), _took(day_ledger))
        for name, files in waiting.items())
    entry, pieces = _entry(store, plan, day_ledger, pending, pieces, reads, _landed(day_ledger, listing, pieces, clock),
                           due_now, progress)
    seconds = {"listing": time.perf_counter() - started}
    result = _increment_result(day, listing, pieces)
    if entry is not None:
        _run_increment(spark, store, tables, plan, pieces, arrivals(listing.files), day_ledger, entry, local_bytes,
                       result, seconds, _Timing(cadence, clock, started), progress)
        if pending is not None:
            _due_for_what_landed_since(store, landing, day, day_ledger, listing, clock, progress)
    else:
        progress(f"{day}: nothing new since the last run" + (f"; {len(waiting)} table(s) staged, none due"
                                                            if waiting else ""))
        _report_waiting(tables, day_ledger, cadence, clock(), result)
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


def _due_for_what_landed_since(store: DeltaStore, landing: Location, day: dt.date, day_ledger: dict,
                               listing: DayListing, clock, progress) -> None:
    """After a stopped increment was finished (its pieces only): when files landed after it
    planned, the day is due now, so that the landing sensor asks for the increment that reads
    them at its next look (a changed landing is what it asks for otherwise, and that one has
    been seen)."""
    more, _, why = ledger.plan(landing, day_ledger, listing.files)
    if more or why:
        day_ledger["next_due"] = clock()
        ledger.save(store.location, day, day_ledger)
        progress(f"{day}: {len({p.path for p in more}) if more else 'some'} file(s) landed after the "
                 "stopped increment: the next increment reads them (due now)")


def _entry(store: DeltaStore, plan: Plan, day_ledger: dict, pending: dict | None, pieces: list[Piece], reads: dict,
           landed: float, due: bool, progress) -> tuple[dict | None, list[Piece]]:
    """The ledger's entry of this increment and its pieces: the stopped one's again, or a new
    entry saved before any commit (None: nothing new to read and no staged table due). `landed`:
    when its oldest record landed."""
    day = plan.day
    entry = None
    if pending is not None:  # a run stopped before it finished: its very pieces again
        progress(f"{day}: finishing increment {pending['n']} of run {pending['run']}, stopped before its commits")
        entry = pending
        pieces = [ledger.from_json(p) for p in entry["pieces"]]
    elif pieces or due:
        entry = {"n": len(day_ledger["increments"]) + 1, "kind": "incremental", "run": plan.run, "reads": reads,
                 "pieces": [ledger.as_json(p) for p in pieces], "landed": landed, "done": False}
        day_ledger["increments"].append(entry)
        ledger.save(store.location, day, day_ledger)  # before any commit: a stopped run is finished from here
    return entry, pieces


def _landed(day_ledger: dict | None, listing: DayListing, pieces: list[Piece], clock) -> float:
    """When the oldest record of `pieces` landed, at the earliest (cadence.py): the modification
    time of its file as an earlier increment read it, or as listed now."""
    if not pieces:
        return clock()
    before = ledger.state(day_ledger) if day_ledger else {}
    listed = {f.path: f.modified_ns for f in listing.files}
    times = [(before.get(p.path) or {}).get("modified") or listed.get(p.path) for p in pieces]
    known = [t / 1e9 for t in times if t]
    return min(known) if len(known) == len(times) else clock()


def _took(day_ledger: dict) -> float:
    """The seconds the day's last finished increment took (the next one may take as long)."""
    done = [i for i in day_ledger["increments"] if i["done"] and i["kind"] == "incremental"]
    return float(done[-1].get("took", 0.0)) if done else 0.0


@dataclass(frozen=True)
class _Timing:
    cadence: Cadence
    clock: Callable[[], float]
    started: float  # perf_counter at the increment's start


def _increment_result(day: dt.date, listing: DayListing, pieces: list[Piece]) -> PartitionResult:
    """The increment's result before it runs: what the landing held and what it reads."""
    result = PartitionResult(partition=day.isoformat(), records=0)
    result.kind = "incremental"
    result.landing = "missing" if listing.missing else ("read" if listing.files else "empty")
    result.read = {"files": len({p.path for p in pieces}), "bytes": sum(p.length for p in pieces)}
    return result


def _run_increment(spark, store: DeltaStore, tables: Sequence[MessageTable], plan: Plan, pieces: list[Piece],
                   arrived: dict[str, int], day_ledger: dict, entry: dict, local_bytes: int, result: PartitionResult,
                   seconds: dict[str, float], timing: _Timing, progress) -> None:
    """The pieces classified (one Spark job, or local processes for a small increment), the
    tables due committed and the others' files staged (_commit_due), then the ledger's entry
    saved as done, with what is staged and what it knows of each table."""
    day = plan.day
    size = result.read["bytes"]
    result.engine, session = engine_for(size, local_bytes, spark)
    # tasks of consecutive pieces in arrival order: each table's file of a task holds a stretch of the increment
    tasks = pack([(p.length, p) for p in pieces], parallelism(session) if session is not None else (os.cpu_count() or 2),
                 arrived)
    progress(f"{day}: increment {entry['n']}: {result.read['files']} file(s), {size} new byte(s) in {len(tasks)} "
             f"task(s) on {result.engine.describe()}")
    with day_run(store, plan, tables, replace=False, sweep=session is not None, progress=progress) as sweep:
        clock = time.perf_counter()
        merged = (execute(plan, [[(day, task)] for task in tasks], session).get(day) if tasks else None) or Merged()
        seconds["job"] = time.perf_counter() - clock
        clock = time.perf_counter()
        kept = _commit_due(store, plan, tables, merged, day_ledger, entry, timing, result, seconds, progress)
        sweep.committed(day, set(merged.written), kept)
        entry.update(merged.kept(), done=True, took=round(time.perf_counter() - timing.started, 3))
        ledger.save(store.location, day, day_ledger)
        seconds["commits"] = time.perf_counter() - clock
    result.records = entry["records"]
    result.tasks = len(tasks)


def _commit_due(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], merged: Merged, day_ledger: dict,
                entry: dict, timing: _Timing, result: PartitionResult, seconds: dict[str, float], progress) -> set[str]:
    """Each table due (cadence.py) committed: its staged files and this increment's in one
    append carrying the increment as application transaction (the day's app id, its number);
    every other table's files staged in the day's ledger. Returns the names of the files the
    increment committed or staged (this run's sweep keeps them)."""
    day, n = plan.day, entry["n"]
    app = ledger.app_id(day, day_ledger["epoch"])
    staged = day_ledger.setdefault("staged", {})
    new = merged.written
    result.rows_added, result.deadletter, result.files = merged.rows, merged.deadletter, merged.per_file
    now, took = timing.clock(), _took(day_ledger)
    candidates = list(dict.fromkeys([*staged, *new]))
    landed = entry.get("landed", now)  # an entry an older release left pending says none
    files = {name: staged.get(name, []) + [_staged(f, landed) for f in new.get(name, [])] for name in candidates}
    targets = timing.cadence.targets(tables)
    default = timing.cadence.target(None)
    due = {name: timing.cadence.due(files[name], targets.get(name, default), now, took) for name in candidates}
    due = {name: why for name, why in due.items() if why}
    before: set[str] = set()
    if entry["run"] != plan.run:  # a stopped increment's again: each table's log says what it committed
        day_ledger.pop("tips", None)
        day_ledger.pop("rows", None)
        before = _committed_before(store, plan, [name for name in candidates if name not in due], app, n)
    committed = _commit_tables(store, plan, tables, due, staged, new, app, n, day_ledger, result, seconds) | before
    kept: set[str] = set()
    for name in candidates:
        if name in committed:
            staged.pop(name, None)
            kept |= {f.path.rsplit("/", 1)[-1] for f in new.get(name, [])}
        elif files[name]:
            staged[name] = files[name]
            kept |= {f["path"].rsplit("/", 1)[-1] for f in files[name]}
    _report(targets, default, staged, timing.clock(), due, committed, files, result)
    day_ledger["next_due"] = min((timing.cadence.due_at(its, targets.get(name, default), took) for name, its in staged.items()),
                                 default=None)
    _known_rows(day_ledger, result)
    progress(f"{day}: increment {n}: committed {len(committed)} table(s), {len(staged)} staged for a later one")
    return kept


def _staged(f, landed: float) -> dict:
    """A written file as the ledger stages it."""
    return {"path": f.path, "size": f.size, "rows": f.rows, "landed": landed, "stats": f.stats}


def _files(staged: list[dict]) -> list[PartFile]:
    return [PartFile(f["path"], f["size"], f["rows"], f.get("stats")) for f in staged]


def _committed_before(store: DeltaStore, plan: Plan, names: list[str], app: str, n: int) -> set[str]:
    """Of tables not due now, those a stopped run of this increment committed (their log has
    its transaction): this run's copies of their rows are removed."""
    found = set()
    for name in names:
        done = store.transaction_version(name, app) if store.exists(name) else None
        if done is not None and done >= n:
            store.remove_uncommitted(plan.run, plan.day, [name])
            found.add(name)
    return found


def _commit_tables(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], due: dict[str, str],
                   staged: dict[str, list], new: dict[str, list], app: str, n: int, day_ledger: dict,
                   result: PartitionResult, seconds: dict[str, float]) -> set[str]:
    """The due tables committed: at the version the ledger's tip knows (appends.py: no read of
    the log), else through delta-rs after the log is loaded, the table synced and its
    transaction looked for. Returns the tables whose log has the increment now (committed by
    this run, or by another run of the same increment)."""
    day = plan.day
    by_name = {t.name: t for t in tables}
    keys = {name: schema_key(by_name[name].schema if name in by_name else DEADLETTER_SCHEMA) for name in due}
    known_tips = day_ledger.setdefault("tips", {})
    tips = {name: Tip.from_json(known_tips[name]) for name in due
            if name in known_tips and known_tips[name]["schema"] == keys[name]}
    clock = time.perf_counter()

    def at_tip(name: str):
        return name, store.append_at(name, _files(staged.get(name, [])) + new.get(name, []), PARTITION_COLUMN, day,
                                     tips[name], (app, n))

    with ThreadPoolExecutor(min(store.commit_threads, max(len(tips), 1))) as pool:
        fast = {name: tip for name, tip in pool.map(at_tip, list(tips)) if tip is not None}
    seconds["appends"] = time.perf_counter() - clock
    for name, tip in fast.items():
        result.versions[name], result.stored[name], result.partition_files[name] = tip.version, tip.rows, tip.files
    slow = [name for name in due if name not in fast]
    loaded = _commit_loaded(store, plan, [by_name[name] for name in slow if name in by_name], slow, staged, new,
                            app, n, keys, result, seconds)
    tips = {**fast, **{name: tip for name, tip in loaded.items() if tip is not None}}
    for name in set(loaded) - set(tips):
        known_tips.pop(name, None)
    known_tips.update({name: tip.as_json() for name, tip in tips.items()})
    committed = set(fast) | set(loaded)
    rows = day_ledger.get("rows")
    for name in committed:
        if rows is not None:
            if result.stored.get(name) is None:
                day_ledger.pop("rows")  # a count only the log has: the ledger no longer knows them all
                rows = None
            else:
                rows[name] = [result.stored[name], result.partition_files.get(name, 0)]
        if name in by_name:
            result.written.append(name)
            result.tables[by_name[name].message.xid] = result.rows_added.get(name, 0)
    if DEADLETTER_TABLE in committed:
        result.written.append(DEADLETTER_TABLE)
    return committed


def _commit_loaded(store: DeltaStore, plan: Plan, fed: list[MessageTable], names: list[str], staged: dict[str, list],
                   new: dict[str, list], app: str, n: int, keys: dict[str, str], result: PartitionResult,
                   seconds: dict[str, float]) -> dict[str, Tip | None]:
    """The tables `names` committed through delta-rs, each log loaded once (in threads), the
    tables synced with the catalog first; returns each table's new tip (None: none can be kept).
    Delta's conflict check covers only commits after the snapshot a commit was made from, so
    the snapshot itself is looked at for the increment's transaction first."""
    if not names:
        return {}
    day = plan.day
    clock = time.perf_counter()
    with store.loaded_once(names, threads=store.commit_threads):
        seconds["logs"] = time.perf_counter() - clock
        sync_message_tables(store, fed)
        if DEADLETTER_TABLE in names:
            ensure_deadletter(store)
        seconds["sync"] = time.perf_counter() - clock - seconds["logs"]

        def append(name: str):
            done = store.transaction_version(name, app)
            if done is not None and done >= n:
                store.remove_uncommitted(plan.run, day, [name])  # this run's copy of rows the log has
                return name, None, None
            interval = store.honours_blind_appends(name)
            committed = store.append_partition(name, new.get(name, []), PARTITION_COLUMN, day, transaction=(app, n),
                                               staged=_files(staged.get(name, [])))
            tip = store.tip_after(name, committed, keys[name], interval) if committed and interval else None
            return name, committed, tip

        tips: dict[str, Tip | None] = {}
        with ThreadPoolExecutor(min(store.commit_threads, len(names))) as pool:
            for name, committed, tip in pool.map(append, names):
                if committed is not None:
                    result.versions[name] = committed.version
                    result.partition_files[name] = committed.files
                result.stored[name] = committed.rows if committed is not None else None  # None: counted from the log
                tips[name] = tip
    return tips


def _report(targets: dict[str, float], default: float, staged: dict[str, list], now: float, due: dict[str, str],
            committed: set[str], files: dict[str, list], result: PartitionResult) -> None:
    """Each table's freshness after the increment, and the rows it has staged."""
    for name, its in files.items():
        if not its:
            continue
        target = targets.get(name, default)
        waiting = staged.get(name, [])
        lag = max(0.0, now - min(f["landed"] for f in waiting)) if waiting else 0.0
        done = max(0.0, now - min(f["landed"] for f in its)) if name in committed else None
        result.freshness[name] = Freshness(round(lag, 3), None if done is None else round(done, 3), target,
                                           sum(f["rows"] or 0 for f in waiting), len(waiting), due.get(name))
        if waiting:
            result.staged[name] = sum(f["rows"] or 0 for f in waiting)


def _report_waiting(tables: Sequence[MessageTable], day_ledger: dict, cadence: Cadence, now: float,
                    result: PartitionResult) -> None:
    """An increment that committed nothing: the staged tables' freshness, the day's known rows."""
    staged = day_ledger.get("staged", {})
    _report(cadence.targets(tables), cadence.target(None), staged, now, {}, set(), staged, result)
    _known_rows(day_ledger, result)


def _known_rows(day_ledger: dict, result: PartitionResult) -> None:
    """The day's rows of every table the ledger knows, for the conservation check (no log read),
    and the tables that hold any, when it knows them all."""
    for name, (rows, _) in day_ledger.get("rows", {}).items():
        result.stored.setdefault(name, rows)
    result.held = set(day_ledger["rows"]) if "rows" in day_ledger else None


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
