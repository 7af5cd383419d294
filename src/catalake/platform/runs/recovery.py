"""Crash recovery, for partition runs and replays alike: run records, replay journals, the
roll-forward of a stopped replay and the removal of orphan files.

Executors write a run's Parquet files straight into its tables' partition folders, invisible to
readers until the driver commits them, under names that carry the run (`part-<run>-...`). A
failed run removes the files no commit took; a run that is killed (SIGKILL, a lost machine)
removes nothing. So:

* While it runs, a partition run or a replay is recorded in `<warehouse>/_catalake/runs/<run>.json`
  (kind, day, its driver process: host, pid and identity, and a heartbeat rewritten every quarter
  of the lease). The next run or replay of the same day finds the records whose process is gone
  (liveness.py, the same notion as for the day's Dagster runs: on this host the process table,
  elsewhere the lease) and removes those runs' uncommitted files (`recover_day`). A record of
  another host with no heartbeat (an older release's) is left alone: a live run's files must
  never be touched.
* Before it commits, a replay writes the commits it is about to make to a journal
  (`<warehouse>/_catalake/replays/<day>.json`: each table's files and version before, and the
  rows it moves), and removes it once all are made. A replay stopped in between (killed, or a
  commit that failed) leaves the journal, its files and its run record (kept while the journal
  is there). The next replay of the day rolls it forward first (`roll_forward`: each commit whose
  table is still at its version before, after checking that every file it names exists); a
  partition run of the day replaces every table's partition from the landing zone and drops it.

No recovery step ever deletes a file the day's journal names (`remove_orphans`): those are the
roll-forward's to commit. A roll-forward whose files are gone fails naming the first missing file
and commits nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from typing import Callable, Iterable, Iterator, Sequence

import pyarrow.fs as pafs

from .. import uris
from ..errors import StorageError
from ..uris import Location
from ..warehouse.files import PARTITION_COLUMN
from ..warehouse.store import DeltaStore
from . import ledger, liveness

RUNS_DIR = "_catalake/runs"
JOURNAL_DIR = "_catalake/replays"


# -- run records

def _runs_folder(root: Location) -> tuple[pafs.FileSystem, str]:
    return root.filesystem, f"{root.path}/{RUNS_DIR}"


@contextlib.contextmanager
def recorded(root: Location, run: str, day: dt.date | Sequence[dt.date], kind: str = "run",
             lease: float | None = None) -> Iterator[None]:
    """Record run `run` (kind "run": a partition run, "replay" or "compaction") of `day` (or of
    each of a range's days) under the warehouse `root` while the block runs, its heartbeat
    rewritten every quarter of the lease. The record stays after the block while a day's journal
    is this run's: the journal's files are the run's until the journal is rolled forward or dropped."""
    days = [day] if isinstance(day, dt.date) else list(day)
    filesystem, folder = _runs_folder(root)
    uris.make_folders(filesystem, folder)
    path = f"{folder}/{run}.json"
    owner = liveness.Owner.current()
    record = {"run": run, "kind": kind, "day": days[0].isoformat(), "host": owner.host, "pid": owner.pid,
              "identity": owner.identity, **({"days": [d.isoformat() for d in days]} if len(days) > 1 else {})}

    def beat(now: float) -> None:  # whole or not at all: a reader never sees half a record
        _write_whole(filesystem, path, json.dumps({**record, "heartbeat": now}).encode())

    beat(time.time())
    lease = liveness.lease_seconds() if lease is None else lease
    try:
        with liveness.heartbeat(beat, lease / 4):
            yield
    finally:
        if not any((journal_of(root, d) or {}).get("run") == run for d in days):
            with contextlib.suppress(FileNotFoundError):
                filesystem.delete_file(path)


def _write_whole(filesystem: pafs.FileSystem, path: str, data: bytes) -> None:
    """Write a small file that readers see whole: an object store's PUT is; on a disk, a rename."""
    if not isinstance(filesystem, pafs.LocalFileSystem):
        with filesystem.open_output_stream(path) as out:
            out.write(data)
        return
    partial = f"{path}.{os.getpid()}.partial"
    with filesystem.open_output_stream(partial) as out:
        out.write(data)
    filesystem.move(partial, path)


def _verdict(record: dict, lease: float) -> liveness.Verdict:
    owner = liveness.Owner(record.get("host", ""), int(record.get("pid", 0)), record.get("identity", ""))
    return liveness.judge(owner, record.get("heartbeat"), None, lease=lease)


def _documents(filesystem: pafs.FileSystem, folder: str) -> list[dict]:
    """The JSON documents of a folder (none when it does not exist); one being written, or not
    ours, is passed over."""
    if filesystem.get_file_info(folder).type != pafs.FileType.Directory:
        return []
    documents = []
    for info in filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        if info.base_name.endswith(".json"):
            try:
                with filesystem.open_input_stream(info.path) as f:
                    documents.append(json.loads(f.read()))
            except (OSError, ValueError):
                continue
    return documents


def _records(root: Location) -> list[dict]:
    return _documents(*_runs_folder(root))


def crashed(root: Location, day: dt.date, lease: float | None = None) -> list[str]:
    """Runs and replays of `day` (or of a range of days that holds it) whose driver process is
    gone (liveness.judge)."""
    return sorted(crashed_days(root, day, lease))


def crashed_days(root: Location, day: dt.date, lease: float | None = None) -> dict[str, list[dt.date]]:
    """The runs of `crashed`, each with every day it was recorded for (a run of a range of days
    left files in each of them)."""
    lease = liveness.lease_seconds() if lease is None else lease
    return {r["run"]: [dt.date.fromisoformat(d) for d in r.get("days", [r.get("day")])] for r in _records(root)
            if day.isoformat() in r.get("days", [r.get("day")]) and not _verdict(r, lease).alive}


def protected(root: Location, lease: float | None = None) -> Callable[[str], bool]:
    """Whether a file of the warehouse must survive a vacuum whatever its age: a file of a run in
    flight (recorded, and its process alive, or of another host and within its lease), or of a
    replay whose journal is still there (a roll-forward commits its files), or staged by an
    increment for a later commit (a day's ledger names it)."""
    lease = liveness.lease_seconds() if lease is None else lease
    runs = {r["run"] for r in _records(root) if _verdict(r, lease).alive}
    journaled: set[str] = ledger.all_staged(root)
    for journal in _documents(root.filesystem, f"{root.path}/{JOURNAL_DIR}"):
        runs.add(journal["run"])
        journaled |= journal_files(journal)
    prefixes = tuple(f"part-{run}-" for run in runs)

    def keep(path: str) -> bool:
        name = os.path.basename(path)
        return bool(prefixes) and name.startswith(prefixes) or name in journaled

    return keep


def forget(root: Location, run: str) -> None:
    """Drop the record of a run once its files are removed (or committed)."""
    filesystem, folder = _runs_folder(root)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(f"{folder}/{run}.json")


# -- the journal of a replay's commits

def _journal_path(root: Location, day: dt.date) -> tuple:
    folder = f"{root.path}/{JOURNAL_DIR}"
    return root.filesystem, folder, f"{folder}/{day.isoformat()}.json"


def write_journal(root: Location, day: dt.date, journal: dict) -> None:
    filesystem, folder, path = _journal_path(root, day)
    uris.make_folders(filesystem, folder)
    with filesystem.open_output_stream(path) as out:
        out.write(json.dumps(journal).encode())


def journal_of(root: Location, day: dt.date) -> dict | None:
    filesystem, _, path = _journal_path(root, day)
    if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with filesystem.open_input_stream(path) as stream:
        return json.loads(stream.read())


def remove_journal(root: Location, day: dt.date) -> None:
    filesystem, _, path = _journal_path(root, day)
    if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        filesystem.delete_file(path)


def journal_files(journal: dict | None) -> set[str]:
    """The file names a journal's commits add (each carries its run, so a name is unique)."""
    if journal is None:
        return set()
    return {os.path.basename(rel) for commit in journal["commits"] for rel, *_ in commit["files"]}


def journal_moves(journal: dict) -> dict[str, int]:
    """What a journal's replay moved ("<reason> -> <table>" -> rows); for a journal written
    before it said so, the rows its appends add."""
    if "moved" in journal:
        return dict(journal["moved"])
    return {f"rolled forward -> {c['table']}": sum(f[2] for f in c["files"])
            for c in journal["commits"] if c["mode"] == "append" and c["files"]}


def roll_forward(store: DeltaStore, journal: dict) -> list[str]:
    """Make each commit of the journal whose table is still at the version it had before (the
    others were made); returns the tables committed now. Every file those commits name must
    exist: otherwise nothing is committed and StorageError names the first missing file. A
    commit that fails keeps its files (the journal still names them)."""
    day = dt.date.fromisoformat(journal["day"])
    pending = [c for c in journal["commits"] if store.version(c["table"]) == c["version"]]
    missing = []
    for commit in pending:
        for rel, *_ in commit["files"]:
            file = store.table_location(commit["table"]).child(rel)
            if file.filesystem.get_file_info(file.path).type != pafs.FileType.File:
                missing.append(f"{commit['table']}/{rel}")
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise StorageError(
            f"{day}: replay {journal['run']} cannot be finished: {missing[0]}{more}, named by its journal "
            f"({JOURNAL_DIR}/{day.isoformat()}.json), does not exist; nothing was committed. Run the day again "
            f"(`catalake run --date {day}`): a partition run replaces the day's tables and drops the journal")
    made = []
    for commit in pending:
        if commit["mode"] == "append":
            store.append_partition(commit["table"], commit["files"], PARTITION_COLUMN, day, keep_on_failure=True)
        else:
            store.commit_partition(commit["table"], commit["files"], PARTITION_COLUMN, day, keep_on_failure=True)
        made.append(commit["table"])
    return made


# -- orphans, and the recovery of a day

def remove_orphans(store: DeltaStore, run: str, day: dt.date, names: Sequence[str],
                   committed: Iterable[str] | None = None) -> None:
    """Remove the files run `run` wrote into partition `day` of these tables that no commit took,
    except those the day's journal names or its ledger stages for a later commit (`committed`:
    the names of all the run committed, when it just did: no log is read)."""
    keep = journal_files(journal_of(store.location, day)) | ledger.staged_names(ledger.load(store.location, day))
    store.remove_uncommitted(run, day, names, keep=keep, committed=committed)


class Notice(str):
    """A progress message a person is shown whatever the log level: what a stopped run or replay
    left, mended (a Dagster step logs it as a warning, where the rest of its progress is info)."""


def recover_day(store: DeltaStore, day: dt.date, names: Sequence[str], *, replace: bool,
                progress=lambda message: None) -> dict[str, int]:
    """Before a partition run (`replace`: it replaces the day's partitions) or a replay of `day`:
    a replay stopped while it committed is dropped (partition run) or finished (replay), then the
    uncommitted files of every run or replay of the day whose process is gone are removed.
    Returns what a finished replay moved ("<reason> -> <table>" -> rows)."""
    moved: dict[str, int] = {}
    journal = journal_of(store.location, day)
    if journal is not None:  # the journal's tables too, should the catalog have dropped one since
        names = list(dict.fromkeys([*names, *(c["table"] for c in journal["commits"])]))
    if journal is not None and replace:  # this run replaces the day's partitions: its commits are moot
        progress(Notice(f"{day}: dropping replay {journal['run']}, which was stopped while it committed"))
        remove_journal(store.location, day)  # first: its files are then orphans of a recorded run
        remove_orphans(store, journal["run"], day, names)
        forget(store.location, journal["run"])
    elif journal is not None:
        made = roll_forward(store, journal)
        remove_journal(store.location, day)
        remove_orphans(store, journal["run"], day, names)  # its files no commit took (task attempts)
        forget(store.location, journal["run"])
        moved = journal_moves(journal)
        progress(Notice(f"{day}: finished the commits of replay {journal['run']}, which was stopped: "
                        f"{', '.join(made) or 'none left'} ({sum(moved.values())} row(s) moved)"))
    for run, days in sorted(crashed_days(store.location, day).items()):
        progress(Notice(f"{day}: removing the uncommitted files of run {run}, whose process is gone"
                        + (f" (of its {len(days)} days)" if len(days) > 1 else "")))
        for each in days:  # all of them: the record goes with this
            remove_orphans(store, run, each, names)
        forget(store.location, run)
    return moved
