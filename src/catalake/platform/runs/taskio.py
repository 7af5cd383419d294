"""What a task of a run writes, on a Spark executor or a local worker: its rows by table, held as
Python values, then Arrow batches, spilled to local Arrow files when the task holds too much,
and written at its end as one Parquet file per table into the table's partition folder
(files.PartFiles); and the small summary the task reports (`TaskResult`). The spill folders
of a killed worker are removed by the next (`remove_dead_spills`).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa

from ..uris import Location
from ..warehouse.files import PartFile, PartFiles
from .liveness import alive

# A task's memory is bounded by these, not by its share of the day or the number of tables:
BATCH_ROWS = 4096  # a table's rows become one Arrow batch when it has this many
HELD_ROWS = 10_000  # at most this many rows of a task wait as Python values (the largest buffers convert)
SPILL_PREFIX = "catalake-task-"  # + the worker's pid: a killed worker's folder is found by the next
SPILL_BYTES = 32 << 20  # Arrow bytes held by a task before they are spilled to local files


class Buffer:
    """One table's rows of a task: Python values, then Arrow batches, spilled to local Arrow
    files when the task holds too much, and written as one Parquet file at the task's end."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows: list[list] = []
        self.batches: list[pa.RecordBatch] = []
        self.spills: list[str] = []

    def spill(self, folder: str) -> None:
        """The Arrow batches to a local Arrow IPC file (memory-mapped again at the end)."""
        path = os.path.join(folder, f"{id(self)}-{len(self.spills)}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, self.schema) as writer:
            for batch in self.batches:
                writer.write_batch(batch)
        self.spills.append(path)
        self.batches = []

    def parts(self) -> Iterator[pa.Table]:
        """The task's rows in parts, spilled ones first (memory-mapped, one at a time), in the
        order they were read: a task reads a stretch of the day's files in arrival order
        (landing/planning.py), so its file of a table holds that stretch. Not sorted by `time`:
        that cost a day at 1M records / 10 definitions about a second of six (RESULTS session
        28), where the file's range, not its order, is what rules it out of a query."""
        for path in self.spills:
            with pa.memory_map(path) as source:
                yield pa.ipc.open_file(source).read_all()
        if self.batches:
            yield pa.Table.from_batches(self.batches, schema=self.schema)

    def to_arrow(self) -> int:
        """The buffered rows as one Arrow batch; returns its size in bytes."""
        if not self.rows:
            return 0
        columns = list(zip(*self.rows))
        batch = pa.record_batch([pa.array(c, type=f.type) for c, f in zip(columns, self.schema)], schema=self.schema)
        self.rows = []
        self.batches.append(batch)
        return batch.nbytes


class TaskOutput:
    """The rows of one task by table (a `Buffer` each), and the Parquet files they become
    (`write`). Used as a context: a task that fails removes the files it wrote, and every task
    removes its spill folder."""

    def __init__(self, warehouse: Location, day: dt.date, prefix: str):
        self.buffers: dict[str, Buffer] = {}
        self.unconverted = 0  # rows buffered as Python values
        self.held = 0  # Arrow bytes buffered
        self.sink = PartFiles(warehouse, day, prefix)
        self.spills = tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-")

    def __enter__(self) -> "TaskOutput":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if kind is not None:
                self.sink.remove_written()
        finally:
            shutil.rmtree(self.spills, ignore_errors=True)

    def add(self, name: str, schema: pa.Schema, values: list) -> None:
        buffer = self.buffers.get(name)
        if buffer is None:
            buffer = self.buffers[name] = Buffer(schema)
        buffer.rows.append(values)
        self.unconverted += 1
        if len(buffer.rows) >= BATCH_ROWS:
            self.unconverted -= len(buffer.rows)
            self._held(buffer.to_arrow())

    def add_batch(self, name: str, schema: pa.Schema, rows: pa.RecordBatch) -> None:
        """Rows already in Arrow (the compiled path)."""
        buffer = self.buffers.get(name)
        if buffer is None:
            buffer = self.buffers[name] = Buffer(schema)
        buffer.batches.append(rows)
        self._held(rows.nbytes)

    def bound(self) -> None:
        """After each record: at most `HELD_ROWS` rows wait as Python values."""
        if self.unconverted >= HELD_ROWS:
            self._to_arrow(largest_only=True)

    def write(self) -> dict[str, list]:
        """One Parquet file per table the task fed; returns them by table (PartFiles.files)."""
        self._to_arrow()
        for name, buffer in self.buffers.items():
            self.sink.write(name, buffer.schema, buffer.parts())
        return self.sink.files

    def _to_arrow(self, largest_only: bool = False) -> None:
        """Buffered rows to Arrow: all of them, or (memory) the larger half of the buffers'
        rows, biggest buffers first: with a thousand tables, converting every small buffer each
        time would be a thousand conversions of a few rows."""
        buffers = sorted(self.buffers.values(), key=lambda b: -len(b.rows)) if largest_only else list(self.buffers.values())
        goal = self.unconverted // 2 if largest_only else 0
        for buffer in buffers:
            if self.unconverted <= goal:
                break
            self.unconverted -= len(buffer.rows)
            self._held(buffer.to_arrow())

    def _held(self, nbytes: int) -> None:
        self.held += nbytes
        if self.held > SPILL_BYTES:
            for buffer in self.buffers.values():
                if buffer.batches:
                    buffer.spill(self.spills)
            self.held = 0
            pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed memory otherwise


@dataclass
class TaskResult:
    """What an executor reports for one task's records of one day."""

    day: str = ""  # the partition its rows went to (ISO)
    records: int = 0
    files: dict[str, list[PartFile]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    tallies: dict[str, dict] = field(default_factory=dict)  # table -> quality tally
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    per_file: dict[str, int] = field(default_factory=dict)  # landed file -> records read
    moved: dict[str, int] = field(default_factory=dict)  # replay: "<old reason> -> <table>" -> rows
    batched: int = 0  # records the compiled path decided (kept) on its own; the executor's figure, not reported

    def summary(self) -> dict:
        """What crosses back to the driver (as JSON), merged there by `results.Merged`."""
        return {"day": self.day, "records": self.records, "files": self.files, "rows": self.rows, "tallies": self.tallies,
                "deadletter": self.deadletter, "per_file": self.per_file, "moved": self.moved}


def remove_dead_spills(folder: str | None = None) -> None:
    """Remove the spill folders of killed workers (a finished task removes its own)."""
    folder = folder or tempfile.gettempdir()
    for name in os.listdir(folder):
        pid = name[len(SPILL_PREFIX):].split("-", 1)[0]
        if name.startswith(SPILL_PREFIX) and pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
