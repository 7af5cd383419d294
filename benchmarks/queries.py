"""An analyst's query over a year (issue 72): what a question by day, hour or id opens and costs.

    python benchmarks/queries.py --warehouse DIR [--table messages/bikeshare_rides__rideended]
        [--day 2026-03-03] [--repeats 7]

`DIR` holds a year of the bundled generator's days, made by catalake (one file a day a table):

    python -m catalake.demo.generate LANDING --start 2025-10-01 --days 366 --rides 1000
    CATALAKE_LANDING=LANDING CATALAKE_WAREHOUSE=DIR catalake run --from 2025-10-01 --to 2026-09-30 --no-analytics

For one day (`event_date =`), one hour of it (`time >= .. and time < ..`) and one ride of it
(`ride_id =`), side by side in this process: the files a reader opens and DuckDB's warm time
(median of `--repeats`) over
* `catalake`: the table's snapshot as catalake's `catalake sql` and notebooks read it
  (`datasets.snapshot_dataset`: the log's statistics rule files out);
* `deltalake`: deltalake's own `to_pyarrow_dataset()` of the same snapshot;
* `parquet_glob`: DuckDB's `read_parquet` over the table's folder (every footer read; it also
  reads files the log removed);
then `catalake sql` as a whole process (median of 3), and each table's statistics coverage.
JSON lines; RESULTS.md keeps them with the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
from deltalake import DeltaTable

from catalake.platform.uris import Location
from catalake.platform.warehouse.datasets import snapshot_dataset
from catalake.platform.warehouse.queries import analyst_name, warehouse_tables
from catalake.platform.warehouse.store import DeltaStore

UTC = dt.timezone.utc


def warm(con: duckdb.DuckDBPyConnection, query: str, repeats: int) -> tuple[float, list]:
    result = con.sql(query).fetchall()
    seconds = []
    for _ in range(repeats):
        clock = time.perf_counter()
        result = con.sql(query).fetchall()
        seconds.append(time.perf_counter() - clock)
    return statistics.median(seconds), result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", default="messages/bikeshare_rides__rideended")
    parser.add_argument("--day", default="2026-03-03")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    root = Location.of(args.warehouse)
    location = root.child(*args.table.split("/"))
    table = DeltaTable(location.uri, storage_options=root.delta_options())
    name = analyst_name(args.table)
    day = dt.date.fromisoformat(args.day)
    start = dt.datetime.combine(day, dt.time(10), tzinfo=UTC)
    stamp = pa.timestamp("us", "UTC")

    clock = time.perf_counter()
    ours = snapshot_dataset(table, location)
    built_ours = time.perf_counter() - clock
    clock = time.perf_counter()
    theirs = table.to_pyarrow_dataset()
    built_theirs = time.perf_counter() - clock
    files = len(table.file_uris())
    on_disk = sum(1 for _ in Path(location.path).rglob("*.parquet")) if not location.remote else None

    con = duckdb.connect()
    con.register("catalake", ours)
    con.register("deltalake", theirs)
    con.execute(f"CREATE VIEW parquet_glob AS SELECT * FROM read_parquet('{location.path}/*/*.parquet', "
                "hive_partitioning = true)")
    ride = con.sql(f"SELECT ride_id FROM catalake WHERE event_date = DATE '{day}' ORDER BY ride_id "
                   "LIMIT 1 OFFSET 123").fetchall()[0][0]
    questions = {
        "one_day": (f"SELECT count(*) FROM {{t}} WHERE event_date = DATE '{day}'",
                    pads.field("event_date") == pa.scalar(day, pa.date32())),
        "one_hour": (f"SELECT count(*), min(time), max(time) FROM {{t}} WHERE time >= TIMESTAMPTZ '{start.isoformat()}' "
                     f"AND time < TIMESTAMPTZ '{(start + dt.timedelta(hours=1)).isoformat()}'",
                     (pads.field("time") >= pa.scalar(start, stamp))
                     & (pads.field("time") < pa.scalar(start + dt.timedelta(hours=1), stamp))),
        "one_ride": (f"SELECT * FROM {{t}} WHERE ride_id = '{ride}'", pads.field("ride_id") == ride),
    }
    print(json.dumps({"table": args.table, "files_live": files, "parquet_files_on_disk": on_disk,
                      "dataset_build_s": {"catalake": round(built_ours, 4), "deltalake": round(built_theirs, 4)},
                      "machine": f"{os.cpu_count()} cores"}))
    for question, (query, expression) in questions.items():
        row = {"question": question, "files_opened": {
            "catalake": len(list(ours.get_fragments(filter=expression))),
            "deltalake": len(list(theirs.get_fragments(filter=expression))),
            "parquet_glob": on_disk}, "warm_s": {}, "rows": {}}
        for source in ("catalake", "deltalake", "parquet_glob"):
            seconds, result = warm(con, query.format(t=source), args.repeats)
            row["warm_s"][source] = round(seconds, 4)
            row["rows"][source] = result[0][0] if question != "one_ride" else len(result)
        row["glob_over_catalake"] = round(row["warm_s"]["parquet_glob"] / row["warm_s"]["catalake"], 1)
        print(json.dumps(row))

    env = {**os.environ, "CATALAKE_WAREHOUSE": args.warehouse}
    processes = []
    for _ in range(3):
        clock = time.perf_counter()
        subprocess.run([sys.executable, "-m", "catalake.cli", "sql", questions["one_hour"][0].format(t=name)],
                       env=env, check=True, capture_output=True)
        processes.append(time.perf_counter() - clock)
    print(json.dumps({"catalake_sql_process_s": round(statistics.median(processes), 3), "query": "one_hour"}))

    store = DeltaStore(None, args.warehouse, "delta-rs", master="local[1]")
    coverage = {t: store.statistics_coverage(t) for t in warehouse_tables(args.warehouse).values()}
    print(json.dumps({"statistics_coverage": {t: f"{a}/{b}" for t, (a, b) in coverage.items()},
                      "all_covered": all(a == b for a, b in coverage.values())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
