"""Large catalogs and many small files (issue 20, cases 11 and 12).

    python benchmarks/planning.py [--definitions 5000] [--records 100000] [--files 5000] [--work DIR]
    python benchmarks/planning.py --unfed [--definitions 1000]

Every figure is a `catalake run --date D --json --no-analytics` in a fresh process (as a user
runs it), timed from outside, with the step timings read from the run's Dagster event log:

* catalog: a catalog of `--definitions` definitions (workload.py), over an empty day and over a
  day of `--records` records: the first run (the catalog job creates every table) and the
  second (catalog unchanged, so only the partition run);
* files: the same `--records` records over 10 definitions, landed as 1 file and as `--files`
  files.

Prints one JSON object per measurement.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write


def timed_run(catalog_dir: Path, landing: Path, warehouse: Path, home: Path) -> dict:
    from dagster import DagsterEventType, DagsterInstance

    env = {**os.environ, "CATALAKE_CATALOG": str(catalog_dir), "CATALAKE_LANDING": str(landing),
           "CATALAKE_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home)}
    before = {r.run_id for r in DagsterInstance.from_config(str(home)).get_runs()}
    start = time.perf_counter()
    out = subprocess.run([str(Path(sys.executable).parent / "catalake"), "run", "--date", DAY, "--json", "--no-analytics"],
                         env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    instance = DagsterInstance.from_config(str(home))
    steps = {}
    for run in instance.get_runs(limit=3):
        if run.run_id in before:
            continue
        events = [e for e in instance.all_logs(run.run_id) if e.dagster_event]
        begin = {e.step_key: e.timestamp for e in events if e.dagster_event.event_type == DagsterEventType.STEP_START}
        for e in events:
            if e.dagster_event.event_type == DagsterEventType.STEP_SUCCESS and e.step_key in begin:
                steps[e.step_key] = round(e.timestamp - begin[e.step_key], 1)
    result = json.loads(out.stdout.splitlines()[-1])
    return {"wall_s": round(wall, 1), "steps_s": steps, "records": result["records"]}


def fresh(*folders: Path) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)


def split(landing: Path, into: Path, files: int) -> Path:
    """The day's records again, as `files` files of consecutive lines."""
    lines = [line for f in sorted((landing / DAY).iterdir()) for line in f.read_bytes().splitlines(keepends=True)]
    day = into / DAY
    fresh(day)
    per = -(-len(lines) // files)
    for i in range(files):
        (day / f"part-{i:05d}.jsonl").write_bytes(b"".join(lines[i * per:(i + 1) * per]))
    return into


def unfed(work: Path, definitions: int) -> None:
    """An empty day over `definitions` tables, second run (catalog unchanged), with and without
    the 0-row materializations of the tables the day does not feed."""
    catalog_dir, _ = write(work, definitions, 0)
    empty = work / "empty-landing"
    fresh(empty / DAY)
    for record in ("1", "0", "1", "0"):
        os.environ["CATALAKE_RECORD_EMPTY"] = record
        warehouse, home = work / "planning-warehouse", work / "planning-home"
        fresh(warehouse, home)
        timed_run(catalog_dir, empty, warehouse, home)  # tables created; the second run is timed
        print(json.dumps({"case": f"{definitions} definitions, empty day", "CATALAKE_RECORD_EMPTY": record,
                          **timed_run(catalog_dir, empty, warehouse, home)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, default=5000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--unfed", action="store_true",
                        help="only: what recording the unfed tables costs (an empty day, CATALAKE_RECORD_EMPTY=1 vs 0)")
    args = parser.parse_args()
    work = Path(args.work)
    if args.unfed:
        unfed(work, args.definitions)
        return

    catalog_dir, landing = write(work, args.definitions, args.records)
    empty = work / "empty-landing"
    fresh(empty / DAY)
    for name, day in (("empty day", empty), (f"{args.records} records", landing)):
        warehouse, home = work / "planning-warehouse", work / "planning-home"
        fresh(warehouse, home)
        for attempt in ("first run", "second run"):
            print(json.dumps({"case": f"{args.definitions} definitions, {name}", "run": attempt,
                              **timed_run(catalog_dir, day, warehouse, home)}), flush=True)

    catalog10, landing10 = write(work, 10, args.records)
    for files in (1, args.files):
        day = split(landing10, work / f"landing-{files}-files", files)
        warehouse, home = work / "planning-warehouse", work / "planning-home"
        fresh(warehouse, home)
        timed_run(catalog10, day, warehouse, home)  # tables created; the second run is timed
        print(json.dumps({"case": f"{args.records} records in {files} file(s), 10 definitions",
                          **timed_run(catalog10, day, warehouse, home)}), flush=True)


if __name__ == "__main__":
    main()
