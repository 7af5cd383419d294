"""Landed formats at scale (issue 27): the same events as JSON lines, zstd JSON lines, one Event
Hubs Capture Avro file and one Kafka-source Parquet file, each in its own layout.

    python benchmarks/formats.py --records 1000000 --definitions 10 [--work DIR] [--repeats 2]

The events are workload.py's structured CloudEvents (0 bad records here: every format must hold
them). Each file is written once by the library that writes it in the wild (fastavro, pyarrow,
zstandard) and reused. Each format's day runs through classify_partition on one local Spark
session (local[*], the tables created beforehand, so each run is the steady state); printed per
format as a JSON line (with `kafka-jsonl` and `amqp-jsonl`, the Parquet and Avro files' records
as JSON lines, kcat-style and AMQP records: the cost of each binding without the binary format):
records, tasks the day was cut into, seconds (minimum of the repeats, with
the phases), records/s, landed bytes, and whether conservation held.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, catalog, event

from catalake.demo import writers as formats

LAYOUTS = {"jsonl": "day", "zstd": "hive", "avro": "capture", "amqp-jsonl": "day", "parquet": "connect", "kafka-jsonl": "day"}


def write(work: Path, records: int, definitions: int) -> Path:
    """The landings for (records, definitions), written once."""
    base = work / f"formats-{definitions}x{records}"
    done = base / ".written"
    if done.exists():
        return base
    rng = random.Random(7)
    (base / "catalog").mkdir(parents=True, exist_ok=True)
    (base / "catalog" / "bench.xreg.json").write_text(json.dumps(catalog(definitions)))
    events = [event(rng, n, definitions) for n in range(records)]
    lines = [orjson.dumps(e).decode() for e in events]
    day = dt.date.fromisoformat(DAY)
    folder = base / "jsonl" / DAY
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    formats.write_zstd_lines(lines, base / "zstd" / f"year={day.year}" / f"month={day.month:02d}" / f"day={day.day:02d}"
                             / "hour=00" / "events.jsonl.zst")
    formats.write_avro(formats.capture_records(events, binary=False), formats.CAPTURE_SCHEMA,
                       base / "avro" / "bench-ns" / "sensors" / "0" / f"{day:%Y/%m/%d}" / "00" / "00" / "00.avro")
    kafka = [{"topic": "sensors", "partition": 0, "offset": n, "ts": 1795132800000 + n, "key": e["id"],
              "headers": ["content-type", "application/cloudevents+json"], "payload": lines[n]} for n, e in enumerate(events)]
    formats.write_kafka_parquet(kafka, base / "parquet" / "topics" / "sensors" / f"{day:%Y/%m/%d}" / "sensors+0+0.parquet",
                                row_group_size=65536)
    # the same records as JSON lines: what each binary format costs beyond its binding
    (base / "kafka-jsonl" / DAY).mkdir(parents=True, exist_ok=True)
    (base / "kafka-jsonl" / DAY / "kafka.jsonl").write_bytes(b"".join(orjson.dumps(k) + b"\n" for k in kafka))
    from catalake.platform.landing.formats import capture_record

    (base / "amqp-jsonl" / DAY).mkdir(parents=True, exist_ok=True)
    (base / "amqp-jsonl" / DAY / "amqp.jsonl").write_bytes(
        b"".join(orjson.dumps(capture_record(r)) + b"\n" for r in formats.capture_records(events, binary=False)))
    done.write_text("")
    return base


def measure(spark, base: Path, name: str, repeats: int) -> dict:
    from catalake.platform.catalog import load_catalog
    from catalake.platform.landing.listing import list_day
    from catalake.platform.runs.day import classify_partition, conservation
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore

    cat = load_catalog([base / "catalog"])
    tables, _ = message_tables(cat, [base / "catalog"])
    store = DeltaStore(spark, base / f"warehouse-{name}")
    sync_message_tables(store, tables)
    day = dt.date.fromisoformat(DAY)
    landing, layout = str(base / name), LAYOUTS[name]
    landed = sum(f.size for f in list_day(landing, day, layout).files)
    best, out = None, {}
    for _ in range(repeats):
        said: list[str] = []
        clock = time.perf_counter()
        result = classify_partition(spark, store, tables, landing, day, layout=layout, progress=said.append)
        seconds = time.perf_counter() - clock
        ok, counts = conservation(store, tables, day, result.records, result.stored)
        tasks = next((int(m.split(" in ")[1].split()[0]) for m in said if "landed file(s) in" in m), None)
        if best is None or seconds < best:
            best = seconds
            out = {"format": name, "layout": layout, "records": result.records, "stored": counts["rows_stored"],
                   "deadletter": result.deadletter, "tasks": tasks, "landed_bytes": landed, "conservation": ok,
                   "seconds": round(seconds, 2), "records_per_s": round(result.records / seconds),
                   "phases": {k: round(v, 2) for k, v in result.seconds.items()}}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--formats", nargs="*", default=list(LAYOUTS))
    args = parser.parse_args(argv)
    clock = time.perf_counter()
    base = write(Path(args.work), args.records, args.definitions)
    print(json.dumps({"written": str(base), "seconds": round(time.perf_counter() - clock, 1)}), flush=True)

    from catalake.platform.spark import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = build_session("local[*]", "catalake-formats-bench", {})
    for name in args.formats:
        print(json.dumps(measure(spark, base, name, args.repeats)), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
