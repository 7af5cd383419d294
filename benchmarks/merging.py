"""Merges by the byte (issue 52): the merge phase of a full run and a compaction, at many tables.

    python benchmarks/merging.py run --definitions 1000 --records 100000 [--repeats 2] [--work DIR]
    python benchmarks/merging.py compaction --definitions 1000 --increments 12 [--records 100000] [--repeats 2] [--work DIR]
    python benchmarks/merging.py driver [--repeats 2] [--work DIR]

`run`: workload.py's day of R records over N definitions (every definition fed; its files as one
file, so that each of the run's tasks feeds every table), classified by full runs in this
process (Spark, local[*]) on a warehouse whose tables exist; per run the
seconds of each phase from the run's own clock (`merge` is the merge of the tables fed by more
than one task), the files merged and the worst files per table-partition against the bound.

`compaction`: the same N definitions fed by `--increments` increments (local processes, as the
landing sensor's runs) of R / increments records each, so that every table-partition holds one
small file per increment; that warehouse is built once (kept under DIR) and copied afresh before
each timed `compact_day` (Spark session started beforehand, as `catalake maintain` has it).
Printed: its seconds, milliseconds per table-partition, the worst files per table-partition
after it against the bound, and whether every table's rows (hashes) are those it had before.

`driver`: merges of 10 to 1,000 of that warehouse's table-partitions (2 or 12 files each), as
one Spark job of few tasks and on the driver's threads, interleaved: where run_merges'
DRIVER_MERGE_BYTES comes from.

All print JSON lines. To time an older commit side by side: `git worktree add /tmp/before
<commit>` and run this script with `PYTHONPATH=/tmp/before/src`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import hashes
from workload import DAY, event, fresh_catalog, write


def worst(store, names: list[str], day: dt.date, target: int) -> dict:
    from catalake.platform.warehouse.files import PARTITION_COLUMN
    from catalake.platform.warehouse.merging import file_bound

    most, over, partitions = 0, 0, 0
    with store.loaded_once(names, threads=8):
        for name in names:
            if store.exists(name) and store.has_partition(name, day):
                files = store.partition_files(name, PARTITION_COLUMN, day)
                if files:
                    partitions += 1
                    most = max(most, len(files))
                    over += len(files) > file_bound(sum(f.size for f in files), target)
    return {"table_partitions": partitions, "max_files_per_partition": most, "partitions_over_bound": over}


def session():
    from catalake.platform.spark import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_session("local[*]", "catalake-merging-bench", {})
    spark.range(0, 4, 1, 2).count()  # the JVM and its Python workers up before any clock
    return spark


def bench_run(args) -> None:
    from catalake.platform.catalog import load_catalog
    from catalake.platform.defaults import TARGET_FILE_BYTES
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    work = Path(args.work)
    catalog_dir, written = write(work, args.definitions, args.records)
    # workload.py's 4 files hold each type in one file when 4 divides N (records go round robin):
    # the same records as one file, cut by the planner at line ends, feed every table from every task
    landing = work / f"landing-one-file-{args.definitions}-{args.records}"
    if not (landing / DAY / "events.jsonl").exists():
        (landing / DAY).mkdir(parents=True, exist_ok=True)
        parts = [p.read_bytes().splitlines(keepends=True) for p in sorted((written / DAY).iterdir())]
        with open(landing / DAY / "events.jsonl", "wb") as out:  # in the records' order: n % 4 was the file
            out.writelines(line for lines in itertools.zip_longest(*parts, fillvalue=b"") for line in lines)
    catalog = load_catalog([catalog_dir])
    tables = message_tables(catalog, [catalog_dir])[0]
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    day = dt.date.fromisoformat(DAY)
    spark = session()
    warehouse = work / f"merging-run-{args.definitions}-{args.records}"
    shutil.rmtree(warehouse, ignore_errors=True)
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)
    said: list[str] = []
    for repeat in range(args.repeats):
        said.clear()
        clock = time.perf_counter()
        result = classify_partition(spark, store, tables, str(landing), day, progress=said.append)
        wall = time.perf_counter() - clock
        merged = [m for m in said if " merged into " in m]
        print(json.dumps({"bench": "run", "repeat": repeat, "definitions": args.definitions, "records": args.records,
                          "tasks": result.tasks, "seconds": round(wall, 2), "phases": result.seconds,
                          "merged": merged[0].split(": ", 1)[1] if merged else None,
                          **worst(store, names, day, TARGET_FILE_BYTES)}), flush=True)
    spark.stop()


def increments_warehouse(work: Path, definitions: int, increments: int, records: int) -> tuple[Path, list[str]]:
    """A warehouse whose every table-partition of the day holds one file per increment, built once."""
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
    from catalake.platform.warehouse.message_tables import sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    base = work / f"increments-{definitions}-{increments}-{records}"
    if (base / ".complete").exists():
        return base / "warehouse", json.loads((base / "names.json").read_text())
    cat, tables = fresh_catalog(base, definitions)
    names = [t.name for t in tables] + [DEADLETTER_TABLE]

    def no_spark():
        raise AssertionError("increments of this size run in local processes")

    store = DeltaStore(no_spark, base / "warehouse", "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    rng = random.Random(11)
    landing = base / "landing" / DAY
    landing.mkdir(parents=True)
    per = records // increments
    for i in range(increments):
        clock = time.perf_counter()
        (landing / f"part-{i:04d}.jsonl").write_bytes(
            b"".join(orjson.dumps(event(rng, n, definitions)) + b"\n" for n in range(i * per, (i + 1) * per)))
        classify_increment(no_spark, store, tables, str(landing.parent), dt.date.fromisoformat(DAY),
                           local_bytes=1 << 30)
        print(f"increment {i + 1}/{increments}: {time.perf_counter() - clock:.1f} s", file=sys.stderr, flush=True)
    (base / "names.json").write_text(json.dumps(names))
    (base / ".complete").touch()
    return base / "warehouse", names


def bench_compaction(args) -> None:
    from catalake.platform.defaults import TARGET_FILE_BYTES
    from catalake.platform.maintenance import compact_day
    from catalake.platform.warehouse.store import DeltaStore

    work = Path(args.work)
    built, names = increments_warehouse(work, args.definitions, args.increments, args.records)
    day = dt.date.fromisoformat(DAY)
    spark = session()
    for repeat in range(args.repeats):
        warehouse = work / "compaction-run"
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.copytree(built, warehouse)
        store = DeltaStore(spark, warehouse)
        before = hashes(store, names) if repeat == 0 else None
        start = worst(store, names, day, TARGET_FILE_BYTES)
        said: list[str] = []
        clock = time.perf_counter()
        done = compact_day(spark, store, names, day, target=TARGET_FILE_BYTES, progress=said.append)
        wall = time.perf_counter() - clock
        phases = [m.split(" in ", 1)[1] for m in said if " table(s) in planning " in m]  # this release's own clock
        out = {"bench": "compaction", "repeat": repeat, "definitions": args.definitions, "increments": args.increments,
               "records": args.records, "seconds": round(wall, 2),
               "ms_per_table_partition": round(1000 * wall / max(len(done), 1), 2), "compacted": len(done),
               "skipped": sum(1 for c in done if c.skipped), "files_before": sum(c.files_before for c in done),
               "max_files_before": start["max_files_per_partition"], "phases": phases[0] if phases else None,
               **worst(store, names, day, TARGET_FILE_BYTES)}
        if before is not None:
            out["rows_unchanged"] = hashes(store, names) == before
        print(json.dumps(out), flush=True)
    spark.stop()


def bench_driver(args) -> None:
    """Where the driver's threads beat a Spark job: the first `files_each` increments' files of
    the first `merges` tables of the compaction warehouse, merged both ways (interleaved)."""
    import pyarrow.parquet as pq

    from catalake.platform.uris import Location
    from catalake.platform.warehouse.files import PARTITION_COLUMN, PartFile
    from catalake.platform.warehouse.merging import Merge, run_merges

    work = Path(args.work)
    built, names = increments_warehouse(work, args.definitions, args.increments, args.records)
    warehouse = work / "driver-run"
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.copytree(built, warehouse)
    folder = f"{PARTITION_COLUMN}={DAY}"
    spark = session()
    for count, each in ((10, 2), (100, 2), (300, 2), (1000, 2), (1000, 12)):
        merges = []
        for i, name in enumerate(n for n in names if n.startswith("messages/")):
            if i == count:
                break
            parts = sorted((warehouse / name / folder).glob("part-*.parquet"))[:each]
            merges.append(Merge(name, [PartFile(f"{folder}/{p.name}", p.stat().st_size, pq.ParquetFile(p).metadata.num_rows)
                                       for p in parts], f"{folder}/bench-merged-{i}.zstd.parquet"))
        seconds: dict[str, list[float]] = {"spark_job": [], "driver_threads": []}
        for _ in range(args.repeats):
            for kind, driver_bytes in (("spark_job", 0), ("driver_threads", 1 << 40)):
                clock = time.perf_counter()
                run_merges(spark, Location.of(warehouse), merges, driver_bytes=driver_bytes)
                seconds[kind].append(round(time.perf_counter() - clock, 3))
        print(json.dumps({"bench": "driver", "merges": count, "files_each": each,
                          "input_mib": round(sum(f.size for m in merges for f in m.inputs) / 2**20, 2), **seconds}), flush=True)
    spark.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=["run", "compaction", "driver"])
    parser.add_argument("--definitions", type=int, default=1000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--increments", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-merging")
    args = parser.parse_args(argv)
    {"run": bench_run, "compaction": bench_compaction, "driver": bench_driver}[args.bench](args)


if __name__ == "__main__":
    main()
