"""Classification benchmark (issue 4): `catalake run` against a plain Spark baseline.

    python benchmarks/run.py --records 100000 --definitions 10 100 1000 [--work DIR]

For each size: demo-shaped events for one day (the demo generator, scaled), catalogs of N
definitions (the demo's 9 plus synthetic ones with their own types and schemas), then

* baseline: plain Spark on the same files: read -> parse JSON -> write Parquet, no classification;
* catalake: `catalake run --date D --json --no-analytics` (a Dagster run in a fresh process),
  timed on a second run of the partition (tables already created; the first run's time is
  reported too), or on the first only with `--runs 1`;

wall time, records/s and the peak RSS of the driver (the Python process, its JVM and the PySpark
Python workers, from /proc, sampled every 0.5 s; in total and per kind of process). Results are
printed as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMO_CATALOG = REPO / "src" / "catalake" / "demo" / "catalog"
DAY = "2026-11-20"
RECORDS_PER_RIDE = 3.0  # the demo generator: started, ended, paid per ride, plus dock reports


def synthetic_catalog(target: Path, definitions: int) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(DEMO_CATALOG, target)
    extra = max(definitions - 9, 0)
    messages = {
        f"bench.synthetic.Event{i}": {
            "envelope": "CloudEvents/1.0",
            "envelopemetadata": {
                "type": {"value": f"bench.synthetic.Event{i}"},
                "source": {"type": "uritemplate", "value": "https://bench.example/{tenant}/devices/{device}"},
            },
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": {"type": "object", "required": ["device", "value"],
                           "properties": {"device": {"type": "string"}, "value": {"type": "number", "minimum": 0},
                                          "unit": {"enum": ["C", "F"]}}},
        }
        for i in range(extra)
    }
    if messages:
        doc = {"specversion": "1.0-rc2", "messagegroups": {"bench.synthetic": {"messages": messages}}}
        (target / "synthetic.xreg.json").write_text(json.dumps(doc))
    return target


def landing(target: Path, records: int) -> Path:
    if not (target / DAY).is_dir():
        rides = max(int(records / RECORDS_PER_RIDE), 1)
        subprocess.run([sys.executable, "-m", "catalake.demo.generate", str(target), "--start", DAY, "--days", "1",
                        "--rides", str(rides)], check=True, stdout=subprocess.DEVNULL)
    return target


def _kind(pid: int) -> str:
    """What a process of the driver tree is: the JVM, a PySpark Python worker, or other Python."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    if argv and Path(argv[0].decode(errors="replace")).name == "java":
        return "jvm"
    if any(b"pyspark.daemon" in a or b"pyspark.worker" in a for a in argv):
        return "python_workers"
    return "python"


def _tree_rss_kib(pid: int) -> dict[str, int]:
    """RSS of a process and all its descendants (the driver's Python, its JVM and the Python
    workers), by kind, from /proc."""
    by_kind: dict[str, int] = {}
    todo = [pid]
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
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
    """(wall seconds, peak RSS in MiB of the process tree sampled every 0.5 s: "total" and the
    peak of each kind of process, stdout)."""
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=devnull, text=True)
        peak: dict[str, int] = {}
        while proc.poll() is None:
            sample = _tree_rss_kib(proc.pid)
            for kind, kib in [("total", sum(sample.values())), *sample.items()]:
                peak[kind] = max(peak.get(kind, 0), kib // 1024)
            time.sleep(0.5)
        out = proc.stdout.read()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return wall, peak, out


BASELINE = r'''
import sys, os
from pathlib import Path
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from catalake.platform.spark import build_session
from pyspark.sql import functions as F
root, out = Path(sys.argv[1]), sys.argv[2]
spark = build_session("local[*]", app_name="baseline")
files = sorted(str(p) for p in root.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
docs = sorted(str(p) for p in root.iterdir() if p.name.endswith(".json"))
lines = spark.read.text(files).select(F.expr("try_parse_json(value)").alias("v"))
batch = spark.read.text(docs, wholetext=True).select(F.explode(F.expr("try_variant_get(try_parse_json(value), '$', 'array<variant>')")).alias("v"))
lines.unionByName(batch).select(F.to_json("v").alias("record")).write.mode("overwrite").parquet(out)
print(spark.read.parquet(out).count())
'''


def _rss(peak: dict[str, int]) -> dict:
    return {"peak_rss_mib": peak.get("total"), "peak_rss_mib_by_process": {k: v for k, v in peak.items() if k != "total"}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, nargs="+", default=[100_000])
    parser.add_argument("--definitions", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--runs", type=int, choices=(1, 2), default=2,
                        help="2: time the second run of the partition (tables exist); 1: the first only")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    catalake = str(Path(sys.executable).parent / "catalake")
    for records in args.records:
        land = landing(work / f"landing-{records}", records)
        wall, rss, out = measure([sys.executable, "-c", BASELINE, str(land / DAY), str(work / "baseline.parquet")], dict(os.environ))
        count = int(out.strip().splitlines()[-1])
        print(json.dumps({"run": "baseline", "records": count, "seconds": round(wall, 1), **_rss(rss)}), flush=True)
        for definitions in args.definitions:
            catalog = synthetic_catalog(work / f"catalog-{definitions}", definitions)
            warehouse = work / f"warehouse-{records}-{definitions}"
            shutil.rmtree(warehouse, ignore_errors=True)
            env = {**os.environ, "CATALAKE_CATALOG": str(catalog), "CATALAKE_LANDING": str(land),
                   "CATALAKE_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(work / "dagster_home")}
            (work / "dagster_home").mkdir(exist_ok=True)
            first = None
            if args.runs > 1:
                first, _, _ = measure([catalake, "run", "--date", DAY, "--json", "--no-analytics"], env)
            wall, rss, out = measure([catalake, "run", "--date", DAY, "--json", "--no-analytics"], env)
            result = json.loads(out.strip().splitlines()[-1])
            print(json.dumps({
                "run": "catalake", "records": result["records"], "definitions": definitions,
                "seconds": round(wall, 1), "first_run_seconds": first and round(first, 1),
                "records_per_second": round(result["records"] / wall), **_rss(rss),
                "deadletter": result["deadletter"],
            }), flush=True)


if __name__ == "__main__":
    main()
