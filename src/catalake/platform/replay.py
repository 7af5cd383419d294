"""Replay: a day's dead letters classified again against the current catalog, after it changed.

The dead-letter rows hold the raw record with its file and line, so the landing zone is not read
again. One Spark job: each task takes a share of the day's dead-letter rows and classifies the
replayable ones anew (classifier.REPLAYED: the reasons a catalog decides; a record's own faults,
such as `malformed_json` or `record_too_large`, are kept as they are), writing the rows that now
match into their tables' partition folders and every row that stays into new dead-letter files.
The driver then appends those files to the tables, and replaces the day's dead-letter partition
with the rows that stay: records read = rows in tables + dead letters still holds. When nothing
moves, nothing is committed, so a second replay changes nothing.

The tables are committed before the dead-letter partition: a replay killed in between leaves the
moved records in both places, never in neither (the conservation check then fails for that day).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from .classifier import Plan, classifier_for
from .classify import OUTPUT, _has_partition, _job_group, _parallelism, conservation
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from .message_table import PARTITION_COLUMN, MessageTable, sync_message_tables
from .storage import DeltaStore, StorageError


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
    if not store.exists(DEADLETTER_TABLE) or not _has_partition(store, DEADLETTER_TABLE, day):
        return result
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    _, before = conservation(store, tables, day, 0)  # the rows stored now, whatever was read
    stored_before = before["rows_stored"]
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
        written: dict[str, list] = {}
        for s in summaries:
            for name, files in s["files"].items():
                written.setdefault(name, []).extend(files)
        fed = [t for t in tables if t.name in written]
        sync_message_tables(store, fed)
        for table in fed:  # appended: the day's rows already there stay
            store.append_partition(table.name, written[table.name], PARTITION_COLUMN, day)
        store.commit_partition(DEADLETTER_TABLE, written.get(DEADLETTER_TABLE, []), PARTITION_COLUMN, day)
    finally:
        store.remove_uncommitted(plan.run, day, names)
    result.conserved, result.counts = conservation(store, tables, day, stored_before)
    progress(f"{day}: moved {result.moved_rows} of {result.deadletters} dead letter(s): "
             + ", ".join(f"{k}: {n}" for k, n in sorted(result.moved.items())))
    if not result.conserved:
        raise StorageError(f"{day}: replay changed the day's row count ({stored_before} -> {result.counts['rows_stored']})")
    return result
