"""What a task writes, in time order: each part of a message table's file (spilled or held) sorted
by `time`, so that its row groups cover stretches of time; the dead-letter table's rows as they
came. Real Parquet files through the task's own buffers, spills included."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.parquet as pq

from catalake.platform.runs import taskio
from catalake.platform.runs.taskio import TaskOutput
from catalake.platform.uris import Location

DAY = dt.date(2026, 11, 20)
MIDNIGHT = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.timezone.utc)
EVENTS = pa.schema([("id", pa.string()), ("time", pa.timestamp("us", tz="UTC"))])
DEAD_LETTERS = pa.schema([("reason", pa.string()), ("source_line", pa.int64())])


def test_each_part_of_a_task_s_file_is_sorted_by_time_and_dead_letters_keep_their_order(tmp_path, monkeypatch):
    monkeypatch.setattr(taskio, "SPILL_BYTES", 50_000)  # a spill every batch or so: several parts
    rng = random.Random(72)
    seconds = rng.sample(range(86_400), 30_000)  # records in no time order (late ones, several sources)
    with TaskOutput(Location.of(tmp_path), DAY, "run-0") as output:
        for line, second in enumerate(seconds, 1):
            output.add("messages/a", EVENTS, [f"e{line}", MIDNIGHT + dt.timedelta(seconds=second)])
            if line % 7 == 0:
                output.add("deadletter", DEAD_LETTERS, ["schema_violation", line])
            output.bound()
        files = output.write()
    (events,), (dead,) = files["messages/a"], files["deadletter"]
    written = pq.ParquetFile(tmp_path / "messages/a" / events.path)
    groups = [written.read_row_group(g).column("time").to_pylist() for g in range(written.metadata.num_row_groups)]
    assert len(groups) >= 4 and all(group == sorted(group) for group in groups)
    assert sorted(t for group in groups for t in group) == sorted(MIDNIGHT + dt.timedelta(seconds=s) for s in seconds)
    lines = pq.read_table(tmp_path / "deadletter" / dead.path).column("source_line").to_pylist()
    assert lines == list(range(7, len(seconds) + 1, 7))
