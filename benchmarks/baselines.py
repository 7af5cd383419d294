"""What a user would write instead of catalake, on the same workload (issue 15).

    python benchmarks/baselines.py loop CATALOG_DIR LANDING_DAY OUT
    python benchmarks/baselines.py spark CATALOG_DIR LANDING_DAY OUT
    python benchmarks/baselines.py duckdb CATALOG_DIR LANDING_DAY OUT
    python benchmarks/baselines.py duckdb_raw CATALOG_DIR LANDING_DAY OUT

* `loop`: a plain Python loop, one core: orjson per line, each type's jsonschema validator
  compiled once, the `source` uritemplate's regex, rows grouped per type, one
  `deltalake.write_deltalake` per type plus a dead-letter table.
* `spark`: a hand-written PySpark job: parse the envelope, write everything partitioned by type
  in one job (Parquet).
* `duckdb`: DuckDB, typed and checked: the lines read once, the envelope extracted, each type's
  `data` typed with `json_transform` into its struct (from the JSON Schema), the schema's
  required/enum/bounds/lengths and the source template as SQL; a Parquet file per type and one
  of the dead letters (malformed JSON, no type, a failed check).
* `duckdb_raw`: DuckDB, the floor: the lines parsed, a Parquet file per type, data kept as JSON.

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


DUCK_TYPES = {"string": "VARCHAR", "number": "DOUBLE", "integer": "BIGINT", "boolean": "BOOLEAN"}


def _duck_type(schema: dict):
    """The JSON Schema as json_transform's structure (objects, [items], type names)."""
    if schema.get("type") == "object":
        return {k: _duck_type(v) for k, v in schema.get("properties", {}).items()}
    if schema.get("type") == "array":
        return [_duck_type(schema.get("items", {}))]
    if schema.get("format") == "date-time":
        return "TIMESTAMPTZ"
    return DUCK_TYPES.get(schema.get("type"), "VARCHAR")


def _duck_checks(schema: dict, path: str) -> list[str]:
    checks = [f"{path}.{k} IS NOT NULL" for k in schema.get("required", [])]
    for key, sub in schema.get("properties", {}).items():
        column = f"{path}.{key}"
        if "enum" in sub:
            checks.append(f"({column} IS NULL OR {column} IN ({', '.join(repr(v) for v in sub['enum'])}))")
        if "minimum" in sub or "maximum" in sub:
            checks.append(f"({column} IS NULL OR {column} BETWEEN {sub.get('minimum', '-1e308')} AND {sub.get('maximum', '1e308')})")
        if "minLength" in sub or "maxLength" in sub:
            checks.append(f"({column} IS NULL OR length({column}) BETWEEN {sub.get('minLength', 0)} AND {sub.get('maxLength', 1 << 30)})")
        if sub.get("type") == "object":
            checks += [f"({column} IS NULL OR ({c}))" for c in _duck_checks(sub, column)]
    return checks


def duckdb_job(catalog_dir: Path, day: Path, out: Path, typed: bool = True) -> int:
    import duckdb

    document = json.loads(next(catalog_dir.glob("*.json")).read_text())
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"""CREATE TABLE lines AS SELECT filename, line FROM read_csv('{day}/*.jsonl', columns={{'line': 'VARCHAR'}},
                    delim='\x01', quote='', escape='', header=false, filename=true, auto_detect=false)""")
    con.execute("""CREATE TABLE events AS SELECT filename, line, ok,
                   CASE WHEN ok THEN json_extract_string(line, '$.type') END AS type,
                   CASE WHEN ok THEN json_extract_string(line, '$.id') END AS id,
                   CASE WHEN ok THEN json_extract_string(line, '$.source') END AS source,
                   CASE WHEN ok THEN json_extract_string(line, '$.time') END AS time,
                   CASE WHEN ok THEN json_extract(line, '$.data') END AS data
                   FROM (SELECT filename, line, json_valid(line) AS ok FROM lines)""")
    known = ", ".join(repr(d["envelopemetadata"]["type"]["value"]) for g in document["messagegroups"].values()
                      for d in g["messages"].values())
    con.execute(f"""CREATE TABLE dead AS SELECT filename, line, CASE WHEN NOT ok THEN 'malformed_json' ELSE 'no_match' END
                    AS reason FROM events WHERE NOT ok OR type IS NULL OR type NOT IN ({known})""")
    for group in document["messagegroups"].values():
        for name, definition in group["messages"].items():
            kind = definition["envelopemetadata"]["type"]["value"]
            if not typed:
                con.execute(f"COPY (SELECT * EXCLUDE (line, ok) FROM events WHERE ok AND type = '{kind}') TO '{out}/{name}.parquet'")
                continue
            template = definition["envelopemetadata"]["source"]["value"]
            source = "^" + re.sub(r"\\\{(\w+)\\\}", "([^/]+)", re.escape(template)) + "$"
            struct = json.dumps(_duck_type(definition["dataschema"])).replace("'", "''")
            checks = " AND ".join([f"regexp_full_match(source, '{source}')", *_duck_checks(definition["dataschema"], "data")])
            con.execute(f"""CREATE OR REPLACE TEMP TABLE typed AS SELECT id, source, type, time::TIMESTAMPTZ AS time,
                            json_transform(data, '{struct}') AS data, filename, line FROM events WHERE ok AND type = '{kind}'""")
            con.execute(f"COPY (SELECT * EXCLUDE (line) FROM typed WHERE {checks}) TO '{out}/{name}.parquet'")
            con.execute(f"INSERT INTO dead SELECT filename, line, 'schema_violation' FROM typed WHERE NOT coalesce({checks}, false)")
    con.execute(f"COPY dead TO '{out}/deadletter.parquet'")
    return con.execute("SELECT count(*) FROM lines").fetchone()[0]


if __name__ == "__main__":
    kind, catalog_dir, day, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    jobs = {"loop": loop, "spark": spark_job, "duckdb": duckdb_job, "duckdb_raw": lambda c, d, o: duckdb_job(c, d, o, typed=False)}
    print(jobs[kind](catalog_dir, day, out))
