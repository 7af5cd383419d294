"""Fresh tables (issue 28): a day arriving file by file, classified incrementally after each file,
against one full run of the final day and against re-running the whole day after each file.

    python benchmarks/fresh.py --records 1000000 --files 100 [--definitions 10] [--work DIR]
    python benchmarks/fresh.py --sensor 10 [--work DIR]

workload.py's events are cut into `--files` JSON lines files that land one at a time; after each
lands, `classify_increment` appends what is new (on the classifier's local path: an increment is a
few MB). Printed as JSON lines: the increments' total and median seconds, the full run of the
final day (local Spark session, the tables existing), the sum a full re-run after every file
would cost (estimated from full runs measured at a quarter, half and all of the files), and the
checks: conservation after every increment, and the increments' tables equal to the full run's
(row hashes without `ingested_at`).

`--sensor N [--spark-connect] [--local-task-bytes B]`: the freshness path as deployed. `dagster-daemon` runs the code location with the
landing sensor on (SQLite instance, catalake's dagster.yaml); N files of 10,000 events land one
after the other, each as soon as the previous one's rows were readable; the latency of a file is
from its landing to its last event being in its Delta table (polled every 0.5 s with delta-rs).
Printed: each latency, the median and the maximum. `--spark-connect`: the runs connect to a warm
Spark Connect server (deploy/spark-connect.sh, as `make serve` starts it); `--local-task-bytes 0`
sends every increment through Spark instead of local processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, catalog, event, fresh_catalog


def hashes(store, names) -> dict:
    out = {}
    for name in names:
        if store.exists(name):
            rows = store.read_arrow(name).drop_columns(["ingested_at"]).to_pylist()
            for r in rows:  # the landings are separate folders: the file's name is its lineage here
                r["source_file"] = r["source_file"].rsplit("/", 1)[-1]
            out[name] = hashlib.sha256("".join(sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)).encode()).hexdigest()
    return out


def sensor_latency(work: Path, files: int, definitions: int, connect: bool = False, local_bytes: int | None = None) -> None:
    import subprocess

    from deltalake import DeltaTable

    from catalake.platform.uris import Location
    from catalake.platform.warehouse.files import read_snapshot

    repo = Path(__file__).resolve().parents[1]
    shutil.rmtree(work, ignore_errors=True)
    (work / "catalog").mkdir(parents=True)
    (work / "catalog" / "bench.xreg.json").write_text(json.dumps(catalog(definitions)))
    (work / "dagster").mkdir()
    landing = work / "landing" / DAY
    landing.mkdir(parents=True)
    env = {**os.environ, "CATALAKE_CATALOG": str(work / "catalog"), "CATALAKE_LANDING": str(work / "landing"),
           "CATALAKE_WAREHOUSE": str(work / "warehouse"), "CATALAKE_START_DATE": DAY, "DAGSTER_HOME": str(work / "dagster")}
    bin_dir = Path(sys.executable).parent
    if local_bytes is not None:
        env["CATALAKE_LOCAL_TASK_BYTES"] = str(local_bytes)
    script = repo / "deploy" / "spark-connect.sh"
    if connect:
        started = time.perf_counter()
        subprocess.run(["bash", str(script), "start", str(work / "spark-connect"), "15042", "4060"], check=True,
                       env={**env, "BIN": str(bin_dir)})
        print(json.dumps({"spark_connect_start_s": round(time.perf_counter() - started, 1)}), flush=True)
        env["CATALAKE_SPARK_MASTER"] = "sc://127.0.0.1:15042"
    subprocess.run([str(bin_dir / "python"), "-c", f"from catalake.instance import ensure_config; ensure_config({str(work / 'dagster')!r})"],
                   check=True, env=env)
    rng = random.Random(11)
    per = 10_000
    table = work / "warehouse" / "messages" / "bench_sensors__reading0"

    def land(i: int) -> str:
        events = [event(rng, n, definitions) for n in range(i * per, (i + 1) * per)]
        last = next(e["id"] for e in reversed(events) if e["type"].endswith("Reading0"))
        (landing / f"part-{i:04d}.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
        return last

    def readable(event_id: str) -> bool:
        try:
            ids = read_snapshot(DeltaTable(str(table)), Location.of(table), columns=["id"]).column("id").to_pylist()
        except Exception:  # noqa: BLE001 - not created yet
            return False
        return event_id in ids

    # the sensor is turned on before the daemon starts: both would create the SQLite instance at once
    subprocess.run([str(bin_dir / "dagster"), "sensor", "start", "landing_sensor", "-w", "workspace.yaml"],
                   cwd=repo, env=env, check=True, capture_output=True, timeout=300)
    with open(work / "daemon.log", "wb") as sink:
        daemon = subprocess.Popen([str(bin_dir / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=repo, env=env,
                                  stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    latencies = []
    try:
        for i in range(files):
            last = land(i)
            clock = time.perf_counter()
            while not readable(last):
                if time.perf_counter() - clock > 600:
                    raise SystemExit(f"file {i}: not readable after 600 s; see {work / 'daemon.log'}")
                time.sleep(0.5)
            latencies.append(round(time.perf_counter() - clock, 1))
            print(json.dumps({"file": i, "latency_s": latencies[-1]}), flush=True)
    finally:
        import signal

        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(60)
        if connect:
            subprocess.run(["bash", str(script), "stop", str(work / "spark-connect")], env={**env, "BIN": str(bin_dir)})
    print(json.dumps({"files": files, "records_per_file": per, "spark_connect": connect, "local_task_bytes": local_bytes,
                      "latency_median_s": statistics.median(latencies),
                      "latency_max_s": max(latencies), "latencies_s": latencies}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--work", default="/tmp/catalake-fresh")
    parser.add_argument("--sensor", type=int, default=0, help="measure N files' landing-to-queryable latency instead")
    parser.add_argument("--spark-connect", action="store_true", help="--sensor: runs connect to a warm Spark Connect server")
    parser.add_argument("--local-task-bytes", type=int, default=None, help="--sensor: CATALAKE_LOCAL_TASK_BYTES")
    args = parser.parse_args(argv)
    if args.sensor:
        sensor_latency(Path(args.work) / "sensor", args.sensor, args.definitions, args.spark_connect, args.local_task_bytes)
        return

    from catalake.platform.runs.day import classify_partition, conservation
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.spark import build_session
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
    from catalake.platform.warehouse.message_tables import sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    work = Path(args.work)
    cat, tables = fresh_catalog(work, args.definitions)
    rng = random.Random(7)
    per = args.records // args.files
    chunks = [b"".join(orjson.dumps(event(rng, n, args.definitions)) + b"\n" for n in range(i * per, (i + 1) * per))
              for i in range(args.files)]
    names = [t.name for t in tables] + [DEADLETTER_TABLE]
    day = dt.date.fromisoformat(DAY)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_session("local[*]", "catalake-fresh-bench", {})

    def full_run(files: int, name: str) -> float:
        landing = work / f"landing-{name}" / DAY
        landing.mkdir(parents=True)
        for i in range(files):
            (landing / f"part-{i:04d}.jsonl").write_bytes(chunks[i])
        store = DeltaStore(spark, work / f"warehouse-{name}")
        sync_message_tables(store, tables)
        clock = time.perf_counter()
        classify_partition(spark, store, tables, str(landing.parent), day)
        return time.perf_counter() - clock, store

    # the incremental path: one file lands, one increment
    landing = work / "landing" / DAY
    landing.mkdir(parents=True)
    store = DeltaStore(spark, work / "warehouse")
    sync_message_tables(store, tables)
    seconds, conserved = [], True
    for i in range(args.files):
        (landing / f"part-{i:04d}.jsonl").write_bytes(chunks[i])
        clock = time.perf_counter()
        result = classify_increment(spark, store, tables, str(landing.parent), day, local_bytes=64 << 20)
        seconds.append(time.perf_counter() - clock)
        conserved &= conservation(store, tables, day, result.records_of_day, result.stored)[0]
    full, full_store = full_run(args.files, "full")
    quarter, _ = full_run(args.files // 4, "quarter")
    half, _ = full_run(args.files // 2, "half")
    # a full re-run after each file: the full run's time grows linearly with the files landed
    slope = (full - quarter) / (args.files - args.files // 4)
    rerun_all = sum(quarter + slope * (k - args.files // 4) for k in range(1, args.files + 1))
    print(json.dumps({
        "records": args.records, "files": args.files, "definitions": args.definitions,
        "increments_total_s": round(sum(seconds), 1), "increment_median_s": round(statistics.median(seconds), 2),
        "increment_first_s": round(seconds[0], 2), "full_run_s": round(full, 1),
        "full_runs_at": {"quarter": round(quarter, 1), "half": round(half, 1), "all": round(full, 1)},
        "increments_vs_full": round(sum(seconds) / full, 2),
        "rerun_whole_day_each_file_s": round(rerun_all, 1), "rerun_vs_full": round(rerun_all / full, 1),
        "conservation_every_step": conserved, "tables_equal_full_run": hashes(store, names) == hashes(full_store, names),
    }), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
