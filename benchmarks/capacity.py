"""catalake's capacity model (issues 40 and 65), checked against a scaled simulation here.

    python benchmarks/capacity.py [--tables 500] [--increments 21] [--files 100000] [--records 100000] [--work DIR]
    python benchmarks/capacity.py --model-only OUTPUT   # part 3 again, from the unit costs a run printed

1. **Unit costs**, measured in this run at a fifth of the scale or less: classification CPU per
   record and per run (full runs of two sizes in local processes); per table commit at the
   version the day's ledger knows (appends.py), the driver's seconds (local disk) and its
   object-store requests (moto's S3 server on the loopback, its request log counted); per
   checkpoint, the same (the calibration's tables checkpoint every `CALIBRATION_INTERVAL`
   commits); the requests per run and per landed file; driver memory per landed file planned.
2. **The model** (`model`, which docs/capacity.md applies to production) predicts a scaled
   simulation from those costs, and the simulation runs here: `--tables` tables fed by
   `--increments` increments on local disk and on the S3 server (two checkpoint cycles), a full
   run of `--records` records, `--files` landed files listed and planned. Printed side by side
   with the ratio measured / model.
3. The model for docs/capacity.md's production scenario, from the same unit costs: Zipf traffic
   over the definitions, each table committed when it is due (runs/cadence.py).

Printed as JSON lines. Dagster's reporting cost per event (0.95 ms, eventlog.py) is the figure of
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from commits import per_bucket, requests
from workload import DAY, event, fresh_catalog

CALIBRATION_INTERVAL = 10  # the calibration tables' delta.checkpointInterval: two cycles in 21 increments
DAGSTER_SECONDS_PER_EVENT = 0.00095  # benchmarks/RESULTS.md: 1.87-2.02 ms a table for a materialization and a check
# issue 73 (benchmarks/increment_events.py, 100 and 1,000 definitions): an increment's run stores 22
# events whatever the tables it commits; at most 20 observations (late tables) and 20 failed checks
# more. What they grow PostgreSQL by (benchmarks/dagster_year.py at 5,000 definitions, vacuumed, the
# second day of increments): 43.6 KB an increment; a full run's materialization and check per
# table 9.7 KB a table (before issue 73: 12.6 KB a table of serialized events for every commit).
INCREMENT_EVENTS, INCREMENT_DATABASE_BYTES = 22, 43_600
FULL_RUN_DATABASE_BYTES_PER_TABLE, EVENT_BYTES_PER_COMMIT_BEFORE_73 = 9_650, 12_600
# Amazon S3 Standard request prices (us-east-1, per 1,000 requests): writes and listings, reads.
# DELETE is free.
PRICE_PER_1000 = {"PUT": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004, "HEAD": 0.0004, "DELETE": 0.0}
# delta-rs 1.6 creates a checkpoint from two loads of the log (its table's and its own), each
# reading every JSON entry since the last checkpoint twice: 4 GETs an entry (commits.py, two cycles)
CHECKPOINT_GETS_PER_ENTRY = 4
# before issue 65 every table commit loaded the table's log through delta-rs (docs/capacity.md, session 16)
BEFORE_REQUESTS_PER_TABLE_COMMIT = {"GET": 16.3, "LIST": 4.1, "PUT": 2.2, "HEAD": 1.2}
BEFORE_COMMIT_SECONDS = 0.0102


@dataclass
class Costs:
    """What one unit of work costs, measured here."""

    cpu_seconds_per_record: float  # classification and writing, one core
    run_cpu_seconds: float  # a run's fixed share of the job (its processes), one core
    cpu_seconds_per_definition: float  # a task's cost per definition it feeds (its classifier, its Parquet file), one core
    append_seconds: float  # the driver's seconds per table commit at the tip, local disk, 2 cores
    requests_per_append: dict  # {method: requests} on object storage per table commit at the tip, its data file's PUT apart
    requests_per_checkpoint: dict  # {method: requests} per table checkpoint at CALIBRATION_INTERVAL commits
    checkpoint_seconds: float  # the driver's seconds per table checkpoint at CALIBRATION_INTERVAL, local disk
    warehouse_requests_per_run: dict  # {method: requests} of an increment's own (ledger, run record), whatever it commits
    landing_requests_per_run: dict  # {method: requests} listing the landing's day, per run
    landing_requests_per_file: dict  # {method: requests} reading a new landed file
    plan_bytes_per_landed_file: float  # driver memory of listing and planning a day, per file
    dagster_seconds_per_event: float = DAGSTER_SECONDS_PER_EVENT


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
    target_file_bytes: int = 128 << 20  # CATALAKE_TARGET_FILE_BYTES
    parquet_ratio: float = 0.25  # Parquet bytes per landed JSON byte (the workload's: 0.2-0.3)
    retention_days: float = 7  # CATALAKE_RETENTION_HOURS / 24
    request_seconds: float = 0.0  # object storage's latency per request (0: local disk)
    commit_threads: int = 8  # CATALAKE_COMMIT_THREADS: table commits at once
    zipf: float = 0.0  # the definitions' traffic: a Zipf law of this exponent (0: all alike)
    freshness_seconds: float | None = None  # CATALAKE_FRESHNESS_SECONDS (None: every table fed commits every increment)
    launch_seconds: float = 10.0  # cadence.LAUNCH_SECONDS: a sensor's run request until its step starts
    checkpoint_interval: int = 100  # the tables' delta.checkpointInterval
    before_issue_65: bool = False  # every commit through delta-rs, its log loaded (the figures of session 16)
    before_issue_73: bool = False  # a materialization and a check per table and increment (6.3 KB each)


def _add(into: dict, per: dict, n: float) -> None:
    for method, k in per.items():
        into[method] = into.get(method, 0) + k * n


def checkpoint_requests(c: Costs, interval: int) -> dict:
    """A table checkpoint's requests at `interval` commits since the last, from the calibration's."""
    return {**c.requests_per_checkpoint,
            "GET": c.requests_per_checkpoint.get("GET", 0) + CHECKPOINT_GETS_PER_ENTRY * (interval - CALIBRATION_INTERVAL)}


def table_rates(s: Scenario) -> list[float]:
    """Each definition's events a second (a Zipf law of exponent `s.zipf`; 0: all alike)."""
    weights = [1 / (rank ** s.zipf) for rank in range(1, s.definitions + 1)]
    total = sum(weights)
    return [s.events_per_day / 86400 * w / total for w in weights]


def cadence_per_day(s: Scenario, run_seconds: float) -> tuple[float, float, float, float]:
    """Files written, commits, and the increments a table is fed by and waits, a day, over all
    tables (runs/cadence.py): a table fed in an increment is staged while its oldest record
    (landed up to an interval before the listing) plus the interval, a run's launch and an
    increment's seconds stays under its target, and committed at once when its rows reach the
    target file size. Also the largest age at commit."""
    interval = 86400 / s.increments_per_day
    files = commits = fed = 0.0
    worst = 0.0
    horizon = interval + s.launch_seconds + run_seconds
    for rate in table_rates(s):
        # traffic all alike is spread evenly (the workload's round robin); a Zipf law's arrives at random
        p = min(1.0, rate * interval) if s.zipf == 0 else 1 - math.exp(-rate * interval)
        staged_bytes = rate * interval * s.bytes_per_event * s.parquet_ratio
        waits = 0  # increments it waits after the one that first stages it (its oldest record an interval old)
        if s.freshness_seconds is not None and staged_bytes < s.target_file_bytes:
            while interval + waits * interval + horizon < s.freshness_seconds:
                waits += 1
        cycle = 1 / max(p, 1e-12) + waits  # increments from one commit to the next
        files += s.increments_per_day * p
        commits += s.increments_per_day / cycle
        fed += p
        worst = max(worst, interval * (1 + waits) + s.launch_seconds + run_seconds)
    return files, commits, fed, worst


def model(s: Scenario, c: Costs) -> dict:
    """Per increment, per full run and per day: tasks, files, commits, requests and their price,
    Dagster events, driver memory and time. A table's commit costs the driver's CPU measured on
    local disk, plus its requests' latency shared by the commit threads."""
    per_increment_events = s.events_per_day / s.increments_per_day
    per_increment_files = s.landed_files_per_day / s.increments_per_day
    interval = 86400 / s.increments_per_day
    append = dict(BEFORE_REQUESTS_PER_TABLE_COMMIT) if s.before_issue_65 else {**c.requests_per_append}
    if s.before_issue_65:
        append["PUT"] -= 1  # its data file, counted apart
    checkpoint = {} if s.before_issue_65 else checkpoint_requests(c, s.checkpoint_interval)
    append_seconds = BEFORE_COMMIT_SECONDS if s.before_issue_65 else c.append_seconds
    checkpoint_seconds = c.checkpoint_seconds * (CHECKPOINT_GETS_PER_ENTRY * s.checkpoint_interval + 24) / \
        (CHECKPOINT_GETS_PER_ENTRY * CALIBRATION_INTERVAL + 24)
    run_seconds = 0.0
    for _ in range(3):  # the increment's own seconds decide the cadence, which decides them
        files, commits, fed, worst = cadence_per_day(s, run_seconds)
        commits_per = commits / s.increments_per_day
        checkpoints_per = 0.0 if s.before_issue_65 else commits_per / s.checkpoint_interval
        increment_seconds = {
            "classification": (c.run_cpu_seconds + fed * c.cpu_seconds_per_definition
                               + per_increment_events * c.cpu_seconds_per_record) / s.cluster_cores,
            "commits": commits_per * (append_seconds + sum(append.values()) * s.request_seconds / s.commit_threads),
            # before issue 73 a materialization and its expectations check per table committed; now
            # the run's few events whatever it commits
            "dagster": (commits_per * 2 if s.before_issue_73 else INCREMENT_EVENTS) * c.dagster_seconds_per_event,
        }
        run_seconds = sum(increment_seconds.values())
    # checkpoint_job's share, a run of its own beside the increments (before issue 65: in the commits)
    checkpoint_job_seconds = checkpoints_per * (checkpoint_seconds
                                                + sum(checkpoint.values()) * s.request_seconds / s.commit_threads)
    increment_requests: dict[str, float] = {}
    _add(increment_requests, {"PUT": 1}, files / s.increments_per_day)
    _add(increment_requests, append, commits_per)
    _add(increment_requests, checkpoint, checkpoints_per)
    _add(increment_requests, c.warehouse_requests_per_run, 1)
    _add(increment_requests, c.landing_requests_per_run, 1)
    _add(increment_requests, c.landing_requests_per_file, per_increment_files)
    day_bytes = s.events_per_day * s.bytes_per_event
    full_fed = min(s.events_per_day, s.definitions)
    tasks = max(1, math.ceil(day_bytes / s.task_bytes))
    files_per_table_day = max(1, math.ceil(day_bytes * s.parquet_ratio / max(full_fed, 1) / s.target_file_bytes))
    full_commit = dict(BEFORE_REQUESTS_PER_TABLE_COMMIT)  # a full run loads each table's log
    full_requests: dict[str, float] = {}
    _add(full_requests, full_commit, full_fed)
    _add(full_requests, c.landing_requests_per_run, 1)
    _add(full_requests, c.landing_requests_per_file, s.landed_files_per_day)
    full_seconds = {
        "classification": (c.run_cpu_seconds + tasks * min(s.events_per_day / tasks, s.definitions)
                           * c.cpu_seconds_per_definition + s.events_per_day * c.cpu_seconds_per_record) / s.cluster_cores,
        "commits": full_fed * (BEFORE_COMMIT_SECONDS + sum(full_commit.values()) * s.request_seconds / s.commit_threads),
        "dagster": full_fed * 2 * c.dagster_seconds_per_event,
    }
    day_requests = {m: increment_requests.get(m, 0) * s.increments_per_day + full_requests.get(m, 0)
                    for m in set(increment_requests) | set(full_requests)}
    if not s.before_issue_65:  # the first increment after the full run loads each table's log, and makes its tip
        _add(day_requests, _minus(BEFORE_REQUESTS_PER_TABLE_COMMIT, append), full_fed)
    return {
        "increment": {
            "interval_seconds": round(interval), "landed_files": round(per_increment_files, 1),
            "events": round(per_increment_events), "tables_fed": round(fed),
            "files_written": round(files / s.increments_per_day), "commits": round(commits_per),
            "checkpoints": round(checkpoints_per, 1),
            "requests": {m: round(n) for m, n in sorted(increment_requests.items())},
            "seconds": {k: round(v, 2) for k, v in increment_seconds.items()},
            "seconds_total": round(run_seconds, 1),
            "commit_phase_share_of_interval": round(increment_seconds["commits"] / interval, 2),
            "checkpoint_job_seconds_per_interval": round(checkpoint_job_seconds, 2),
            "largest_age_at_commit_seconds": round(worst, 1),
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
            "commits": round(commits + 2 * full_fed),  # increments, full run, compaction
            "files_written_by_increments": round(files),
            "files_live_after_maintenance": round(full_fed * files_per_table_day),
            "files_on_storage_within_retention": round((files + full_fed * files_per_table_day) * s.retention_days),
            "requests": {m: round(n) for m, n in sorted(day_requests.items())},
            "requests_total": round(sum(day_requests.values())),
            "request_price_usd": round(sum(n * PRICE_PER_1000.get(m, 0.0004) / 1000 for m, n in day_requests.items()), 2),
            "dagster_events": round((commits * 2 if s.before_issue_73 else INCREMENT_EVENTS * s.increments_per_day)
                                    + full_fed * 2),
            "dagster_database_mb": round(((commits * EVENT_BYTES_PER_COMMIT_BEFORE_73 if s.before_issue_73
                                           else INCREMENT_DATABASE_BYTES * s.increments_per_day)
                                          + full_fed * FULL_RUN_DATABASE_BYTES_PER_TABLE) / 1e6),
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


def measure_increments(work: Path, tables_n: int, files_per: list[int], server=None, log: Path | None = None,
                       checkpoint_interval: int | None = None) -> dict:
    """Increments each feeding all `tables_n` tables, increment i landing `files_per[i]` files
    (together one event per table); on local disk, or landing and warehouse on the S3 server
    with its requests counted from `log`. `checkpoint_interval`: every table's, set after the
    day's first run."""
    from deltalake import DeltaTable

    from catalake.platform import uris
    from catalake.platform.maintenance import checkpoints
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
    first = classify_partition(_no_spark, store, tables, landing, day, local_bytes=1 << 40)
    if checkpoint_interval:
        for name in first.written:
            DeltaTable(store.path(name), storage_options=store.options).alter.set_table_properties(
                {"delta.checkpointInterval": str(checkpoint_interval)})
    runs = []
    for files in files_per:
        land(files)
        position = requests(log, 0)[1] if log else 0
        result = classify_increment(_no_spark, store, tables, landing, day, local_bytes=1 << 40)
        clock = time.perf_counter()  # then the tables due a checkpoint, as checkpoint_job does
        done = checkpoints.checkpoint_tables(store, sorted(checkpoints.due(store.location, [day])))
        found = requests(log, position)[0] if log else {}
        runs.append({"tables_fed": len(result.written), "landed_files": result.read["files"],
                     "checkpoints": len(done), "at_tip": "logs" not in result.seconds,
                     "commit_seconds": result.seconds["commits"],
                     "checkpoint_seconds": time.perf_counter() - clock if done else 0.0,
                     "job_seconds": result.seconds.get("job", 0.0),
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


def _steady(runs: list[dict], checkpoints: bool) -> list[dict]:
    """The increments at the tip (not a table's first commit of the day), with or without checkpoints."""
    return [r for r in runs if r["at_tip"] and bool(r["checkpoints"]) == checkpoints]


def _per(runs: list[dict], side: str) -> dict:
    """Requests by method per increment, on average."""
    return {m: sum(r[side].get(m, 0) for r in runs) / len(runs) for m in sorted({m for r in runs for m in r[side]})}


def _minus(a: dict, b: dict, k: float = 1.0) -> dict:
    return {m: a.get(m, 0) - k * b.get(m, 0) for m in sorted(set(a) | set(b))}


def calibrate(work: Path, server, log: Path, tables: int, increments: int) -> tuple[dict, dict, dict, dict]:
    """Per run and per table commit at the tip (warehouse requests, from one table and `tables`
    tables), per checkpoint, and the landing's per run and per file."""
    one = measure_increments(work / "increments-one", 1, [1] * 3, server, log)
    small = measure_increments(work / "increments-small", tables, [1, 3] + [1] * (increments - 2), server, log,
                               checkpoint_interval=CALIBRATION_INTERVAL)
    single, many = _per(_steady(one["increments"], False), "warehouse"), _per(_steady(small["increments"], False), "warehouse")
    per_commit = {m: v / (tables - 1) for m, v in _minus(many, single).items()}  # its data file's PUT included
    per_run = _minus(single, per_commit)
    with_checkpoints = _steady(small["increments"], True)
    checkpoints = sum(r["checkpoints"] for r in with_checkpoints)
    spent = _minus(_per(with_checkpoints, "warehouse"), _minus(per_run, per_commit, -tables))
    per_checkpoint = {m: v * len(with_checkpoints) / max(checkpoints, 1) for m, v in spent.items()}
    first, three = small["increments"][:2]
    per_file = {m: (three["landing"].get(m, 0) - first["landing"].get(m, 0)) / 2
                for m in set(first["landing"]) | set(three["landing"])}
    landing_run = {m: first["landing"].get(m, 0) - per_file.get(m, 0) for m in first["landing"]}
    return ({m: round(max(v, 0), 2) for m, v in per_run.items()}, {m: round(max(v, 0), 3) for m, v in per_commit.items()},
            {m: round(max(v, 0), 1) for m, v in per_checkpoint.items()},
            {"run": {m: max(n, 0) for m, n in landing_run.items()}, "file": {m: max(n, 0) for m, n in per_file.items()}})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--increments", type=int, default=2 * CALIBRATION_INTERVAL + 1)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--work", default="/tmp/catalake-capacity")
    parser.add_argument("--model-only", help="a run's printed output: its unit costs, the production model again")
    args = parser.parse_args(argv)
    if args.model_only:
        measured = next(json.loads(line) for line in open(args.model_only) if line.startswith('{"unit_costs"'))
        costs = Costs(**measured["unit_costs"])
        for name, scenario in production_scenarios():
            print(json.dumps({"scenario": name, **asdict(scenario), "model": model(scenario, costs)}), flush=True)
        return
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
    local = measure_increments(work / "increments-local-small", calibration, [1] * args.increments,
                               checkpoint_interval=CALIBRATION_INTERVAL)
    with s3_server(work / "s3") as server:
        os.environ.update(server.environment)
        log = next((work / "s3").glob("moto-*.log"))
        per_run, per_commit, per_checkpoint, landing = calibrate(work, server, log, calibration, args.increments)
        # an increment of one event per table: its job is each table's classifier and Parquet file
        per_definition = statistics.median(r["job_seconds"] * (os.cpu_count() or 2) / r["tables_fed"]
                                           for r in local["increments"])
        steady, checkpointing = _steady(local["increments"], False), _steady(local["increments"], True)
        costs = Costs(per_record, fixed, per_definition,
                      sum(r["commit_seconds"] for r in steady) / sum(r["tables_fed"] for r in steady),
                      _minus(per_commit, {"PUT": 1}), per_checkpoint,
                      sum(r["checkpoint_seconds"] for r in checkpointing) / max(sum(r["checkpoints"] for r in checkpointing), 1),
                      per_run, landing["run"], landing["file"], small_planning["bytes_per_file"])
        emit({"unit_costs": asdict(costs), "measured_at": {"records": [smaller["records"], small_records["records"]],
                                                             "planned_files": small_planning["files"],
                                                             "tables": calibration, "increments": args.increments,
                                                             "checkpoint_interval": CALIBRATION_INTERVAL}})

        # 2. the scaled simulation, against the model
        big_s3 = measure_increments(work / "increments", args.tables, [1] * args.increments, server, log,
                                    checkpoint_interval=CALIBRATION_INTERVAL)
    big_local = measure_increments(work / "increments-local", args.tables, [1] * args.increments,
                                   checkpoint_interval=CALIBRATION_INTERVAL)
    big_records = measure_records(work / "records", args.records)
    big_planning = measure_planning(work / "planning", args.files)
    simulated = Scenario(events_per_day=args.tables * args.increments, definitions=args.tables,
                         landed_files_per_day=args.increments, increments_per_day=args.increments,
                         checkpoint_interval=CALIBRATION_INTERVAL)
    predicted = model(simulated, costs)
    runs = [r for r in big_s3["increments"] if r["at_tip"]]  # a table's first commit of the day is the full run's kind
    locals_ = [r for r in big_local["increments"] if r["at_tip"]]
    measured_requests = {m: sum(r["warehouse"].get(m, 0) + r["landing"].get(m, 0) for r in runs) / len(runs)
                         for m in sorted({m for r in runs for m in (*r["warehouse"], *r["landing"])})}
    sides = [
        ("increment classification, local processes (s)", predicted["increment"]["seconds"]["classification"],
         statistics.median(r["job_seconds"] for r in big_local["increments"])),
        ("increment commit phase, local disk (s)", predicted["increment"]["seconds"]["commits"],
         statistics.mean(r["commit_seconds"] for r in locals_)),
        ("checkpoints per increment, local disk (s)", predicted["increment"]["checkpoint_job_seconds_per_interval"],
         sum(r["checkpoint_seconds"] for r in locals_) / len(locals_)),
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
    s3_commits = sum(r["tables_fed"] for r in runs)
    emit({"scale": {"tables": args.tables, "increments": args.increments, "records": args.records, "files": args.files},
          "s3_warehouse_requests_per_table_commit_over_the_cycles":
              round(sum(sum(r["warehouse"].values()) for r in runs) / s3_commits, 2),
          "s3_commit_phase_seconds": [round(r["commit_seconds"] + r["checkpoint_seconds"], 2) for r in big_s3["increments"]],
          "planning_seconds": big_planning["seconds"]})

    # 3. production: docs/capacity.md
    for name, scenario in production_scenarios():
        emit({"scenario": name, **asdict(scenario), "model": model(scenario, costs)})


def production_scenarios() -> list[tuple[str, Scenario]]:
    """docs/capacity.md's: 1B events a day over 5,000 definitions on 400 cores, S3 at 20 ms."""
    base = Scenario(events_per_day=1e9, definitions=5000, landed_files_per_day=32 * 86400 / 300,
                    increments_per_day=86400 / 30, cluster_cores=50 * 8, request_seconds=0.02)
    zipf = replace(base, zipf=1.0, freshness_seconds=60.0)
    return [
        ("before issue 65: increments every 30 s, every table fed commits", replace(base, before_issue_65=True)),
        ("increments every 30 s, uniform traffic, every table fed commits", base),
        ("increments every 30 s, Zipf traffic (s=1), 60 s freshness", zipf),
        ("the same, CATALAKE_COMMIT_THREADS=64", replace(zipf, commit_threads=64)),
        ("increments every 15 s, Zipf traffic (s=1), 60 s freshness, 64 threads",
         replace(zipf, increments_per_day=86400 / 15, commit_threads=64)),
        ("increments every 30 s, Zipf traffic (s=1.5), 60 s freshness, 64 threads",
         replace(zipf, zipf=1.5, commit_threads=64)),
        ("increments every 30 s, Zipf traffic (s=1), 60 s freshness, 64 threads, checkpoints every 1,000 commits",
         replace(zipf, commit_threads=64, checkpoint_interval=1000)),
    ]


if __name__ == "__main__":
    main()
