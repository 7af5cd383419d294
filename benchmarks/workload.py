"""The scaling workload (issue 15): N message types, R structured CloudEvents over them.

    python benchmarks/workload.py --definitions 100 --records 100000 --work /tmp/catalake-bench

One group of N definitions, each its own CloudEvents `type`, a `source` uritemplate with one
placeholder and an inline JSON Schema of eight fields (strings, a bounded number, an enum, a
date-time, an array of strings, an integer, a boolean, a nested object with bounds). R JSON lines
spread evenly over the N types in 4 files, plus 0.1% bad records: malformed JSON, an unknown
type, a schema violation (a third each). Deterministic; written once per (N, R) and reused.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import orjson

DAY = "2026-11-20"
FILES = 4
SCHEMA = {
    "type": "object",
    "required": ["device", "reading", "status", "observed_at"],
    "properties": {
        "device": {"type": "string", "minLength": 1, "maxLength": 64},
        "reading": {"type": "number", "minimum": -50, "maximum": 150},
        "status": {"enum": ["ok", "degraded", "failed"]},
        "observed_at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "count": {"type": "integer"},
        "active": {"type": "boolean"},
        "location": {"type": "object", "properties": {
            "lat": {"type": "number", "minimum": -90, "maximum": 90},
            "lon": {"type": "number", "minimum": -180, "maximum": 180}}},
    },
}
# the same payload with a pattern on every string, as catalogs of real feeds write them
# (benchmarks/per_record.py --patterns: the pattern engine's cost per record)
PATTERNED = {**SCHEMA, "properties": {
    **SCHEMA["properties"],
    "device": {**SCHEMA["properties"]["device"], "pattern": "^dev-[0-9]{1,5}$"},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
    "status": {"type": "string", "enum": ["ok", "degraded", "failed"], "pattern": "^(ok|degraded|failed)$"},
}}
SOURCE = "https://bench.example/sites/{site}"


def type_name(i: int) -> str:
    return f"bench.sensors.Reading{i}"


def catalog(definitions: int, schema: dict = SCHEMA) -> dict:
    messages = {
        type_name(i): {
            "envelope": "CloudEvents/1.0",
            "envelopemetadata": {"type": {"value": type_name(i)}, "source": {"type": "uritemplate", "value": SOURCE}},
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": schema,
        }
        for i in range(definitions)
    }
    return {"specversion": "1.0-rc2", "messagegroups": {"bench.sensors": {"messages": messages}}}


def fresh_catalog(work: Path, definitions: int):
    """`work` emptied, the catalog of `definitions` written under work/catalog; the loaded
    Catalog and its message tables (catalake imported here: the generator itself needs none)."""
    import shutil

    from catalake.platform.catalog import load_catalog
    from catalake.platform.warehouse.message_tables import message_tables

    shutil.rmtree(work, ignore_errors=True)
    (work / "catalog").mkdir(parents=True)
    (work / "catalog" / "bench.xreg.json").write_text(json.dumps(catalog(definitions)))
    loaded = load_catalog([work / "catalog"])
    return loaded, message_tables(loaded, [work / "catalog"])[0]


def event(rng: random.Random, n: int, definitions: int) -> dict:
    return {
        "specversion": "1.0", "id": f"e-{n}", "source": f"https://bench.example/sites/s{n % 50}",
        "type": type_name(n % definitions), "time": f"2026-11-20T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z",
        "datacontenttype": "application/json",
        "data": {
            "device": f"dev-{rng.randrange(10_000)}", "reading": round(rng.uniform(-20, 120), 2),
            "status": rng.choice(("ok", "ok", "ok", "degraded", "failed")),
            "observed_at": f"2026-11-20T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z",
            "tags": rng.sample(["indoor", "outdoor", "roof", "basement", "lab"], 2),
            "count": rng.randrange(1000), "active": rng.random() < 0.9,
            "location": {"lat": round(rng.uniform(-60, 60), 5), "lon": round(rng.uniform(-170, 170), 5)},
        },
    }


def bad(rng: random.Random, n: int, definitions: int) -> bytes:
    kind = n % 3
    good = event(rng, n, definitions)
    if kind == 0:
        return orjson.dumps(good)[:-7]  # malformed JSON
    if kind == 1:
        good["type"] = "bench.sensors.Unknown"  # no definition
        return orjson.dumps(good)
    good["data"]["reading"] = 500.0  # above the schema's maximum
    return orjson.dumps(good)


def write(work: Path, definitions: int, records: int, patterns: bool = False) -> tuple[Path, Path]:
    """(catalog folder, landing root) for N definitions and R records, written once (`patterns`:
    the catalog's schema has a pattern on every string)."""
    base = work / f"workload-{definitions}-{records}{'-patterns' if patterns else ''}"
    catalog_dir, landing = base / "catalog", base / "landing"
    done = base / ".complete"
    if done.exists():
        return catalog_dir, landing
    catalog_dir.mkdir(parents=True, exist_ok=True)
    (catalog_dir / "bench.xreg.json").write_text(json.dumps(catalog(definitions, PATTERNED if patterns else SCHEMA)))
    day = landing / DAY
    day.mkdir(parents=True, exist_ok=True)
    rng = random.Random(records * 31 + definitions)
    outs = [open(day / f"events-{i}.jsonl", "wb") for i in range(FILES)]
    try:
        for n in range(records):
            line = bad(rng, n, definitions) if n % 1000 == 999 else orjson.dumps(event(rng, n, definitions))
            outs[n % FILES].write(line + b"\n")
    finally:
        for out in outs:
            out.close()
    done.touch()
    return catalog_dir, landing


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, default=100)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    args = parser.parse_args()
    print(*write(Path(args.work), args.definitions, args.records))


if __name__ == "__main__":
    main()
