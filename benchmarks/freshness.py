"""Fresh within a minute at many tables (issue 65): Zipf traffic over N definitions landing on
the S3 server while increments run on a cadence, each table committed when it is due.

    python benchmarks/freshness.py [--tables 500] [--increments 30] [--every 30] [--freshness 60]
                                   [--land-every 5] [--events 2000] [--zipf 1.1] [--work DIR] [--local]

A lander thread writes a JSON lines file to the landing every `--land-every` seconds, its
`--events` events a minute spread over the definitions by a Zipf law of exponent `--zipf` (the
hottest table gets most, the tail a handful an hour). Every `--every` seconds an increment runs
as the landing sensor's do (`Cadence`: the tables' target `--freshness`, the sensor's interval
`--every`): a table is committed when it is due, else staged. In real time, on moto's S3 server on
the loopback (or the local disk with `--local`), its request log counted.

Printed per increment as JSON lines: tables committed and staged, the largest lag after it (the
age of the oldest staged record; a record landed since its listing is at most its `seconds`
old), the largest age at commit of what it committed, its seconds, its warehouse requests per committed table and per
table and minute. At the end: every lag against the target, the requests, and the tables after a
last increment that commits everything, against one full run of the same landing (row hashes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from commits import per_bucket, requests
from workload import DAY, event, fresh_catalog, type_name


def zipf_weights(n: int, s: float) -> list[float]:
    weights = [1 / (rank ** s) for rank in range(1, n + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def no_spark():
    raise AssertionError("increments run in local processes")


def day_hashes(location, names: list[str]) -> dict[str, str]:
    """Per table, a digest of the sorted hashes of its rows (`ingested_at` left out)."""
    from deltalake import DeltaTable

    out = {}
    for name in names:
        uri = location.child(*name.split("/")).uri
        if not DeltaTable.is_deltatable(uri, storage_options=location.delta_options()):
            continue
        rows = DeltaTable(uri, storage_options=location.delta_options()).to_pyarrow_table().drop_columns(
            ["ingested_at"]).to_pylist()
        if rows:
            digests = sorted(hashlib.sha256(json.dumps(r, sort_keys=True, default=str).encode()).hexdigest() for r in rows)
            out[name] = hashlib.sha256("".join(digests).encode()).hexdigest()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--increments", type=int, default=30)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between increments (the sensor's)")
    parser.add_argument("--freshness", type=float, default=60.0)
    parser.add_argument("--land-every", type=float, default=5.0)
    parser.add_argument("--events", type=int, default=2000, help="events landed a minute")
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--work", default="/tmp/catalake-freshness")
    parser.add_argument("--local", action="store_true", help="landing and warehouse on the local disk")
    args = parser.parse_args(argv)
    work = Path(args.work)
    cat, tables = fresh_catalog(work, args.tables)
    if args.local:
        return simulate(args, work, tables, None)
    from support.services import s3_server

    (work / "s3").mkdir()
    with s3_server(work / "s3") as server:
        os.environ.update(server.environment)
        return simulate(args, work, tables, server)


def simulate(args, work: Path, tables, server) -> None:
    from catalake.platform import uris
    from catalake.platform.runs.cadence import Cadence
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
    from catalake.platform.warehouse.store import DeltaStore

    if server is None:
        landing, warehouse = str(work / "landing"), str(work / "warehouse")
        log = None
    else:
        landing, warehouse = server.bucket("landing") + "/events", server.bucket("lake") + "/lake"
        log = next((work / "s3").glob("moto-*.log"))
    root = uris.Location.of(landing)
    uris.make_folders(root.filesystem, f"{root.path}/{DAY}")
    day = dt.date.fromisoformat(DAY)
    store = DeltaStore(no_spark, warehouse, "delta-rs", master="local[2]")
    weights = zipf_weights(args.tables, args.zipf)
    rng = random.Random(65)
    landed, stop = [0], threading.Event()
    per_file = max(1, round(args.events * args.land_every / 60))

    def land() -> None:
        numbers = rng.choices(range(args.tables), weights, k=per_file)
        body = b"".join(orjson.dumps({**event(rng, landed[0] * per_file + i, args.tables), "type": type_name(n)}) + b"\n"
                        for i, n in enumerate(numbers))
        with root.filesystem.open_output_stream(f"{root.path}/{DAY}/part-{landed[0]:05d}.jsonl") as out:
            out.write(body)
        landed[0] += 1

    def lander() -> None:
        while not stop.wait(args.land_every):
            land()

    land()
    classify_partition(no_spark, store, tables, landing, day, local_bytes=1 << 40)  # the day's first run
    cadence = Cadence(freshness=args.freshness, interval=args.every)
    position = requests(log, 0)[1] if log else 0
    thread = threading.Thread(target=lander, daemon=True)
    thread.start()
    rows, started = [], time.monotonic()
    try:
        for i in range(1, args.increments + 1):
            time.sleep(max(0.0, started + i * args.every - time.monotonic()))
            clock = time.perf_counter()
            result = classify_increment(no_spark, store, tables, landing, day, local_bytes=1 << 40, cadence=cadence)
            seconds = time.perf_counter() - clock
            found, position = requests(log, position) if log else ({}, position)
            lake = per_bucket(found, "lake")
            committed = [n for n, f in result.freshness.items() if f.due]
            row = {"increment": i, "records": result.records, "tables_committed": len(committed),
                   "tables_staged": len(result.staged), "rows_staged": sum(result.staged.values()),
                   "max_lag_s": round(max([f.lag for f in result.freshness.values()] + [0.0]), 1),
                   "max_committed_lag_s": round(max([f.committed_lag or 0.0 for f in result.freshness.values()] + [0.0]), 1),
                   "stale_tables": sum(1 for f in result.freshness.values() if not f.fresh),
                   "seconds": round(seconds, 2), "phases": result.seconds,
                   "warehouse_requests": lake,
                   "warehouse_requests_per_commit": round(sum(lake.values()) / max(len(committed), 1), 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop.set()
        thread.join()
    land()
    final = classify_increment(no_spark, store, tables, landing, day, local_bytes=1 << 40)  # commits all staged
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    full_store = DeltaStore(no_spark, work / "full", "delta-rs", master="local[2]")
    classify_partition(no_spark, full_store, tables, landing, day, local_bytes=1 << 40)
    equal = day_hashes(store.location, names) == day_hashes(full_store.location, names)
    minutes = args.increments * args.every / 60
    total = {m: sum(r["warehouse_requests"].get(m, 0) for r in rows) for m in sorted({m for r in rows for m in r["warehouse_requests"]})}
    commits = sum(r["tables_committed"] for r in rows)
    print(json.dumps({
        "tables": args.tables, "increments": args.increments, "every_s": args.every, "freshness_s": args.freshness,
        "storage": "local disk" if server is None else "s3 (moto, loopback)", "zipf": args.zipf,
        "events_a_minute": args.events, "files_landed": landed[0],
        "max_lag_s": max(r["max_lag_s"] for r in rows), "max_committed_lag_s": max(r["max_committed_lag_s"] for r in rows),
        "increments_with_a_stale_table": sum(1 for r in rows if r["stale_tables"]),
        "commits": commits, "commits_per_increment_median": statistics.median(r["tables_committed"] for r in rows),
        "tables_fed_per_increment_median": statistics.median(r["tables_committed"] + r["tables_staged"] for r in rows),
        "increment_seconds_median": statistics.median(r["seconds"] for r in rows),
        "warehouse_requests": total, "warehouse_requests_per_commit": round(sum(total.values()) / max(commits, 1), 2),
        "warehouse_requests_per_table_minute": round(sum(total.values()) / args.tables / minutes, 3),
        "final_records": final.records, "rows_equal_to_one_full_run": equal,
    }), flush=True)


if __name__ == "__main__":
    main()
