"""The commit phase of an increment that feeds thousands of tables (issue 40, point 5).

    python benchmarks/commits.py --tables 5000 [--increments 3] [--work DIR]

A catalog of N definitions (workload.py's), a first run of the day that creates and feeds every
table (one event each), then `--increments` increments that each land one more event per
definition: every increment appends to all N tables (and no dead letter). Printed per increment
as JSON lines: the increment's seconds per phase (`commits` is the commit phase: one Delta
append per table with its application transaction, from each table's log loaded once), and
that phase per table commit; then the median. Local processes classify (an increment is small),
the warehouse is on local disk.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, event, fresh_catalog  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=5000)
    parser.add_argument("--increments", type=int, default=3)
    parser.add_argument("--work", default="/tmp/catalake-commits")
    args = parser.parse_args(argv)

    from catalake.platform.runs.day import classify_partition
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.store import DeltaStore

    def no_spark():
        raise AssertionError("the increments are local")

    work = Path(args.work)
    cat, tables = fresh_catalog(work, args.tables)
    day = dt.date.fromisoformat(DAY)
    landing = work / "landing" / DAY
    landing.mkdir(parents=True)
    rng = random.Random(3)
    store = DeltaStore(no_spark, work / "warehouse", "delta-rs", master="local[2]")

    def land(i: int) -> None:
        events = [event(rng, i * args.tables + n, args.tables) for n in range(args.tables)]
        (landing / f"part-{i:04d}.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))

    land(0)
    clock = time.perf_counter()
    first = classify_partition(no_spark, store, cat, tables, str(landing.parent), day, local_bytes=1 << 40)
    print(json.dumps({"first_run_s": round(time.perf_counter() - clock, 1), "tables": args.tables,
                      "fed": len(first.written), "seconds": first.seconds}), flush=True)
    phases = []
    for i in range(1, args.increments + 1):
        land(i)
        clock = time.perf_counter()
        result = classify_increment(no_spark, store, cat, tables, str(landing.parent), day, local_bytes=1 << 40)
        total = time.perf_counter() - clock
        fed = len(result.written)
        phases.append(result.seconds["commits"])
        print(json.dumps({"increment": i, "records": result.records, "tables_fed": fed, "total_s": round(total, 2),
                          "seconds": result.seconds, "commit_ms_per_table": round(1000 * result.seconds["commits"] / fed, 2)}),
              flush=True)
    print(json.dumps({"tables": args.tables, "commit_phase_median_s": round(statistics.median(phases), 2),
                      "commit_ms_per_table": round(1000 * statistics.median(phases) / args.tables, 2)}), flush=True)


if __name__ == "__main__":
    main()
