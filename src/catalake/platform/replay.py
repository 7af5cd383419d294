"""Replay: a day's dead letters classified again against the current catalog, after it changed.

The dead-letter rows hold the raw record with its file and line, so the landing zone is not read
again. One Spark job: each task takes a share of the day's dead-letter rows and classifies the
replayable ones anew (classifier.REPLAYED: the reasons a catalog decides; a record's own faults,
such as `malformed_json` or `record_too_large`, are kept as they are), writing the rows that now
match into their tables' partition folders and every row that stays into new dead-letter files.
The driver then appends those files to the tables, and replaces the day's dead-letter partition
with the rows that stay: records read = rows in tables + dead letters still holds. When nothing
moves, nothing is committed, so a second replay changes nothing.

Before it commits, the driver writes the commits it is about to make to a journal
(`<warehouse>/_catalake/replays/<day>.json`: each table's files and version before), and removes
it once all are made. A replay killed in between leaves the journal and its files: the next
replay (or `recover`) of the day rolls it forward first, making each commit whose table is
still at its version before, so no record stays in two places or is lost. A partition run of the
day replaces every table's partition from the landing zone and drops the journal.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .classifier import Plan, classifier_for
from .classify import OUTPUT, _has_partition, _job_group, _parallelism, conservation
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from .message_table import PARTITION_COLUMN, MessageTable, sync_message_tables
from .storage import DeltaStore, StorageError, filesystem_of

JOURNAL_DIR = "_catalake/replays"


@dataclass
class ReplayResult:
    partition: str
    deadletters: int = 0  # dead-letter rows read
    moved: dict[str, int] = field(default_factory=dict)  # "<reason> -> <table>" -> rows
    conserved: bool = True
    counts: dict = field(default_factory=dict)

    @property
    def moved_rows(self) -> int:
        return sum(self.moved.values())


def _replay_tasks(plan: Plan):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        classifier = classifier_for(plan)
        context = TaskContext.get()
        task = f"{context.partitionId() if context else 0}.{context.attemptNumber() if context else 0}"
        rows = (row for batch in batches for row in batch.to_pylist())
        result = classifier.replay(task, rows)
        summary = {"records": result.records, "files": result.files, "rows": result.rows, "moved": result.moved}
        yield pa.record_batch([pa.array([context.partitionId() if context else 0], pa.int32()),
                               pa.array([json.dumps(summary)])], names=["task", "json"])

    return run


def replay_partition(spark: SparkSession, store: DeltaStore, tables: Sequence[MessageTable], day: dt.date,
                     progress=lambda message: None) -> ReplayResult:
    """Re-match one day's dead letters against `tables` (the current catalog) and move every
    record that now matches into its table."""
    result = ReplayResult(day.isoformat())
    recover(store, day, progress)
    if not store.exists(DEADLETTER_TABLE) or not _has_partition(store, DEADLETTER_TABLE, day):
        return result
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    plan = Plan(tuple(tables), store.root, day, dt.datetime.now(dt.timezone.utc).replace(microsecond=0), uuid.uuid4().hex[:12])
    columns = [f.name for f in DEADLETTER_SCHEMA if f.name != PARTITION_COLUMN]
    frame = store.read(DEADLETTER_TABLE).where(F.col(PARTITION_COLUMN) == F.lit(day)).select(*columns)
    try:
        with _job_group(spark, f"catalake-replay-{day}", f"replay the dead letters of {day}"):
            rows = frame.repartition(_parallelism(spark)).mapInArrow(_replay_tasks(plan), OUTPUT).collect()
        summaries = [json.loads(r["json"]) for r in rows]
        result.deadletters = sum(s["records"] for s in summaries)
        for s in summaries:
            for key, n in s["moved"].items():
                result.moved[key] = result.moved.get(key, 0) + n
        if not result.moved:
            progress(f"{day}: {result.deadletters} dead letter(s), none matches the catalog now")
            return result
        _, before = conservation(store, tables, day, 0)  # the rows stored now, whatever was read
        stored_before = before["rows_stored"]
        written: dict[str, list] = {}
        for s in summaries:
            for name, files in s["files"].items():
                written.setdefault(name, []).extend(files)
        fed = [t for t in tables if t.name in written]
        sync_message_tables(store, fed)
        journal = {"run": plan.run, "day": day.isoformat(), "commits": [
            {"table": name, "files": written.get(name, []), "version": store.version(name),
             "mode": "replace" if name == DEADLETTER_TABLE else "append"}
            for name in [t.name for t in fed] + [DEADLETTER_TABLE]]}  # the tables first, the dead letters last
        write_journal(store.root, day, journal)
        roll_forward(store, journal)
        remove_journal(store.root, day)
    finally:
        if journal_of(store.root, day) is None:  # a journal's files are its roll-forward's to commit
            store.remove_uncommitted(plan.run, day, names)
    result.conserved, result.counts = conservation(store, tables, day, stored_before)
    progress(f"{day}: moved {result.moved_rows} of {result.deadletters} dead letter(s): "
             + ", ".join(f"{k}: {n}" for k, n in sorted(result.moved.items())))
    if not result.conserved:
        raise StorageError(f"{day}: replay changed the day's row count ({stored_before} -> {result.counts['rows_stored']})")
    return result


# -- the journal of a replay's commits

def _journal_path(root: str, day: dt.date) -> tuple:
    filesystem, base = filesystem_of(root)
    return filesystem, f"{base}/{JOURNAL_DIR}", f"{base}/{JOURNAL_DIR}/{day.isoformat()}.json"


def write_journal(root: str, day: dt.date, journal: dict) -> None:
    filesystem, folder, path = _journal_path(root, day)
    filesystem.create_dir(folder, recursive=True)
    with filesystem.open_output_stream(path) as out:
        out.write(json.dumps(journal).encode())


def journal_of(root: str, day: dt.date) -> dict | None:
    filesystem, _, path = _journal_path(root, day)
    if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
        return None
    with filesystem.open_input_stream(path) as stream:
        return json.loads(stream.read())


def remove_journal(root: str, day: dt.date) -> None:
    filesystem, _, path = _journal_path(root, day)
    if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        filesystem.delete_file(path)


def roll_forward(store: DeltaStore, journal: dict) -> list[str]:
    """Make each commit of the journal whose table is still at the version it had before (the
    others were made); returns the tables committed now."""
    day = dt.date.fromisoformat(journal["day"])
    made = []
    for commit in journal["commits"]:
        if store.version(commit["table"]) != commit["version"]:
            continue
        if commit["mode"] == "append":
            store.append_partition(commit["table"], commit["files"], PARTITION_COLUMN, day)
        else:
            store.commit_partition(commit["table"], commit["files"], PARTITION_COLUMN, day)
        made.append(commit["table"])
    return made


def recover(store: DeltaStore, day: dt.date, progress=lambda message: None) -> None:
    """Finish a replay of `day` that was killed while it committed."""
    journal = journal_of(store.root, day)
    if journal is not None:
        made = roll_forward(store, journal)
        remove_journal(store.root, day)
        progress(f"{day}: finished the commits of replay {journal['run']}, which was stopped: {', '.join(made) or 'none left'}")
