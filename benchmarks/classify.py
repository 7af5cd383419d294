"""Classify+write inside one warm Spark session (issue 4): the engine alone, against the baseline.

    python benchmarks/classify.py --records 100000 --definitions 10 [--rounds 2] [--work DIR]

`run.py` times whole `catalake run` processes (JVM start, Dagster, the catalog job and the
expectation checks included). This times only what the classify+write target is about, in one
process: per round, the plain Spark baseline on the day's files (read -> parse JSON -> write
Parquet) and then `classify_partition` (read, normalize, match, route, write every table and the
dead-letter table), with the phase times taken from its progress messages. The first round pays
the JVM's warm-up; later rounds show the steady state. Same files and catalogs as run.py.
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
from run import DAY, landing, synthetic_catalog  # noqa: E402


def baseline(spark, folder: Path, out: Path) -> None:
    from pyspark.sql import functions as F

    files = sorted(str(p) for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    docs = sorted(str(p) for p in folder.iterdir() if p.name.endswith(".json"))
    lines = spark.read.text(files).select(F.expr("try_parse_json(value)").alias("v"))
    batch = spark.read.text(docs, wholetext=True).select(
        F.explode(F.expr("try_variant_get(try_parse_json(value), '$', 'array<variant>')")).alias("v"))
    lines.unionByName(batch).select(F.to_json("v").alias("record")).write.mode("overwrite").parquet(str(out))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from catalake.platform.catalog import load_catalog
    from catalake.platform.classify import classify_partition
    from catalake.platform.message_table import message_tables
    from catalake.platform.spark import build_session
    from catalake.platform.storage import DeltaStore

    work = Path(args.work)
    land = landing(work / f"landing-{args.records}", args.records)
    catalog_dir = synthetic_catalog(work / f"catalog-{args.definitions}", args.definitions)
    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, [catalog_dir])
    day = dt.date.fromisoformat(DAY)
    warehouse = work / f"engine-{args.records}-{args.definitions}"
    shutil.rmtree(warehouse, ignore_errors=True)
    spark = build_session("local[*]", app_name="catalake-classify-bench")
    store = DeltaStore(spark, warehouse)
    for round_ in range(1, args.rounds + 1):
        start = time.perf_counter()
        baseline(spark, land / DAY, work / "engine-baseline.parquet")
        base = time.perf_counter() - start
        marks: dict[str, float] = {}
        start = time.perf_counter()

        def progress(message: str) -> None:
            for key in ("read and matched", "writing"):
                if key in message:
                    marks[key] = time.perf_counter() - start

        result = classify_partition(spark, store, catalog, tables, land, day, progress=progress)
        total = time.perf_counter() - start
        print(json.dumps({
            "round": round_, "records": result.records, "definitions": args.definitions,
            "baseline_s": round(base, 1), "classify_write_s": round(total, 1), "ratio": round(total / base, 2),
            "read_match_s": round(marks.get("read and matched", 0), 1),
            "route_s": round(marks.get("writing", 0) - marks.get("read and matched", 0), 1),
            "write_s": round(total - marks.get("writing", 0), 1),
            "deadletter": result.deadletter,
        }), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
