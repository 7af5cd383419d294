"""A day a year in against day 2 (issue 71): what a scheduled day costs must not grow with history.

    python benchmarks/history.py [--days 365] [--rides 1000] [--repeats 3] [--work DIR]
    python benchmarks/history.py --definitions 100 --records 10000 --days 92

Two warehouses and Dagster homes, fresh, over the same landed days D0 .. D<days>:
* day_2: `catalake run --date D0`, then `--date D1`, the timed day;
* a_year_in: `catalake run --from D0 --to D<days-1>` (a backfill: ranges of DAYS_PER_RUN days, each
  range's steps reported), then `--date D<days>`, the timed day.
Then each timed day runs again, the two in turn (`--repeats` pairs in all): whole-process seconds,
each step's seconds from the runs the command made (classify_events, analytics, data_docs), the
medians and the ratio a year in / day 2. Also what the warehouse holds a year in: the size of
`analytics.duckdb` and what is in it, the stored validation results. The days are the bundled
generator's (`--rides` a day), or with `--definitions` the scaling workload's day (workload.py:
every definition fed) landed as every day. JSON lines; RESULTS.md keeps them with the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = ("classify_events", "analytics", "data_docs")


def land_demo(landing: Path, first: dt.date, days: int, rides: int) -> tuple[Path | None, int]:
    out = subprocess.run([sys.executable, "-m", "catalake.demo.generate", str(landing), "--start", first.isoformat(),
                          "--days", str(days), "--rides", str(rides)], check=True, capture_output=True, text=True)
    return None, sum(int(line.split(": ")[1].split()[0]) for line in out.stdout.splitlines() if ": " in line)


def land_workload(work: Path, landing: Path, first: dt.date, days: int, definitions: int,
                  records: int) -> tuple[Path, int]:
    """The workload's day landed as every day (hard links: one copy on disk)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import workload

    catalog, source = workload.write(work, definitions, records)
    for i in range(days):
        day = landing / (first + dt.timedelta(days=i)).isoformat()
        day.mkdir(parents=True, exist_ok=True)
        for path in (source / workload.DAY).iterdir():
            os.link(path, day / path.name)
    return catalog, records * days


def runs_of(home: Path) -> dict[str, dict[str, float]]:
    """Each run recorded in a Dagster home, oldest first: its steps' seconds."""
    from dagster import DagsterEventType, DagsterInstance

    if not (home / "dagster.yaml").exists():
        return {}  # no run yet: the first `catalake run` writes catalake's instance configuration
    os.environ["DAGSTER_HOME"] = str(home)
    out = {}
    with DagsterInstance.get() as instance:
        for run in reversed(instance.get_runs()):  # newest first
            steps = {}
            for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_SUCCESS):
                steps[entry.step_key] = entry.dagster_event.event_specific_data.duration_ms / 1000
            out[run.run_id] = steps
    return out


class Deployment:
    """A warehouse and a Dagster home of their own over a landing."""

    def __init__(self, folder: Path, landing: Path, catalog: Path | None, first: dt.date):
        self.folder, self.home = folder, folder / "home"
        shutil.rmtree(folder, ignore_errors=True)
        self.home.mkdir(parents=True)
        self.env = {**os.environ, "CATALAKE_LANDING": str(landing), "CATALAKE_WAREHOUSE": str(folder / "warehouse"),
                    "DAGSTER_HOME": str(self.home), "CATALAKE_START_DATE": first.isoformat()}
        if catalog is not None:
            self.env["CATALAKE_CATALOG"] = str(catalog)

    def run(self, *args: str) -> dict:
        """`catalake run ARGS`, whole process: its seconds and the steps of the runs it made."""
        before = set(runs_of(self.home))
        command = [str(Path(sys.executable).parent / "catalake"), "run", *args]
        clock = time.perf_counter()
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, cwd=self.folder)
        seconds = round(time.perf_counter() - clock, 2)
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
        made = {k: v for k, v in runs_of(self.home).items() if k not in before}
        steps: dict[str, float] = {}
        for run_steps in made.values():
            for step, value in run_steps.items():
                steps[step] = round(steps.get(step, 0.0) + value, 2)
        return {"seconds": seconds, "steps": steps, "runs": list(made.values())}

    def holds(self) -> dict:
        """What the warehouse holds: the DuckDB file of the models and the validation results."""
        import duckdb

        local = self.folder / "warehouse"
        db = local / "analytics.duckdb"
        with duckdb.connect(str(db), read_only=True) as conn:
            objects = conn.sql("select schema_name, table_name, estimated_size from duckdb_tables() "
                               "where database_name = 'analytics' order by 1, 2").fetchall()
            views = conn.execute("select count(*) from duckdb_views() where not internal").fetchall()[0][0]
        results = sum(1 for _ in (local / "gx" / "uncommitted" / "validations").rglob("*.json"))
        return {"analytics_duckdb_bytes": db.stat().st_size, "views": views,
                "tables": {f"{s}.{t}": n for s, t, n in objects}, "validation_results": results}


def median_steps(samples: list[dict]) -> dict:
    return {"seconds": statistics.median(s["seconds"] for s in samples),
            **{step: statistics.median(s["steps"].get(step, 0.0) for s in samples) for step in STEPS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365, help="days of history before the day timed a year in")
    parser.add_argument("--rides", type=int, default=1000, help="the generator's rides a day")
    parser.add_argument("--definitions", type=int, default=0, help="the workload catalog instead of the demo's")
    parser.add_argument("--records", type=int, default=10_000, help="the workload's records a day")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each timed day, in turn")
    parser.add_argument("--work")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="catalake-history-"))
    first = dt.date.today() - dt.timedelta(days=args.days + 1)
    last = first + dt.timedelta(days=args.days)
    landing = work / "landing"
    shutil.rmtree(landing, ignore_errors=True)
    if args.definitions:
        catalog, records = land_workload(work, landing, first, args.days + 1, args.definitions, args.records)
    else:
        catalog, records = land_demo(landing, first, args.days + 1, args.rides)
    day_2 = Deployment(work / "day_2", landing, catalog, first)
    year = Deployment(work / "a_year_in", landing, catalog, first)
    day_2.run("--date", first.isoformat())
    backfill = year.run("--from", first.isoformat(), "--to", (last - dt.timedelta(days=1)).isoformat())
    ranges = [r for r in backfill["runs"] if "analytics" in r or "classify_events" in r]
    print(json.dumps({"case": "backfill", "days": args.days, "records": records, "seconds": backfill["seconds"],
                      "ranges": ranges}), flush=True)
    samples: dict[str, list[dict]] = {"day_2": [], "a_year_in": []}
    for _ in range(args.repeats):
        samples["day_2"].append(day_2.run("--date", (first + dt.timedelta(days=1)).isoformat()))
        samples["a_year_in"].append(year.run("--date", last.isoformat()))
    medians = {name: median_steps(runs) for name, runs in samples.items()}
    for name, runs in samples.items():
        print(json.dumps({"case": name, "runs": [{"seconds": r["seconds"], **r["steps"]} for r in runs],
                          "median": medians[name]}), flush=True)
    print(json.dumps({"a_year_in_over_day_2": {k: round(medians["a_year_in"][k] / medians["day_2"][k], 2)
                                               for k in medians["day_2"] if medians["day_2"][k]},
                      "holds_a_year_in": year.holds(), "holds_day_2": day_2.holds()}), flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
