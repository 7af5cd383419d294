"""A day of increments against one full run, before and after maintenance (issue 40).

    python benchmarks/maintenance.py --records 1000000 --files 100 [--definitions 10] [--work DIR]

workload.py's events are cut into `--files` JSON lines files that land one at a time, each
followed by one increment (local processes, as the landing sensor's runs). The same day is then
classified by one full run (Spark, local[*]: its files bounded by the target size). Printed as one
JSON object, for the increments' warehouse before compaction, after compaction and after a vacuum
with retention 0, and for the full run's: files per table-partition (max) and their bound, Parquet
bytes on disk, the seconds of one DuckDB query over all tables (the median of 5; DuckDB over the
tables' current snapshots, as `catalake sql`), the seconds of the compaction and the vacuum, and
whether the rows (hashes without `ingested_at`) equal the full run's at each step.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import hashes
from workload import DAY, event, fresh_catalog


def parquet_bytes(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts]
    return len(files), sum(p.stat().st_size for p in files)


def query_seconds(root: Path, names: list[str]) -> dict[str, float]:
    """One query over every table, as an analyst's dashboard would (rows and distinct lines per
    table), the median of 5: `query_s` opens each table's snapshot (its Delta log) and scans it;
    `scan_s` only scans, the snapshots opened beforehand (the files' layout alone)."""
    import duckdb
    from deltalake import DeltaTable

    from catalake.platform.uris import Location
    from catalake.platform.warehouse.datasets import snapshot_dataset

    sql = " UNION ALL ".join(f"SELECT count(*) AS n, count(DISTINCT source_line) AS d FROM t{i}" for i in range(len(names)))

    def once(opened: bool) -> float:
        with duckdb.connect() as con:
            if opened:
                for i, name in enumerate(names):
                    con.register(f"t{i}", snapshot_dataset(DeltaTable(str(root / name)), Location.of(root / name)))
            clock = time.perf_counter()
            if not opened:
                for i, name in enumerate(names):
                    con.register(f"t{i}", snapshot_dataset(DeltaTable(str(root / name)), Location.of(root / name)))
            con.execute(sql).fetchall()
            return time.perf_counter() - clock

    return {"query_s": round(statistics.median([once(False) for _ in range(5)]), 3),
            "scan_s": round(statistics.median([once(True) for _ in range(5)]), 3)}


def layout(store, names: list[str], day: dt.date, target: int) -> dict:
    from catalake.platform.warehouse.files import PARTITION_COLUMN
    from catalake.platform.warehouse.merging import file_bound

    worst, over = 0, 0
    for name in names:
        if store.exists(name):
            files = store.partition_files(name, PARTITION_COLUMN, day)
            worst = max(worst, len(files))
            over += len(files) > file_bound(sum(f.size for f in files), target)
    count, size = parquet_bytes(Path(store.root))
    return {"max_files_per_partition": worst, "partitions_over_bound": over, "parquet_files_on_disk": count,
            "parquet_bytes_on_disk": size}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--work", default="/tmp/catalake-maintenance")
    args = parser.parse_args(argv)

    from catalake.platform.defaults import TARGET_FILE_BYTES
    from catalake.platform.maintenance import compact_day, vacuum_warehouse
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.spark import build_session
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
    from catalake.platform.warehouse.message_tables import sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    work = Path(args.work)
    cat, tables = fresh_catalog(work, args.definitions)
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    day = dt.date.fromisoformat(DAY)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_session("local[*]", "catalake-maintenance-bench", {})

    import random

    rng = random.Random(7)
    per = args.records // args.files
    landing = work / "landing" / DAY
    landing.mkdir(parents=True)
    increments = DeltaStore(spark, work / "increments")
    sync_message_tables(increments, tables)
    clock = time.perf_counter()
    for i in range(args.files):
        (landing / f"part-{i:04d}.jsonl").write_bytes(
            b"".join(orjson.dumps(event(rng, n, args.definitions)) + b"\n" for n in range(i * per, (i + 1) * per)))
        classify_increment(spark, increments, tables, str(landing.parent), day, local_bytes=64 << 20)
    increment_seconds = time.perf_counter() - clock

    full = DeltaStore(spark, work / "full")
    sync_message_tables(full, tables)
    clock = time.perf_counter()
    result = classify_partition(spark, full, tables, str(landing.parent), day)
    full_seconds = time.perf_counter() - clock
    expected = hashes(full, names)
    fed = [n for n in names if full.exists(n)]

    out = {"records": args.records, "files": args.files, "definitions": args.definitions,
           "target_file_bytes": TARGET_FILE_BYTES, "increments_s": round(increment_seconds, 1),
           "full_run": {"seconds": round(full_seconds, 1), "tasks": result.tasks, "merge_s": result.seconds.get("merge"),
                        **layout(full, names, day, TARGET_FILE_BYTES), **query_seconds(work / "full", fed)}}
    out["increments"] = {**layout(increments, names, day, TARGET_FILE_BYTES),
                         **query_seconds(work / "increments", fed),
                         "rows_equal_full_run": hashes(increments, names) == expected}
    clock = time.perf_counter()
    done = compact_day(spark, increments, names, day, target=TARGET_FILE_BYTES)
    out["compacted"] = {"seconds": round(time.perf_counter() - clock, 1), "tables": len(done),
                        "skipped": sum(1 for c in done if c.skipped), **layout(increments, names, day, TARGET_FILE_BYTES),
                        **query_seconds(work / "increments", fed),
                        "rows_equal_full_run": hashes(increments, names) == expected}
    clock = time.perf_counter()
    vacuumed = vacuum_warehouse(increments, names, retention_hours=0)
    out["vacuumed"] = {"seconds": round(time.perf_counter() - clock, 1), "files_deleted": sum(v.files for v in vacuumed),
                       "bytes_deleted": sum(v.bytes for v in vacuumed), **layout(increments, names, day, TARGET_FILE_BYTES),
                       **query_seconds(work / "increments", fed),
                       "rows_equal_full_run": hashes(increments, names) == expected}
    out["after_maintenance_vs_full_run"] = {
        "query": round(out["vacuumed"]["query_s"] / out["full_run"]["query_s"], 2),
        "scan": round(out["vacuumed"]["scan_s"] / out["full_run"]["scan_s"], 2),
        "bytes": round(out["vacuumed"]["parquet_bytes_on_disk"] / out["full_run"]["parquet_bytes_on_disk"], 3)}
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
