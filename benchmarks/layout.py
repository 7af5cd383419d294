"""Files of a day in time order (issue 72, part 3): of a table's files of one day, how many a query
for one hour of it opens, by each file's range of `time` (its Parquet footer's statistics).

    python benchmarks/layout.py [--landed 200] [--tasks 200] [--events 100000] [--late 0.03]
                                [--lateness 300] [--merged 20] [--hour 14] [--work DIR]

One definition (workload.py's), its day landed as `--landed` JSON lines files in time order, as a
sink flushing on a timer writes them (200: one every 7.2 minutes), busier by day than by night
(the afternoon's hours five times the night's), each file's events in the order they arrived:
a share `--late` of them late, their `time` earlier than their arrival by an exponential delay
of mean `--lateness` seconds. The day is classified by one full run in local processes (no
JVM), planned as a day of `--tasks` tasks: the planner's task size (SPLIT_BYTES) is scaled down
to the day's bytes / tasks (at the 256 MiB of a task, 200 tasks are a day of 50 GiB), and nothing
is merged (a target of one byte a file), so the table gets a file per task. Then that partition
is compacted to about `--merged` files (compact_day, a target of its bytes / merged).

Printed as JSON lines, per stage (`tasks`, `compacted`): the table's files, those whose [min,
max] of `time` overlaps the hour `--hour` (and their share), the rows of those files against
the hour's own rows (what a query of that hour reads by file statistics alone), that share for
each hour of the day (mean, least, most), the widest range of a file in minutes, and the
stage's seconds. To compare with an older commit: `git
worktree add /tmp/layout-before <commit>` and run this script with
`PYTHONPATH=/tmp/layout-before/src`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import random
import shutil
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, event, fresh_catalog

MIDNIGHT = dt.datetime.fromisoformat(f"{DAY}T00:00:00+00:00")


def traffic(hour: float) -> float:
    """Events an hour, relative: a fifth of the peak at night, the peak in the afternoon."""
    return 0.2 + 0.8 * max(0.0, math.sin(math.pi * (hour - 5) / 19)) if 5 <= hour < 24 else 0.2


def land(folder: Path, landed: int, events: int, late: float, lateness: float, seed: int = 72) -> None:
    """The day as `landed` files in time order, `events` in all spread by `traffic`."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    window = 86_400 / landed
    weights = [traffic((i + 0.5) * window / 3600) for i in range(landed)]
    scale = events / sum(weights)
    n = 0
    for i, weight in enumerate(weights):
        arrivals = sorted(rng.uniform(i * window, (i + 1) * window) for _ in range(round(weight * scale)))
        lines = []
        for arrived in arrivals:
            happened = arrived - rng.expovariate(1 / lateness) if rng.random() < late else arrived
            record = event(rng, n, 1)
            record["time"] = (MIDNIGHT + dt.timedelta(seconds=happened)).isoformat().replace("+00:00", "Z")
            lines.append(orjson.dumps(record))
            n += 1
        (folder / f"part-{i:05d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def time_range(path: Path) -> tuple[dt.datetime, dt.datetime, int] | None:
    """A Parquet file's least and greatest `time` and its rows, from its footer alone."""
    import pyarrow.parquet as pq

    footer = pq.read_metadata(path)
    column = next(i for i in range(footer.num_columns) if footer.schema.column(i).path == "time")
    lows, highs = [], []
    for g in range(footer.num_row_groups):
        stats = footer.row_group(g).column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
        highs.append(stats.max)
    return (min(lows), max(highs), footer.num_rows) if lows else None


def overlapping(ranges: list, hour: int) -> list:
    """The files a query of the hour opens: those whose range of `time` meets it (or is unknown)."""
    start, end = MIDNIGHT + dt.timedelta(hours=hour), MIDNIGHT + dt.timedelta(hours=hour + 1)
    return [r for r in ranges if r is None or (r[0] < end and r[1] >= start)]


def layout(store, name: str, hour: int, stage: str, seconds: float, hour_rows: int) -> dict:
    """What a query of the hour opens among the partition's files, by their footers; and over
    every hour of the day, the share of the files a query of one hour opens."""
    from catalake.platform.warehouse.files import PARTITION_COLUMN

    day = dt.date.fromisoformat(DAY)
    ranges = [time_range(Path(store.path(name)) / f.path) for f in store.partition_files(name, PARTITION_COLUMN, day)]
    opened = overlapping(ranges, hour)
    every_hour = [len(overlapping(ranges, h)) / len(ranges) for h in range(24)]
    return {"stage": stage, "files": len(ranges), "files_overlapping_hour": len(opened),
            "share": round(len(opened) / len(ranges), 3),
            "rows_read": sum(r[2] for r in opened if r), "rows_of_hour": hour_rows,
            "share_any_hour": {"mean": round(sum(every_hour) / 24, 3), "min": round(min(every_hour), 3),
                               "max": round(max(every_hour), 3)},
            "widest_file_minutes": round(max((r[1] - r[0]).total_seconds() / 60 for r in ranges if r), 1),
            "seconds": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--landed", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--late", type=float, default=0.03)
    parser.add_argument("--lateness", type=float, default=300.0, help="mean delay of a late event, seconds")
    parser.add_argument("--merged", type=int, default=20)
    parser.add_argument("--hour", type=int, default=14)
    parser.add_argument("--work", default="/tmp/catalake-layout")
    args = parser.parse_args()

    import catalake
    from catalake.platform.landing import planning
    from catalake.platform.maintenance import compact_day
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.warehouse.message_tables import sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    def no_spark():
        raise AssertionError("the day runs in local processes")

    work = Path(args.work)
    _, tables = fresh_catalog(work, 1)
    land(work / "landing" / DAY, args.landed, args.events, args.late, args.lateness)
    landed = sorted((work / "landing" / DAY).iterdir())
    total = sum(p.stat().st_size for p in landed)
    # a day of `--tasks` tasks at this scale: the task size the planner aims at, scaled down
    planning.SPLIT_BYTES = math.ceil(total / args.tasks)
    planning.MIN_TASK_BYTES = 1
    start, end = MIDNIGHT + dt.timedelta(hours=args.hour), MIDNIGHT + dt.timedelta(hours=args.hour + 1)
    hour_rows = sum(1 for p in landed for line in p.read_bytes().splitlines()
                    if start <= dt.datetime.fromisoformat(orjson.loads(line)["time"].replace("Z", "+00:00")) < end)
    print(json.dumps({"catalake": str(Path(catalake.__file__).parents[1]), "landed_files": len(landed),
                      "landed_mib": round(total / 2**20, 1), "events": args.events, "late": args.late,
                      "lateness_s": args.lateness, "tasks_planned": args.tasks, "hour": args.hour}), flush=True)

    shutil.rmtree(work / "warehouse", ignore_errors=True)
    store = DeltaStore(no_spark, work / "warehouse", "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    name = tables[0].name
    clock = time.perf_counter()
    result = classify_partition(no_spark, store, tables, str(work / "landing"), dt.date.fromisoformat(DAY),
                                local_bytes=1 << 40, target_file_bytes=1)
    row = layout(store, name, args.hour, "tasks", time.perf_counter() - clock, hour_rows)
    print(json.dumps({**row, "tasks": result.tasks}), flush=True)

    from catalake.platform.warehouse.files import PARTITION_COLUMN

    size = sum(f.size for f in store.partition_files(name, PARTITION_COLUMN, dt.date.fromisoformat(DAY)))
    clock = time.perf_counter()
    compact_day(None, store, [name], dt.date.fromisoformat(DAY), target=math.ceil(size / args.merged))
    print(json.dumps(layout(store, name, args.hour, "compacted", time.perf_counter() - clock, hour_rows)), flush=True)


if __name__ == "__main__":
    main()
