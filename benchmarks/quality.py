"""What the data quality results add to a partition run (issue 16).

    python benchmarks/quality.py --records 100000 --definitions 100 [--work DIR]

Two parts, on the workload of workload.py:

* in the classification pass: the classifier runs in this process (no Spark) over the day's
  records twice, as it is and with the suites' evaluation replaced by no-ops; the difference is
  the CPU the expectations cost per record, which the executors share;
* in the Dagster step: a `catalake run --date D --no-analytics` in a fresh process, then, from the
  run's event log, the step's duration and the time from the first to the last `expectations`
  check evaluation (the results stored in GX's format and reported to Dagster, one per table).

Prints one JSON object: the partition run's step seconds, the quality seconds of each part and
their share of the step (the engine's CPU divided by the executors' cores).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write


def engine_seconds(catalog_dir: Path, landing: Path, work: Path, quality: bool) -> float:
    from catalake.platform.catalog import load_catalog
    from catalake.platform.landing.listing import partition_files
    from catalake.platform.landing.planning import plan_tasks
    from catalake.platform.quality import evaluation as q
    from catalake.platform.runs.classifier import Classifier
    from catalake.platform.runs.plan import Plan
    from catalake.platform.uris import Location
    from catalake.platform.warehouse.message_tables import message_tables

    tables, _ = message_tables(load_catalog([catalog_dir]), [catalog_dir])
    out = work / f"quality-engine-{quality}"
    shutil.rmtree(out, ignore_errors=True)
    plan = Plan(tuple(tables), Location.of(out), dt.date.fromisoformat(DAY), dt.datetime.now(dt.timezone.utc), f"q{int(quality)}")
    classifier = Classifier(plan)
    if not quality:  # what the pass costs without evaluating any expectation
        q.SuiteCheck.check = lambda self, row, type_errors, source_file, source_line: []
        q.SuiteCheck.kept = lambda self, row, source_file, source_line: None
    tasks = plan_tasks(None, partition_files(landing, dt.date.fromisoformat(DAY)), 1)
    start = time.perf_counter()
    for i, task in enumerate(tasks):
        classifier.run(str(i), task)
    return time.perf_counter() - start


def dagster_seconds(catalog_dir: Path, landing: Path, work: Path) -> dict:
    from dagster import DagsterEventType, DagsterInstance

    home = work / "quality-dagster-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    warehouse = work / "quality-warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    env = {**os.environ, "CATALAKE_CATALOG": str(catalog_dir), "CATALAKE_LANDING": str(landing),
           "CATALAKE_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home)}
    cmd = [str(Path(sys.executable).parent / "catalake"), "run", "--date", DAY, "--json", "--no-analytics"]
    for _ in range(2):  # the second run is timed (tables exist)
        subprocess.run(cmd, env=env, check=True, capture_output=True)
    instance = DagsterInstance.from_config(str(home))
    run = instance.get_runs(limit=1)[0]
    events = instance.all_logs(run.run_id)
    start = next(e.timestamp for e in events if e.dagster_event and e.dagster_event.event_type == DagsterEventType.STEP_START)
    end = next(e.timestamp for e in events if e.dagster_event and e.dagster_event.event_type == DagsterEventType.STEP_SUCCESS)
    checks = [e.timestamp for e in events if e.dagster_event and e.dagster_event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
              and e.dagster_event.event_specific_data.check_name == "expectations"]
    materialized = [e.timestamp for e in events if e.dagster_event and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION]
    if not checks:
        return {"step_s": end - start, "checks_s": 0.0, "checks": 0}
    # the checks follow the tables' materializations: from the last table materialized to the last check
    begin = max(t for t in materialized if t <= min(checks))
    return {"step_s": end - start, "checks_s": max(checks) - begin, "checks": len(checks)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--definitions", type=int, default=100)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    args = parser.parse_args()
    work = Path(args.work)
    catalog_dir, landing = write(work, args.definitions, args.records)
    dagster = dagster_seconds(catalog_dir, landing, work)
    with_quality = engine_seconds(catalog_dir, landing, work, quality=True)
    without = engine_seconds(catalog_dir, landing, work, quality=False)
    cores = os.cpu_count() or 2
    engine_share = (with_quality - without) / cores
    print(json.dumps({
        "records": args.records, "definitions": args.definitions, "partition_step_s": round(dagster["step_s"], 1),
        "engine_cpu_with_quality_s": round(with_quality, 1), "engine_cpu_without_quality_s": round(without, 1),
        "quality_in_pass_s": round(engine_share, 2), "quality_checks_recorded_s": round(dagster["checks_s"], 2),
        "checks": dagster["checks"],
        "quality_share_of_step": round((engine_share + dagster["checks_s"]) / dagster["step_s"], 3),
    }))


if __name__ == "__main__":
    main()
