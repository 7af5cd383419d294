"""Where a classification job's CPU goes: the same tasks of a day classified in this process (the
classifier alone, what per_record.py measures) and as one Spark job on warm workers, with the
CPU seconds of every process of the tree by kind (driver, JVM, Python workers), per record.

    python benchmarks/job_cpu.py [--records 1000000] [--definitions 10] [--rounds 2] [--path batch|record]

The difference between the job's CPU and the in-process CPU is what a record costs outside the
per-record path: Spark's Python workers and their Arrow exchange, the JVM, scheduling.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write


def tree_cpu() -> dict[str, float]:
    """CPU seconds of this process's live descendants, by kind (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(stat[1]), []).append(int(pid))
    out: dict[str, float] = {}
    stack = [os.getpid()]
    while stack:
        for pid in children.get(stack.pop(), []):
            stack.append(pid)
            try:
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            kind = "jvm" if Path(argv0.decode(errors="replace")).name == "java" else "python_workers"
            out[kind] = out.get(kind, 0.0) + (int(stat[11]) + int(stat[12])) / tick
    return out


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--path", choices=("batch", "record"), default="batch")
    args = parser.parse_args()

    from catalake.platform.catalog import load_catalog
    from catalake.platform.landing.listing import list_day
    from catalake.platform.runs.classifier import Classifier
    from catalake.platform.runs.day import plan_day_tasks
    from catalake.platform.runs.plan import Plan
    from catalake.platform.runs.tasks import execute, parallelism, warm_up
    from catalake.platform.spark import build_session
    from catalake.platform.uris import Location
    from catalake.platform.warehouse.message_tables import message_tables

    catalog_dir, landing = write(Path(args.work), args.definitions, args.records)
    tables, _ = message_tables(load_catalog([catalog_dir]), [catalog_dir])
    day = dt.date.fromisoformat(DAY)
    spark = build_session("local[*]")
    warm_up(spark)  # the workers start and import the engine before the first timed job
    tasks = plan_day_tasks(Location.of(landing), {day: list_day(str(landing), day)}, parallelism(spark))
    for round_ in range(args.rounds):
        for mode in ("in_process", "spark_job"):
            warehouse = tempfile.mkdtemp(prefix="catalake-job-cpu-")
            plan = Plan(tuple(tables), Location.of(warehouse), day, dt.datetime.now(dt.timezone.utc), f"r{round_}-{mode}",
                        compiled=args.path == "batch")
            before, own, start = tree_cpu(), own_cpu(), time.perf_counter()
            if mode == "spark_job":
                records = sum(m.records for m in execute(plan, tasks, spark).values())
            else:
                classifier = Classifier(plan)
                records = sum(classifier.run(f"{i}.0", pieces, d).records for i, task in enumerate(tasks) for d, pieces in task)
            wall = time.perf_counter() - start
            after = tree_cpu()
            cpu = {"driver": round(own_cpu() - own, 2),
                   **{kind: round(after.get(kind, 0.0) - before.get(kind, 0.0), 2) for kind in ("jvm", "python_workers")}}
            print(json.dumps({"mode": mode, "path": args.path, "round": round_, "records": records, "tasks": len(tasks),
                              "wall_s": round(wall, 2), "cpu_s": cpu,
                              "cpu_us_per_record": round(sum(cpu.values()) / records * 1e6, 2)}), flush=True)
            shutil.rmtree(warehouse, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
