"""What an increment records in Dagster (issue 73): events, their bytes and the seconds spent
writing them, at N fed definitions.

    python benchmarks/increment_events.py [--definitions 100 1000] [--work DIR]

The scaling workload's catalog of N definitions (workload.py) and its day of 4 files: the day's
first `catalake run --incremental` (a full run: no run of the day is recorded) over the first
half of each file, then an increment over the other halves landed as new files, which feeds
every table, in local processes (no JVM)
with catalake's SQLite instance. Of the increment's run: the events stored (all kinds: run,
step, log lines, materializations, observations, check evaluations), their serialized bytes,
the step's `events` seconds (writing the run's Dagster events, from the `deadletter`
materialization's `seconds`) and the whole process. To compare with an older commit, run it with
`PYTHONPATH=<worktree>/src`. JSON lines.
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


def catalake(env: dict, *args: str) -> tuple[dict, float]:
    clock = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", DAY, *args, "--json",
                          "--no-analytics"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - clock
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1]), seconds


def measure(work: Path, definitions: int) -> dict:
    catalog, source = write(work, definitions, definitions * 8)
    base = work / f"increment-{definitions}"
    shutil.rmtree(base, ignore_errors=True)
    landing = base / "landing" / DAY
    landing.mkdir(parents=True)
    (base / "dagster").mkdir()
    halves = []  # each file's lines cut in two: the increment's half feeds every table
    for path in sorted((source / DAY).iterdir()):
        lines = path.read_bytes().splitlines(keepends=True)
        (landing / path.name).write_bytes(b"".join(lines[:len(lines) // 2]))
        halves.append((landing / f"later-{path.name}", b"".join(lines[len(lines) // 2:])))
    env = {**os.environ, "CATALAKE_CATALOG": str(catalog), "CATALAKE_LANDING": str(base / "landing"),
           "CATALAKE_WAREHOUSE": str(base / "warehouse"), "DAGSTER_HOME": str(base / "dagster"),
           "CATALAKE_START_DATE": DAY, "CATALAKE_ENGINE": "local"}
    first, _ = catalake(env, "--incremental")
    for path, rest in halves:
        path.write_bytes(rest)
    increment, seconds = catalake(env, "--incremental")

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    from dagster import DagsterEventType, DagsterInstance
    from dagster._serdes import serialize_value

    with DagsterInstance.get() as instance:
        run = next(r for r in instance.get_runs() if r.job_name == "events_job")
        logged = instance.all_logs(run.run_id)
        kinds: dict[str, list[int]] = {}  # kind -> [events, bytes]
        for entry in logged:
            kind = entry.dagster_event.event_type_value if entry.dagster_event else "log message"
            counted = kinds.setdefault(kind, [0, 0])
            counted[0] += 1
            counted[1] += len(serialize_value(entry))
        materialized = [e.dagster_event.event_specific_data.materialization for e in logged
                        if e.dagster_event and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION]
        dead = next(m for m in materialized if m.asset_key.path == ["deadletter"])
        return {"definitions": definitions, "first_run": first["kind"], "increment": increment["kind"],
                "tables_fed": increment.get("tables_fed", len(increment["tables"])), "events": len(logged),
                "event_bytes": sum(len(serialize_value(e)) for e in logged), "by_kind": {k: {"events": n, "bytes": b} for k, (n, b) in kinds.items()},
                "events_s": dead.metadata["seconds"].value.get("events"), "process_s": round(seconds, 2)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="increment-events-"))
    for n in args.definitions:
        print(json.dumps(measure(work, n)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
