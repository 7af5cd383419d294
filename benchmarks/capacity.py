"""catalake's capacity model (issue 40, point 6), checked against a scaled simulation here.

    python benchmarks/capacity.py [--tables 500] [--increments 10] [--files 100000] [--records 100000] [--work DIR]

1. **Unit costs**, measured in this run at half the scale or less: classification CPU per
   record and per run (full runs of two sizes in local processes), the driver's seconds per table commit of an increment
   (local disk), the S3 requests per table commit, per run and per landed file (moto's S3 server
   on the loopback, its request log counted), and driver memory per landed file for listing and
   planning a day.
2. **The model** (`model`, which docs/capacity.md applies to production) predicts a scaled
   simulation from those costs, and the simulation runs here: `--tables` tables fed by
   `--increments` increments on local disk and on the S3 server (10: a checkpoint cycle), a full run of `--records`
   records, `--files` landed files listed and planned. Printed side by side with the ratio
   measured / model.
3. The model for docs/capacity.md's production scenario, from the same unit costs.

Printed as JSON lines. Dagster's reporting cost per table (1.9 ms, eventlog.py) is the figure of
benchmarks/RESULTS.md ("Dagster events at thousands of tables"), not measured again here. The
moto server runs on the same two cores as catalake, so its request latency is not S3's: the
production model takes S3's from `Scenario.request_seconds`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import shutil
import statistics
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from commits import per_bucket, requests
from workload import DAY, event, fresh_catalog

CYCLE = 10  # increments: a table's commits from one checkpoint to the next
DAGSTER_SECONDS_PER_TABLE = 0.0019  # benchmarks/RESULTS.md: 1.87-2.02 ms a table at 1,000 and 5,000 tables
# Amazon S3 Standard request prices (us-east-1, per 1,000 requests): writes and listings, reads.
# DELETE is free.
PRICE_PER_1000 = {"PUT": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "DELETE": 0.0}


@dataclass
class Costs:
    """What one unit of work costs, measured here."""

    cpu_seconds_per_record: float  # classification and writing, one core
    run_cpu_seconds: float  # a run's fixed share of the job (its processes), one core
    cpu_seconds_per_definition: float  # a task's cost per definition it feeds (its classifier, its Parquet file), one core
    commit_seconds_per_table: float  # the driver's increment commit phase per fed table, local disk, 2 cores
    requests_per_table_commit: dict  # {method: requests} on object storage, per fed table of an increment
    landing_requests_per_run: dict  # {method: requests} listing the landing's day, per run
    landing_requests_per_file: dict  # {method: requests} reading a new landed file
    plan_bytes_per_landed_file: float  # driver memory of listing and planning a day, per file
    dagster_seconds_per_table: float = DAGSTER_SECONDS_PER_TABLE


@dataclass
class Scenario:
    """A deployment: what lands, how it is run and on what."""

    events_per_day: float
    definitions: int
    landed_files_per_day: float
    increments_per_day: float
    bytes_per_event: float = 400  # issue 40: 400 GB a day for 1B events
    cluster_cores: int = 2
    task_bytes: int = 256 << 20  # landing.planning.SPLIT_BYTES
    target_file_bytes: int = 128 << 20  # warehouse.merging.TARGET_FILE_BYTES
    parquet_ratio: float = 0.25  # Parquet bytes per landed JSON byte (the workload's: 0.2-0.3)
    retention_days: float = 7  # CATALAKE_RETENTION_HOURS / 24
    request_seconds: float = 0.0  # object storage's latency per request (0: local disk)
    commit_threads: int = 8  # CATALAKE_COMMIT_THREADS: table commits at once


def fed_tables(events: float, definitions: int) -> float:
    """Definitions fed by `events` events of all definitions (the workload's round robin; traffic
    concentrated on a few definitions feeds fewer)."""
    return min(events, definitions)


def _requests(c: Costs, fed: float, runs: float, files: float) -> dict:
    found: dict[str, float] = {}
    for per, n in ((c.requests_per_table_commit, fed), (c.landing_requests_per_run, runs),
                   (c.landing_requests_per_file, files)):
        for method, k in per.items():
            found[method] = found.get(method, 0) + k * n
    return found


def model(s: Scenario, c: Costs) -> dict:
    """Per increment, per full run and per day: tasks, files, commits, requests and their price,
    Dagster events, driver memory and time. A table's commit costs the driver's CPU measured on
    local disk, plus its requests' latency shared by the commit threads."""
    per_increment_events = s.events_per_day / s.increments_per_day
    per_increment_files = s.landed_files_per_day / s.increments_per_day
    fed = fed_tables(per_increment_events, s.definitions)
    commit = c.commit_seconds_per_table + sum(c.requests_per_table_commit.values()) * s.request_seconds / s.commit_threads
    increment_requests = _requests(c, fed, 1, per_increment_files)
    increment_seconds = {
        "classification": (c.run_cpu_seconds + fed * c.cpu_seconds_per_definition
                           + per_increment_events * c.cpu_seconds_per_record) / s.cluster_cores,
        "commits": fed * commit,
        "dagster": fed * c.dagster_seconds_per_table,
    }
    day_bytes = s.events_per_day * s.bytes_per_event
    full_fed = fed_tables(s.events_per_day, s.definitions)
    tasks = max(1, math.ceil(day_bytes / s.task_bytes))
    files_per_table_day = max(1, math.ceil(day_bytes * s.parquet_ratio / max(full_fed, 1) / s.target_file_bytes))
    full_requests = _requests(c, full_fed, 1, s.landed_files_per_day)
    full_seconds = {
        "classification": (c.run_cpu_seconds + tasks * fed_tables(s.events_per_day / tasks, s.definitions)
                           * c.cpu_seconds_per_definition + s.events_per_day * c.cpu_seconds_per_record) / s.cluster_cores,
        "commits": full_fed * commit,
        "dagster": full_fed * c.dagster_seconds_per_table,
    }
    day_requests = {m: increment_requests.get(m, 0) * s.increments_per_day + full_requests.get(m, 0)
                    for m in set(increment_requests) | set(full_requests)}
    increment_files_day = fed * s.increments_per_day
    return {
        "increment": {
            "landed_files": round(per_increment_files, 1), "events": round(per_increment_events),
            "tables_fed": round(fed), "files_written": round(fed), "commits": round(fed),
            "requests": {m: round(n) for m, n in sorted(increment_requests.items())},
            "seconds": {k: round(v, 2) for k, v in increment_seconds.items()},
            "seconds_total": round(sum(increment_seconds.values()), 1),
            "interval_seconds": round(86400 / s.increments_per_day),
        },
        "full_run": {
            "tasks": tasks, "tables_fed": round(full_fed),
            "files_per_table_day": files_per_table_day, "commits": round(full_fed),
            "requests": {m: round(n) for m, n in sorted(full_requests.items())},
            "seconds": {k: round(v, 1) for k, v in full_seconds.items()},
            "seconds_total": round(sum(full_seconds.values()), 1),
            "driver_plan_mib": round(s.landed_files_per_day * c.plan_bytes_per_landed_file / 2**20, 1),
        },
        "day": {
            "commits": round(fed * s.increments_per_day + 2 * full_fed),  # increments, full run, compaction
            "files_written_by_increments": round(increment_files_day),
            "files_live_after_maintenance": round(full_fed * files_per_table_day),
            "files_on_storage_within_retention": round((increment_files_day + full_fed * files_per_table_day)
                                                       * s.retention_days),
            "requests": {m: round(n) for m, n in sorted(day_requests.items())},
            "request_price_usd": round(sum(n * PRICE_PER_1000.get(m, 0.0004) / 1000 for m, n in day_requests.items()), 2),
            "dagster_events": round((fed * s.increments_per_day + full_fed) * 2),  # a materialization and its check a table
        },
    }


def measure_records(work: Path, records: int, definitions: int = 10) -> dict:
    """A full run of `records` records over `definitions` definitions in local processes: its
    CPU seconds (the job's wall time times the processes)."""
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.warehouse.store import DeltaStore

    cat, tables = fresh_catalog(work, definitions)
    rng = random.Random(5)
    (work / "landing" / DAY).mkdir(parents=True)
    with open(work / "landing" / DAY / "events.jsonl", "wb") as out:
        for n in range(records):
            out.write(orjson.dumps(event(rng, n, definitions)) + b"\n")
    store = DeltaStore(_no_spark, work / "warehouse", "delta-rs", master="local[2]")
    result = classify_partition(_no_spark, store, tables, str(work / "landing"), dt.date.fromisoformat(DAY),
                                local_bytes=1 << 40)
    return {"records": result.records, "job_seconds": result.seconds["job"],
            "cpu_seconds": result.seconds["job"] * (os.cpu_count() or 2)}


def measure_increments(work: Path, tables_n: int, files_per: list[int], server=None, log: Path | None = None) -> dict:
    """Increments each feeding all `tables_n` tables, increment i landing `files_per[i]` files
    (together one event per table); on local disk, or landing and warehouse on the S3 server
    with its requests counted from `log`."""
    from catalake.platform import uris
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.store import DeltaStore

    cat, tables = fresh_catalog(work, tables_n)
    if server is None:
        landing, warehouse = str(work / "landing"), str(work / "warehouse")
    else:
        landing, warehouse = server.bucket(f"landing{tables_n}") + "/events", server.bucket(f"lake{tables_n}") + "/lake"
    store = DeltaStore(_no_spark, warehouse, "delta-rs", master="local[2]")
    root = uris.Location.of(landing)
    filesystem, base = root.filesystem, root.path
    uris.make_folders(filesystem, f"{base}/{DAY}")
    rng = random.Random(3)
    day = dt.date.fromisoformat(DAY)
    landed = 0

    def land(files: int) -> None:
        nonlocal landed
        for k in range(files):
            numbers = range(k, tables_n, files)
            with filesystem.open_output_stream(f"{base}/{DAY}/part-{landed:05d}.jsonl") as out:
                out.write(b"".join(orjson.dumps(event(rng, n, tables_n)) + b"\n" for n in numbers))
            landed += 1

    land(1)
    classify_partition(_no_spark, store, tables, landing, day, local_bytes=1 << 40)
    runs = []
    for files in files_per:
        land(files)
        position = requests(log, 0)[1] if log else 0
        result = classify_increment(_no_spark, store, tables, landing, day, local_bytes=1 << 40)
        found = requests(log, position)[0] if log else {}
        runs.append({"tables_fed": len(result.written), "landed_files": result.read["files"],
                     "commit_seconds": result.seconds["commits"], "job_seconds": result.seconds.get("job", 0.0),
                     "warehouse": per_bucket(found, f"lake{tables_n}"), "landing": per_bucket(found, f"landing{tables_n}")})
    return {"tables": tables_n, "increments": runs}


def measure_planning(work: Path, files: int) -> dict:
    """`files` small landed files listed and planned for one day: the driver's memory (Python
    allocations, tracemalloc's peak) and seconds."""
    from catalake.platform.landing.listing import list_day
    from catalake.platform.landing.planning import plan_tasks

    folder = work / "landing" / DAY
    folder.mkdir(parents=True)
    for n in range(files):
        (folder / f"f-{n:07d}.jsonl").write_bytes(b'{"specversion":"1.0"}\n')
    tracemalloc.start()
    clock = time.perf_counter()
    listing = list_day(str(work / "landing"), dt.date.fromisoformat(DAY), "day")
    tasks = plan_tasks(None, listing.files, 2)
    seconds = time.perf_counter() - clock
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"files": len(listing.files), "tasks": len(tasks), "seconds": round(seconds, 2), "peak_bytes": peak,
            "bytes_per_file": peak / max(files, 1)}


def _no_spark():
    raise AssertionError("local processes only")


def _mean(runs: list[dict], side: str, by: str) -> dict:
    total = sum(r[by] for r in runs)
    return {m: sum(r[side].get(m, 0) for r in runs) / total for m in sorted({m for r in runs for m in r[side]})}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--increments", type=int, default=CYCLE)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--work", default="/tmp/catalake-capacity")
    args = parser.parse_args(argv)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "s3").mkdir(parents=True)
    from support.services import s3_server

    def emit(row: dict) -> None:
        print(json.dumps(row), flush=True)

    # 1. unit costs, at a small scale
    calibration = max(args.tables // 5, 20)
    smaller = measure_records(work / "records-smaller", max(args.records // 10, 5_000))
    small_records = measure_records(work / "records-small", max(args.records // 2, 20_000))
    per_record = ((small_records["cpu_seconds"] - smaller["cpu_seconds"])
                  / max(small_records["records"] - smaller["records"], 1))
    fixed = max(smaller["cpu_seconds"] - per_record * smaller["records"], 0.0)
    small_planning = measure_planning(work / "planning-small", max(args.files // 10, 1000))
    # a table's log grows between checkpoints (every 10 commits: store.TABLE_PROPERTIES), and so
    # does each load's cost: the costs are averaged over a whole cycle of 10 increments
    local = measure_increments(work / "increments-local-small", calibration, [1] * CYCLE)
    with s3_server(work / "s3") as server:
        os.environ.update(server.environment)
        log = next((work / "s3").glob("moto-*.log"))
        small = measure_increments(work / "increments-small", calibration, [1, 3] + [1] * (CYCLE - 2), server, log)
        one, three = small["increments"][:2]
        per_file = {m: (three["landing"].get(m, 0) - one["landing"].get(m, 0)) / 2
                    for m in set(one["landing"]) | set(three["landing"])}
        per_run = {m: one["landing"].get(m, 0) - per_file.get(m, 0) for m in one["landing"]}
        # an increment of one event per table: its job is each table's classifier and Parquet file
        per_definition = statistics.median(r["job_seconds"] * (os.cpu_count() or 2) / r["tables_fed"]
                                           for r in local["increments"])
        costs = Costs(per_record, fixed, per_definition,
                      sum(r["commit_seconds"] for r in local["increments"]) / sum(r["tables_fed"] for r in local["increments"]),
                      _mean(small["increments"], "warehouse", "tables_fed"),
                      {m: max(n, 0) for m, n in per_run.items()}, {m: max(n, 0) for m, n in per_file.items()},
                      small_planning["bytes_per_file"])
        emit({"unit_costs": asdict(costs), "measured_at": {"records": [smaller["records"], small_records["records"]],
                                                             "planned_files": small_planning["files"],
                                                             "tables": calibration, "increments": CYCLE}})

        # 2. the scaled simulation, against the model
        big_s3 = measure_increments(work / "increments", args.tables, [1] * args.increments, server, log)
    big_local = measure_increments(work / "increments-local", args.tables, [1] * args.increments)
    big_records = measure_records(work / "records", args.records)
    big_planning = measure_planning(work / "planning", args.files)
    simulated = Scenario(events_per_day=args.tables * args.increments, definitions=args.tables,
                         landed_files_per_day=args.increments, increments_per_day=args.increments)
    predicted = model(simulated, costs)
    runs = big_s3["increments"]
    measured_requests = {m: sum(r["warehouse"].get(m, 0) + r["landing"].get(m, 0) for r in runs) / len(runs)
                         for m in sorted({m for r in runs for m in (*r["warehouse"], *r["landing"])})}
    sides = [
        ("increment classification, local processes (s)", predicted["increment"]["seconds"]["classification"],
         statistics.median(r["job_seconds"] for r in big_local["increments"])),
        ("increment commit phase, local disk (s)", predicted["increment"]["seconds"]["commits"],
         sum(r["commit_seconds"] for r in big_local["increments"]) / args.increments),
        ("increment requests, S3", sum(predicted["increment"]["requests"].values()), sum(measured_requests.values())),
        *[(f"increment {m} requests, S3", predicted["increment"]["requests"].get(m, 0), n)
          for m, n in measured_requests.items()],
        ("full run classification, one core (s)", costs.run_cpu_seconds + args.records * costs.cpu_seconds_per_record,
         big_records["cpu_seconds"]),
        ("driver memory listing and planning (MiB)", args.files * costs.plan_bytes_per_landed_file / 2**20,
         big_planning["peak_bytes"] / 2**20),
    ]
    for what, model_value, measured in sides:
        emit({"check": what, "model": round(model_value, 2), "measured": round(measured, 2),
              "measured_over_model": round(measured / model_value, 2) if model_value else None})
    emit({"scale": {"tables": args.tables, "increments": args.increments, "records": args.records, "files": args.files},
          "s3_commit_phase_seconds": [r["commit_seconds"] for r in runs],
          "planning_seconds": big_planning["seconds"]})

    # 3. production: docs/capacity.md
    production = Scenario(events_per_day=1e9, definitions=5000, landed_files_per_day=32 * 86400 / 300,
                          increments_per_day=86400 / 30, cluster_cores=50 * 8, request_seconds=0.02)
    emit({"scenario": "production, increments every 30 s", **asdict(production), "model": model(production, costs)})
    for name, change in (("increments every 5 minutes", {"increments_per_day": 86400 / 300}),
                         ("increments every 5 minutes, CATALAKE_COMMIT_THREADS=64",
                          {"increments_per_day": 86400 / 300, "commit_threads": 64})):
        emit({"scenario": f"production, {name}", "model": model(Scenario(**{**asdict(production), **change}), costs)})


if __name__ == "__main__":
    main()
