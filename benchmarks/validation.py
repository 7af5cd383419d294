"""Expectation-suite validation benchmark (issue 5): one suite over a large partition.

    python benchmarks/validation.py --rows 1000000 [--work DIR]

Builds the demo's RideEnded table (Kafka binding: 24 expectations), fills one partition with
`--rows` generated rows written by Spark (executors write, the driver commits), then validates
the partition against the generated suite exactly as the `expectations` asset check does, and
reports the wall time and the number of Spark jobs the validation started (from the Spark status
tracker), with a clean partition and with 1% of the rows breaking two expectations.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAY = dt.date(2026, 11, 20)
MESSAGE = "bikeshare.rides.kafka.RideEnded"


def rows(spark, table, n: int, broken: float):
    from pyspark.sql import functions as F

    i = F.col("id")
    bad = (F.rand(7) < broken) if broken else F.lit(False)
    frame = spark.range(n).select(
        F.lit("1.0").alias("specversion"), i.cast("string").alias("id"),
        F.concat(F.lit("https://api.bikeshare.example/cities/lyon/stations/S-"), (i % 300).cast("string")).alias("source"),
        F.lit("bikeshare.rides.RideEnded").alias("type"), F.concat(F.lit("rides/R-"), F.lpad((i % 999999).cast("string"), 6, "0")).alias("subject"),
        F.timestamp_seconds(F.lit(1795600000) + i % 86400).alias("time"), F.lit("application/json").alias("datacontenttype"),
        F.lit("lyon").alias("city"), F.concat(F.lit("S-"), (i % 300).cast("string")).alias("station"),
        F.lit("KAFKA").alias("protocol"), F.lit("rides").alias("kafka_topic"), (i % 6).cast("int").alias("kafka_partition"), i.alias("kafka_offset"),
        F.struct(
            F.concat(F.lit("R-"), F.lpad((i % 999999).cast("string"), 6, "0")).alias("ride_id"),
            F.concat(F.lit("B-"), (i % 5000).cast("string")).alias("bike_id"),
            F.lit("S-1").alias("station_id"),
            F.timestamp_seconds(F.lit(1795600000) + i % 86400).alias("ended_at"),
            F.when(bad, F.lit(-5.0)).otherwise((i % 9000).cast("double")).alias("distance_m"),
            F.struct((i % 20).cast("double").alias("amount"), F.when(bad, F.lit("XXX")).otherwise(F.lit("EUR")).alias("currency")).alias("fare"),
        ).alias("data"),
        F.lit("bench").alias("source_file"), i.alias("source_line"), F.current_timestamp().alias("ingested_at"),
        F.lit(DAY).alias("event_date"),
    )
    schema = table.schema
    return frame.select([(F.col(f.name) if f.name in frame.columns else F.lit(None)).cast(f.dataType).alias(f.name) for f in schema.fields])


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--rows", type=int, default=1_000_000)
    args.add_argument("--work", type=Path, default=Path("/tmp/catalake-validation-bench"))
    opts = args.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from catalake.platform.catalog import load_catalog
    from catalake.platform.quality.validator import Validator
    from catalake.platform.quality.suites import build_suite
    from catalake.platform.spark import build_session
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    catalog_dir = REPO / "src" / "catalake" / "demo" / "catalog"
    tables, _ = message_tables(load_catalog([catalog_dir]), [catalog_dir])
    (table,) = [t for t in tables if t.message.message_id == MESSAGE]
    spark = build_session("local[*]", app_name="catalake-validation-bench")
    store = DeltaStore(spark, opts.work / "warehouse")
    sync_message_tables(store, [table])
    validator = Validator(opts.work / "warehouse")
    suite = build_suite(table)
    tracker = spark.sparkContext.statusTracker()
    for label, broken in (("clean", 0.0), ("1% broken", 0.01)):
        store.overwrite_partition(table.name, rows(spark, table, opts.rows, broken), "event_date", DAY)
        partition = store.read(table.name).where(f"event_date = DATE'{DAY}'")
        jobs_before = len(tracker.getJobIdsForGroup())
        start = time.perf_counter()
        outcome = validator.validate(partition, suite)
        wall = time.perf_counter() - start
        jobs = len(tracker.getJobIdsForGroup()) - jobs_before
        print(json.dumps({
            "partition": label, "rows": outcome.rows, "expectations": len(outcome.outcomes),
            "failed": sorted(f"{o.type}:{o.column}={o.unexpected_count}" for o in outcome.outcomes if not o.success),
            "wall_s": round(wall, 1), "spark_jobs": jobs,
        }), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
