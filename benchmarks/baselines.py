"""What a user would write instead of catalake, on the same workload (issue 15).

    python benchmarks/baselines.py loop CATALOG_DIR LANDING_DAY OUT
    python benchmarks/baselines.py spark CATALOG_DIR LANDING_DAY OUT

* `loop`: a plain Python loop, one core: orjson per line, each type's jsonschema validator
  compiled once, the `source` uritemplate's regex, rows grouped per type, one
  `deltalake.write_deltalake` per type plus a dead-letter table.
* `spark`: a hand-written PySpark job: parse the envelope, write everything partitioned by type
  in one job (Parquet).

Each prints the number of records it read.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def loop(catalog_dir: Path, day: Path, out: Path) -> int:
    import jsonschema
    import orjson
    import pyarrow as pa
    from deltalake import write_deltalake

    document = json.loads(next(catalog_dir.glob("*.json")).read_text())
    validators, sources = {}, {}
    for group in document["messagegroups"].values():
        for definition in group["messages"].values():
            kind = definition["envelopemetadata"]["type"]["value"]
            cls = jsonschema.validators.validator_for(definition["dataschema"])
            validators[kind] = cls(definition["dataschema"])
            template = definition["envelopemetadata"]["source"]["value"]
            sources[kind] = re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$")
    rows: dict[str, list] = {}
    dead = []
    records = 0
    for path in sorted(day.glob("*.jsonl")):
        with open(path, "rb") as f:
            for number, line in enumerate(f, start=1):
                records += 1
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    dead.append({"reason": "malformed_json", "file": str(path), "line": number, "raw": line.decode("utf-8", "replace")})
                    continue
                kind = event.get("type")
                validator = validators.get(kind)
                match = sources[kind].match(event.get("source", "")) if validator else None
                if match is None:
                    dead.append({"reason": "no_match", "file": str(path), "line": number, "raw": line.decode("utf-8", "replace")})
                    continue
                if not validator.is_valid(event.get("data")):
                    dead.append({"reason": "schema_violation", "file": str(path), "line": number, "raw": line.decode("utf-8", "replace")})
                    continue
                rows.setdefault(kind, []).append({
                    "id": event["id"], "source": event["source"], "type": kind, "time": event.get("time"),
                    **match.groupdict(), "data": event.get("data"), "source_file": str(path), "source_line": number,
                })
    for kind, values in rows.items():
        write_deltalake(str(out / kind), pa.Table.from_pylist(values), mode="overwrite")
    write_deltalake(str(out / "deadletter"), pa.Table.from_pylist(dead), mode="overwrite")
    return records


def spark_job(catalog_dir: Path, day: Path, out: Path) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from catalake.platform.spark import build_session

    spark = build_session("local[*]", app_name="baseline")
    envelope = ("specversion string, id string, source string, type string, time string, datacontenttype string, "
                "data string")
    lines = spark.read.text(sorted(str(p) for p in day.glob("*.jsonl")))
    events = lines.select(F.from_json("value", envelope).alias("e"), F.input_file_name().alias("source_file")).select("e.*", "source_file")
    events.withColumn("type", F.coalesce("type", F.lit("_invalid"))).write.mode("overwrite").partitionBy("type").parquet(str(out))
    return spark.read.parquet(str(out)).count()


if __name__ == "__main__":
    kind, catalog_dir, day, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    print({"loop": loop, "spark": spark_job}[kind](catalog_dir, day, out))
