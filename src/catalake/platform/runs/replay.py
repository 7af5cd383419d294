"""Replay: a day's dead letters classified again against the current catalog, after it changed.

The dead-letter rows hold the raw record with its file and line, so the landing zone is not read
again. One Spark job: each task takes a share of the day's dead-letter rows and classifies the
replayable ones anew (classifier.REPLAYED: the reasons a catalog decides; a record's own faults,
such as `malformed_json` or `record_too_large`, are kept as they are), writing the rows that now
match into their tables' partition folders and every row that stays into new dead-letter files.
The driver then appends those files to the tables, and replaces the day's dead-letter partition
with the rows that stay: records read = rows in tables + dead letters still holds. When nothing
moves, nothing is committed, so a second replay changes nothing.

A replay is recorded while it runs, as a partition run is, and before it commits the driver
writes the commits it is about to make to a journal (`<warehouse>/_catalake/replays/<day>.json`:
each table's files and version before, and the rows it moves), and removes it once all are made.
A replay killed in between, or whose commit failed, leaves the journal and its files: the next
replay of the day rolls it forward first, making each commit whose table is still
at its version before, so no record stays in two places or is lost, and reports the rows it moved.
A partition run of the day replaces every table's partition from the landing zone and drops the
journal. A replay killed before its journal leaves files no log names: the next replay or
partition run of the day removes them. All of it is recovery.py, shared with partition runs.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, functions as F

from ..errors import StorageError
from ..warehouse.deadletters import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from ..warehouse.files import PARTITION_COLUMN
from ..warehouse.message_tables import MessageTable, sync_message_tables
from ..warehouse.store import DeltaStore
from . import ledger, recovery
from .classifier import Classifier
from .day import conservation
from .plan import Plan, new_plan
from .recovery import journal_of, remove_journal, roll_forward, write_journal
from .results import Merged
from .taskio import TaskResult
from .tasks import TASK_OUTPUT, job_group, parallelism, spark_tasks


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

    @property
    def rows_into(self) -> dict[str, int]:
        """Rows moved into each table (by warehouse name), from `moved`'s "<reason> -> <table>"."""
        into: dict[str, int] = {}
        for move, rows in self.moved.items():
            table = move.split(" -> ", 1)[1]
            into[table] = into.get(table, 0) + rows
        return into


def _replay_task(classifier: Classifier, batches: Iterator[pa.RecordBatch], partition: int,
                 attempt: int) -> Iterator[tuple[int, TaskResult]]:
    """The work of one task of a replay's Spark job (tasks.spark_tasks): the dead-letter rows of
    one Spark partition classified again."""
    rows = (row for batch in batches for row in batch.to_pylist())
    yield partition, classifier.replay(f"{partition}.{attempt}", rows)


def replay_partition(spark: SparkSession, store: DeltaStore, tables: Sequence[MessageTable], day: dt.date,
                     progress=lambda message: None) -> ReplayResult:
    """Re-match one day's dead letters against `tables` (the current catalog) and move every
    record that now matches into its table. A replay of the day stopped while it committed is
    finished first; what it moved is part of the result."""
    result = ReplayResult(day.isoformat())
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    stopped = journal_of(store.location, day)
    result.moved = recovery.recover_day(store, day, names, replace=False, progress=progress)
    if stopped is not None:
        result.deadletters = stopped.get("deadletters", result.moved_rows)
    if not store.exists(DEADLETTER_TABLE) or not store.has_partition(DEADLETTER_TABLE, day):
        return result
    # not strict, and no landing root (the dead-letter rows name their files)
    plan = new_plan(tables, store.location, day, ingested_at=None, write=None, strict=False, landing=None)
    frame = _deadletter_rows(store, day)
    with recovery.recorded(store.location, plan.run, day, kind="replay"):
        try:
            merged = _classify_again(spark, plan, frame)
            read, moved, written = merged.records, merged.moved, merged.written
            if stopped is None:
                result.deadletters = read
            if not moved:
                progress(f"{day}: {read} dead letter(s), none matches the catalog now")
                return result
            _, before = conservation(store, tables, day, 0)  # the rows stored now, whatever was read
            stored_before = before["rows_stored"]
            _commit_moves(store, plan, tables, read, moved, written)
        finally:
            # files of this replay no commit took (failed task attempts, a failed replay); those its
            # journal names, should it be left, are the roll-forward's
            recovery.remove_orphans(store, plan.run, day, names)
    for key, n in moved.items():
        result.moved[key] = result.moved.get(key, 0) + n
    result.conserved, result.counts = conservation(store, tables, day, stored_before)
    progress(f"{day}: moved {sum(moved.values())} of {read} dead letter(s): "
             + ", ".join(f"{k}: {n}" for k, n in sorted(moved.items())))
    if not result.conserved:
        raise StorageError(f"{day}: replay changed the day's row count ({stored_before} -> {result.counts['rows_stored']})")
    return result


def _deadletter_rows(store: DeltaStore, day: dt.date) -> DataFrame:
    """The day's dead-letter rows, in this release's columns (without the partition column)."""
    present = set(store.spark_schema(DEADLETTER_TABLE).fieldNames())  # a table of an older release lacks newer columns
    columns = [F.col(f.name) if f.name in present else F.lit(None).cast(f.dataType).alias(f.name)
               for f in DEADLETTER_SCHEMA if f.name != PARTITION_COLUMN]
    return store.read(DEADLETTER_TABLE).where(F.col(PARTITION_COLUMN) == F.lit(day)).select(*columns)


def _classify_again(spark: SparkSession, plan: Plan, frame: DataFrame) -> Merged:
    """The replay's Spark job: each task's share of the dead-letter rows classified again, its
    summaries merged."""
    day = plan.day
    with job_group(spark, f"catalake-replay-{day}", f"replay the dead letters of {day}"):
        rows = frame.repartition(parallelism(spark)).mapInArrow(spark_tasks(plan, _replay_task), TASK_OUTPUT).collect()
    return Merged.of([json.loads(r["json"]) for r in rows])


def _commit_moves(store: DeltaStore, plan: Plan, tables: Sequence[MessageTable], read: int, moved: dict[str, int],
                  written: dict[str, list]) -> None:
    """The tables the moved rows go to synced, the commits written to the day's journal, made
    (roll_forward: the tables first, the dead letters last), and the journal removed."""
    day = plan.day
    fed = [t for t in tables if t.name in written]
    ledger.drop_tables(store.location, day)  # the rows its increments know of each table move now
    sync_message_tables(store, fed)
    journal = {"run": plan.run, "day": day.isoformat(), "deadletters": read, "moved": moved, "commits": [
        {"table": name, "files": written.get(name, []), "version": store.version(name),
         "mode": "replace" if name == DEADLETTER_TABLE else "append"}
        for name in [t.name for t in fed] + [DEADLETTER_TABLE]]}  # the tables first, the dead letters last
    write_journal(store.location, day, journal)
    try:
        roll_forward(store, journal)
    except Exception as exc:
        raise StorageError(
            f"{day}: replay {plan.run} stopped while it committed: {exc}. Its journal keeps its files: the "
            f"next `catalake replay` of the day finishes it (or `catalake run` replaces the day)") from exc
    remove_journal(store.location, day)
