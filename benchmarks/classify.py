"""The engine alone, warm (issue 15): `classify_partition` in one Spark session, round after round.

    python benchmarks/classify.py --records 100000 --definitions 100 [--rounds 3] [--work DIR]

`run.py` times whole `catalake run` processes (process start, Dagster, the catalog job, quality
results and events included) against the baselines. This times only the partition's
classification and commits, on the same workload, with the phases from its progress messages:
the Spark job (read, classify, write every table's files) and the commits. The first round pays
the Python workers' start; later rounds show the steady state.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--definitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from catalake.platform.catalog import load_catalog
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.spark import build_session
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    catalog_dir, landing = write(Path(args.work), args.definitions, args.records)
    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, [catalog_dir])
    warehouse = Path(args.work) / f"engine-{args.definitions}-{args.records}"
    shutil.rmtree(warehouse, ignore_errors=True)
    spark = build_session("local[*]", app_name="catalake-classify-bench")
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)
    for round_ in range(1, args.rounds + 1):
        marks: dict[str, float] = {}
        start = time.perf_counter()

        def progress(message: str, marks: dict = marks, start: float = start) -> None:
            for key in ("classified", "committed"):
                if key in message:
                    marks[key] = time.perf_counter() - start

        result = classify_partition(spark, store, tables, landing, dt.date.fromisoformat(DAY), progress=progress)
        total = time.perf_counter() - start
        print(json.dumps({
            "round": round_, "records": result.records, "definitions": args.definitions, "tasks": result.tasks,
            "seconds": round(total, 2), "records_per_second": round(result.records / total),
            "spark_job_s": round(marks.get("classified", 0), 2),
            "commit_s": round(marks.get("committed", 0) - marks.get("classified", 0), 2),
            "deadletter": result.deadletter,
        }), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
