"""The cost of a day (issue 62): a backfill of many small days against one day of the same records.

    python benchmarks/backfill.py [--days 30] [--rides 1000] [--no-analytics] [--repeats 1] [--work DIR]
    python benchmarks/backfill.py --days 365 --rides 1000 --only range

With the bundled generator (`python -m catalake.demo.generate`), in one benchmark run:

* one_day: one day of `days x rides` rides (3 records a ride and a few more a day), `catalake run
  --date D` on a fresh warehouse and Dagster home, whole process;
* range: `days` days of `rides` rides each (the same records, spread), `catalake run --from
  --to`, fresh, whole process (a run per range of DAYS_PER_RUN days: one classification job, one
  commit per table and one dbt build per range).

With the analytics (the default) every run builds the dbt models too. Each line says the wall
seconds of the whole command, the records, the Dagster runs it made, and the step timings the
runs recorded (classify_events, analytics, data_docs), summed over the runs. Results are JSON
lines; RESULTS.md keeps them with the machine and the command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def generate(landing: Path, first: dt.date, days: int, rides: int) -> int:
    """The landed days (anew); returns their records."""
    shutil.rmtree(landing, ignore_errors=True)
    out = subprocess.run([sys.executable, "-m", "catalake.demo.generate", str(landing), "--start", first.isoformat(),
                          "--days", str(days), "--rides", str(rides)], check=True, capture_output=True, text=True)
    return sum(int(line.split(": ")[1].split()[0]) for line in out.stdout.splitlines() if ": " in line)


def step_seconds(home: Path) -> tuple[int, dict[str, float]]:
    """The runs recorded in a Dagster home and their steps' seconds, summed by step."""
    from dagster import DagsterEventType, DagsterInstance

    steps: dict[str, float] = {}
    os.environ["DAGSTER_HOME"] = str(home)  # the instance's storage is configured from it
    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        for run in runs:
            for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_SUCCESS):
                duration = entry.dagster_event.event_specific_data.duration_ms / 1000
                steps[entry.step_key] = round(steps.get(entry.step_key, 0.0) + duration, 2)
    return len(runs), steps


def timed_run(work: Path, landing: Path, first: dt.date, args: list[str], analytics: bool) -> dict:
    """`catalake run ARGS` on a fresh warehouse and Dagster home, whole process."""
    warehouse, home = work / "warehouse", work / "home"
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = {**os.environ, "CATALAKE_LANDING": str(landing), "CATALAKE_WAREHOUSE": str(warehouse),
           "DAGSTER_HOME": str(home), "CATALAKE_START_DATE": first.isoformat()}
    command = [str(Path(sys.executable).parent / "catalake"), "run", *args, *([] if analytics else ["--no-analytics"])]
    clock = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = round(time.perf_counter() - clock, 2)
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    runs, steps = step_seconds(home)
    reparsed = done.stdout.count("Unable to do partial parsing") + done.stderr.count("Unable to do partial parsing")
    return {"seconds": seconds, "runs": runs, "steps": steps, "dbt_full_parses": reparsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rides", type=int, default=1000, help="rides a day of the range")
    parser.add_argument("--no-analytics", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", choices=["one_day", "range"])
    parser.add_argument("--work")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="catalake-backfill-"))
    analytics = not args.no_analytics
    first = dt.date.today() - dt.timedelta(days=args.days)  # days that have ended: partitions
    cases = {}
    if args.only in (None, "one_day"):
        cases["one_day"] = (work / "one_day", args.days * args.rides, 1, ["--date", first.isoformat()])
    if args.only in (None, "range"):
        last = first + dt.timedelta(days=args.days - 1)
        cases["range"] = (work / "range", args.rides, args.days, ["--from", first.isoformat(), "--to", last.isoformat()])
    records = {name: generate(folder / "landing", first, days, rides) for name, (folder, rides, days, _) in cases.items()}
    best: dict[str, dict] = {}
    for _ in range(args.repeats):
        for name, (folder, _, _, run_args) in cases.items():
            result = timed_run(folder, folder / "landing", first, run_args, analytics)
            if name not in best or result["seconds"] < best[name]["seconds"]:
                best[name] = result
    for name, (_, rides, days, _) in cases.items():
        print(json.dumps({"case": name, "days": days, "rides_a_day": rides, "records": records[name],
                          "analytics": analytics, **best[name]}), flush=True)
    if len(best) == 2:
        print(json.dumps({"range_over_one_day": round(best["range"]["seconds"] / best["one_day"]["seconds"], 2)}))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
