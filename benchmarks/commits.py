"""The commit phase of an increment that feeds thousands of tables (issue 40, point 5).

    python benchmarks/commits.py --tables 5000 [--increments 3] [--work DIR]
    python benchmarks/commits.py --tables 500 --s3 [--increments 3] [--work DIR]
    python benchmarks/commits.py --tables 100 --s3 --increments 11 --checkpoint-interval 10

A catalog of N definitions (workload.py's), a first run of the day that creates and feeds every
table (one event each), then `--increments` increments that each land one more event per
definition: every increment appends to all N tables (and no dead letter). Printed per increment
as JSON lines: the increment's seconds per phase (`commits` is the commit phase: one Delta
append per table with its application transaction, from each table's log loaded once), and
that phase per table commit; then the median. Local processes classify (an increment is small),
the warehouse is on local disk, or with `--s3` landing and warehouse are on moto's S3 server
on the loopback (tests/support/services.py), whose request log is counted: the requests of each
run by method (LIST is a GET of a bucket with a listing query) and by bucket, and the warehouse's
per table commit and the landing's per landed file.

The first increment commits each table through delta-rs (its log loaded; the day's ledger then
keeps the table's tip), the next ones at the tip (appends.py). After each increment the tables
due a checkpoint are checkpointed, as `checkpoint_job` does (maintenance/checkpoints.py), its
requests counted with the increment's. `--checkpoint-interval N` sets every table's
`delta.checkpointInterval` after the first run: the summary's
`requests_per_table_commit_over_a_cycle` is the last N increments' requests and their
checkpoints' per table commit, a whole cycle.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from workload import DAY, event, fresh_catalog

# werkzeug's request line in moto's log: "GET /bucket/key?query HTTP/1.1" status
REQUEST = re.compile(r'"(GET|PUT|HEAD|POST|DELETE) /([^/?" ]*)([^?" ]*)(\?[^" ]*)? HTTP')


def requests(log: Path, start: int) -> tuple[Counter, int]:
    """The requests logged after byte `start`: {(bucket, LIST|GET|PUT|HEAD|POST|DELETE): n}, and
    the log's length now."""
    data = log.read_bytes()
    found: Counter = Counter()
    for method, bucket, key, query in REQUEST.findall(data[start:].decode(errors="replace")):
        listing = method == "GET" and not key.strip("/") and ("list-type" in (query or "") or "prefix" in (query or ""))
        found[(bucket, "LIST" if listing else method)] += 1
    return found, len(data)


def per_bucket(found: Counter, bucket: str) -> dict[str, int]:
    return {method: n for (b, method), n in sorted(found.items()) if b == bucket}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=5000)
    parser.add_argument("--increments", type=int, default=3)
    parser.add_argument("--work", default="/tmp/catalake-commits")
    parser.add_argument("--s3", action="store_true", help="landing and warehouse on moto's S3 server, requests counted")
    parser.add_argument("--checkpoint-interval", type=int, default=None,
                        help="every table's delta.checkpointInterval, set after the first run")
    args = parser.parse_args(argv)
    work = Path(args.work)
    cat, tables = fresh_catalog(work, args.tables)
    if not args.s3:
        return measure(args, work, cat, tables, None)
    import os

    from support.services import s3_server

    (work / "s3").mkdir()
    with s3_server(work / "s3") as server:
        os.environ.update(server.environment)
        return measure(args, work, cat, tables, server)


def measure(args, work: Path, cat, tables, server) -> None:
    """The first run of the day and the increments, printed as JSON lines."""
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.store import DeltaStore

    def no_spark():
        raise AssertionError("the increments are local")

    day = dt.date.fromisoformat(DAY)
    rng = random.Random(3)
    if server is None:
        landing_root, warehouse = str(work / "landing"), str(work / "warehouse")
        (work / "landing" / DAY).mkdir(parents=True)
        log = None
    else:
        landing_root, warehouse = server.bucket("landing") + "/events", server.bucket("lake") + "/lake"
        log = next((work / "s3").glob("moto-*.log"))
    from catalake.platform import uris

    landing_location = uris.Location.of(landing_root)
    filesystem, landing_path = landing_location.filesystem, landing_location.path
    store = DeltaStore(no_spark, warehouse, "delta-rs", master="local[2]")
    position = log.stat().st_size if log else 0

    def land(i: int) -> None:
        events = [event(rng, i * args.tables + n, args.tables) for n in range(args.tables)]
        with filesystem.open_output_stream(f"{landing_path}/{DAY}/part-{i:04d}.jsonl") as out:
            out.write(b"".join(orjson.dumps(e) + b"\n" for e in events))

    def counted(row: dict, fed: int, files: int) -> dict:
        nonlocal position
        if log is None:
            return row
        found, position = requests(log, position)
        lake, landed = per_bucket(found, "lake"), per_bucket(found, "landing")
        row["requests"] = {"warehouse": lake, "landing": landed}
        row["warehouse_requests_per_table_commit"] = round(sum(lake.values()) / max(fed, 1), 1)
        row["landing_requests_per_landed_file"] = round(sum(landed.values()) / max(files, 1), 1)
        return row

    land(0)
    counted({}, 1, 1)  # the landing's upload is not the run's
    clock = time.perf_counter()
    first = classify_partition(no_spark, store, tables, landing_root, day, local_bytes=1 << 40)
    print(json.dumps(counted({"first_run_s": round(time.perf_counter() - clock, 1), "tables": args.tables,
                              "fed": len(first.written), "seconds": first.seconds}, len(first.written), 1)), flush=True)
    if args.checkpoint_interval:
        from deltalake import DeltaTable

        for name in first.written:
            DeltaTable(store.path(name), storage_options=store.options).alter.set_table_properties(
                {"delta.checkpointInterval": str(args.checkpoint_interval)})
        counted({}, 1, 1)  # the properties' commits are not an increment's
    phases = []
    from catalake.platform.maintenance import checkpoints

    commits, spent = [], []  # per increment: tables committed, warehouse requests (its checkpoints' too)
    for i in range(1, args.increments + 1):
        land(i)
        counted({}, 1, 1)
        clock = time.perf_counter()
        result = classify_increment(no_spark, store, tables, landing_root, day, local_bytes=1 << 40)
        total = time.perf_counter() - clock
        fed = len(result.written)
        phases.append(result.seconds["commits"])
        row = counted({"increment": i, "records": result.records, "tables_fed": fed, "total_s": round(total, 2),
                       "seconds": result.seconds,
                       "commit_ms_per_table": round(1000 * result.seconds["commits"] / fed, 2)},
                      fed, result.read["files"])
        clock = time.perf_counter()
        done = checkpoints.checkpoint_tables(store, sorted(checkpoints.due(store.location, [day])))  # the cadence's job
        if done:
            row["checkpoints"] = {"tables": len(done), "seconds": round(time.perf_counter() - clock, 2),
                                  **counted({}, len(done), 1).get("requests", {})}
        commits.append(fed)
        spent.append(sum(row.get("requests", {}).get("warehouse", {}).values())
                     + sum(row.get("checkpoints", {}).get("warehouse", {}).values()))
        print(json.dumps(row), flush=True)
    cycle = slice(-args.checkpoint_interval, None) if args.checkpoint_interval else slice(None)
    print(json.dumps({"tables": args.tables, "storage": "s3 (moto, loopback)" if server else "local disk",
                      "commit_phase_median_s": round(statistics.median(phases), 2),
                      "commit_ms_per_table": round(1000 * statistics.median(phases) / args.tables, 2),
                      **({"requests_per_table_commit_all_increments": round(sum(spent) / sum(commits), 2),
                          "requests_per_table_commit_over_a_cycle": round(sum(spent[cycle]) / sum(commits[cycle]), 2)}
                         if server else {})}), flush=True)


if __name__ == "__main__":
    main()
