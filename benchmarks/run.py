"""Classification at scale (issue 15): `catalake run` against what a user would write instead.

    python benchmarks/run.py --records 100000 1000000 --definitions 10 100 1000 [--repeats 2] [--work DIR]

For each (N definitions, R records) cell of the workload in workload.py (N types fed evenly, 0.1%
bad records), in one benchmark run and on the same files:

* loop: the plain Python loop of baselines.py (orjson, jsonschema, write_deltalake per type);
* spark: the hand-written PySpark job of baselines.py (one job, written partitioned by type);
* duckdb: the DuckDB job of baselines.py that types and checks (json_transform per type, the
  schema's checks as SQL, Parquet per type and a dead-letter file); duckdb_raw: DuckDB's floor,
  the lines parsed and written by type with data kept as JSON;
* catalake: `catalake run --date D --json --no-analytics` in a fresh process (the catalog job and
  the partition run: classification, quality results, commits, Dagster events), on a warehouse
  whose tables exist, so each cell times the steady state;
* catalake_per_record: the same run with CATALAKE_COMPILED_PATH=false (every record decided on its own);
* catalake_first: the first of those runs, on a fresh warehouse and Dagster home (the catalog
  job creates every table and suite), timed once.

Each catalake row has `phases`: the seconds of the run's phases from the partition run's own
clock (listing, job, commits, events, quality_docs, conservation) and the catalog job's.

Runs of a cell are interleaved (loop, spark, catalake, loop, ...) and the minimum of the repeats
is reported, with records/s and the peak RSS of each process tree (sampled every 0.5 s), in
total and per kind of process (jvm, python, python_workers). Spark jobs are counted from the
catalake run's Spark event log: all of them, and those of the classification pass (its job
group). Results are printed as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write

HERE = Path(__file__).resolve().parent


def _kind(pid: int) -> str:
    """What a process of a tree is: the JVM, a PySpark Python worker, or other Python."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    if argv and Path(argv[0].decode(errors="replace")).name == "java":
        return "jvm"
    if any(b"pyspark.daemon" in a or b"pyspark.worker" in a for a in argv):
        return "python_workers"
    return "python"


def _tree_rss_kib(pid: int) -> dict[str, int]:
    """RSS of a process and all its descendants, by kind, from /proc."""
    by_kind: dict[str, int] = {}
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    todo = [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            kind = _kind(p)
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    by_kind[kind] = by_kind.get(kind, 0) + int(line.split()[1])
        except OSError:
            pass
    return by_kind


def measure(cmd: list[str], env: dict) -> tuple[float, dict[str, int], str]:
    """(wall seconds, peak RSS in MiB of the process tree: "total" and per kind, stdout)."""
    start = time.perf_counter()
    # stdout to a file: a pipe read only at the end would block a process that prints much
    with open(os.devnull, "w") as devnull, tempfile.TemporaryFile("w+") as stdout:
        proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=devnull, text=True)
        peak: dict[str, int] = {}
        while proc.poll() is None:
            sample = _tree_rss_kib(proc.pid)
            for kind, kib in [("total", sum(sample.values())), *sample.items()]:
                peak[kind] = max(peak.get(kind, 0), kib // 1024)
            time.sleep(0.5)
        stdout.seek(0)
        out = stdout.read()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return wall, peak, out


def spark_jobs(event_logs: Path) -> dict[str, int]:
    """Jobs in the Spark event log(s) of one run: all, and those of the classification pass."""
    jobs = {"all": 0, "classification": 0}
    for log in (p for p in event_logs.rglob("*") if p.is_file()):
        for line in log.read_text(errors="replace").splitlines():
            if '"Event":"SparkListenerJobStart"' in line:
                jobs["all"] += 1
                group = json.loads(line).get("Properties", {}).get("spark.jobGroup.id") or ""
                jobs["classification"] += group.startswith("catalake-classify")
    return jobs


def _rss(peak: dict[str, int]) -> dict:
    return {"peak_rss_mib": peak.get("total"), "peak_rss_mib_by_process": {k: v for k, v in peak.items() if k != "total"}}


RUNS = ("loop", "spark", "duckdb", "duckdb_raw", "catalake", "catalake_per_record")


def cell(work: Path, definitions: int, records: int, repeats: int, which=RUNS) -> list[dict]:
    catalog, landing = write(work, definitions, records)
    day = landing / DAY
    warehouse = work / f"warehouse-{definitions}-{records}"
    events = work / "spark-events"
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(work / "dagster_home", ignore_errors=True)
    (work / "dagster_home").mkdir()
    env = {**os.environ, "CATALAKE_CATALOG": str(catalog), "CATALAKE_LANDING": str(landing),
           "CATALAKE_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(work / "dagster_home")}
    catalake = [str(Path(sys.executable).parent / "catalake"), "run", "--date", DAY, "--json", "--no-analytics"]
    wall, rss, stdout = measure(catalake, env)  # the tables exist afterwards
    first = json.loads(stdout.strip().splitlines()[-1])
    runs: dict[str, list] = {"loop": [], "spark": [], "duckdb": [], "duckdb_raw": [], "catalake": [], "catalake_per_record": [],
                             "catalake_first": [(wall, rss, {"records": first["records"], "phases": first["seconds"]})]}
    for _ in range(repeats):
        out = work / "baseline-out"
        for kind in (k for k in ("loop", "spark", "duckdb", "duckdb_raw") if k in which):
            shutil.rmtree(out, ignore_errors=True)
            wall, rss, stdout = measure([sys.executable, str(HERE / "baselines.py"), kind, str(catalog), str(day), str(out)], dict(os.environ))
            runs[kind].append((wall, rss, {"records": int(stdout.strip().splitlines()[-1])}))
        if "catalake" not in which:
            continue
        shutil.rmtree(events, ignore_errors=True)
        events.mkdir()
        conf = f"spark.eventLog.enabled=true spark.eventLog.dir={events} spark.eventLog.compress=false spark.eventLog.rolling.enabled=false"
        wall, rss, stdout = measure(catalake, {**env, "CATALAKE_SPARK_CONF": conf})
        result = json.loads(stdout.strip().splitlines()[-1])
        runs["catalake"].append((wall, rss, {"records": result["records"], "deadletter": result["deadletter"],
                                             "tables_fed": sum(1 for n in result["tables"].values() if n),
                                             "spark_jobs": spark_jobs(events), "phases": result["seconds"]}))
        if "catalake_per_record" not in which:
            continue
        # the same run with every record decided on its own (the referee's path)
        wall, rss, stdout = measure(catalake, {**env, "CATALAKE_COMPILED_PATH": "false"})
        result = json.loads(stdout.strip().splitlines()[-1])
        runs["catalake_per_record"].append((wall, rss, {"records": result["records"], "phases": result["seconds"]}))
    rows = []
    for kind, measured in runs.items():
        if not measured:
            continue
        wall, rss, extra = min(measured, key=lambda m: m[0])
        rows.append({"run": kind, "definitions": definitions, "records": records, "seconds": round(wall, 1),
                     "all_seconds": [round(m[0], 1) for m in measured],
                     "records_per_second": round(extra["records"] / wall), **_rss(rss), **extra})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, nargs="+", default=[100_000])
    parser.add_argument("--definitions", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=RUNS, help="which runs of a cell (default: all)")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for records in args.records:
        for definitions in args.definitions:
            for row in cell(work, definitions, records, args.repeats, args.runs):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
