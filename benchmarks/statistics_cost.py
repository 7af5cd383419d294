"""What column statistics cost a commit (issue 72): log bytes at 100 columns, and time.

    python benchmarks/statistics_cost.py [--rows 100000] [--columns 100] [--repeats 5]

One file of a message table with `--columns` payload leaves (ints, strings, timestamps, floats)
besides the envelope, written by catalake's executor path (`PartFiles.write`, which takes the
statistics from the footer it has just written) and committed by `DeltaStore.commit_partition`;
then the same file committed with its row count only (what releases before issue 72 wrote), and
the same rows written by delta-rs' own `write_deltalake` (its default statistics). For each: the
bytes of the commit's log entry. Then the time `PartFiles.write` takes with and without the
statistics (median of `--repeats`), and the time of the statistics alone. JSON lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake

from catalake.platform.uris import Location
from catalake.platform.warehouse import files as written
from pyspark.sql.pandas.types import from_arrow_schema
from catalake.platform.warehouse.files import PARTITION_COLUMN, PartFiles
from catalake.platform.warehouse.statistics import stats_json
from catalake.platform.warehouse.store import DeltaStore

DAY = dt.date(2026, 3, 3)


def rows_of(count: int, columns: int) -> pa.Table:
    start = dt.datetime(2026, 3, 3, tzinfo=dt.timezone.utc)
    times = pa.array([start + dt.timedelta(seconds=i * 86_400 / count) for i in range(count)], pa.timestamp("us", "UTC"))
    payload = {}
    for c in range(columns):
        kind = c % 4
        payload[f"f{c:03d}"] = (pa.array(range(c, c + count), pa.int64()) if kind == 0 else
                                pa.array([f"value-{c}-{i % 997}" for i in range(count)]) if kind == 1 else
                                times if kind == 2 else pa.array([i * 0.5 for i in range(count)], pa.float64()))
    return pa.table({
        "id": pa.array([f"{i:08x}-0000-4000-8000-{i:012x}" for i in range(count)]),
        "type": pa.array(["example.Event"] * count), "source": pa.array(["https://example.com/source"] * count),
        "time": times, "data": pa.StructArray.from_arrays(list(payload.values()), list(payload)),
    })


def last_entry_bytes(root: Path) -> int:
    return max((root / "_delta_log").glob("*.json")).stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--columns", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = rows_of(args.rows, args.columns)
    work = Path(tempfile.mkdtemp(prefix="statistics-cost-"))
    store = DeltaStore(None, work / "wh", "delta-rs", master="local[1]")
    schema = from_arrow_schema(rows.schema.append(pa.field(PARTITION_COLUMN, pa.date32())))
    sizes = {}
    for kind in ("with_statistics", "row_count_only"):
        name = f"messages/{kind}"
        store.create(name, schema, [PARTITION_COLUMN])
        sink = PartFiles(Location.of(str(work / "wh" / "messages")), DAY, kind)
        sink.write(kind, rows.schema, [rows])
        (part,) = sink.files[kind]
        store.commit_partition(name, [part if kind == "with_statistics" else part._replace(stats=None)],
                               PARTITION_COLUMN, DAY)
        sizes[kind] = last_entry_bytes(work / "wh" / "messages" / kind)
    write_deltalake(str(work / "delta_rs"), rows.append_column(PARTITION_COLUMN, pa.array([DAY] * args.rows, pa.date32())),
                    partition_by=[PARTITION_COLUMN])
    sizes["delta_rs_write_deltalake"] = last_entry_bytes(work / "delta_rs")
    print(json.dumps({"rows": args.rows, "payload_columns": args.columns, "commit_log_entry_bytes": sizes,
                      "statistics_over_row_count_only": round(sizes["with_statistics"] / sizes["row_count_only"], 2),
                      "catalake_over_delta_rs": round(sizes["with_statistics"] / sizes["delta_rs_write_deltalake"], 2)}))

    def write_once(with_statistics: bool) -> float:
        sink = PartFiles(Location.of(str(work / "timing")), DAY, "t")
        keep = written.stats_json
        if not with_statistics:
            written.stats_json = lambda metadata: None  # the write as releases before issue 72 made it
        try:
            clock = time.perf_counter()
            sink.write("t", rows.schema, [rows])
            return time.perf_counter() - clock
        finally:
            written.stats_json = keep

    timings = {True: [], False: []}
    for _ in range(args.repeats):  # in turn, so drift hits both
        for flag in (True, False):
            timings[flag].append(write_once(flag))
    footer = pq.read_metadata(next((work / "wh" / "messages" / "with_statistics").rglob("*.parquet")))
    clock = time.perf_counter()
    for _ in range(args.repeats):
        stats_json(footer)
    print(json.dumps({"file_write_s": {"with_statistics": round(statistics.median(timings[True]), 4),
                                       "row_count_only": round(statistics.median(timings[False]), 4)},
                      "statistics_alone_s": round((time.perf_counter() - clock) / args.repeats, 5)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
