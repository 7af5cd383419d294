"""A day feeding many definitions at once: one Spark job whatever the number of tables,
correct counts, conservation, identical re-runs, at the default heap."""

import datetime as dt
import json

import pytest
from deltalake import DeltaTable

from catalake.platform.catalog import load_catalog
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables

DAY = dt.date(2026, 11, 20)
SCHEMA = {
    "type": "object", "required": ["device", "reading"],
    "properties": {"device": {"type": "string"}, "reading": {"type": "number", "minimum": 0},
                   "status": {"enum": ["ok", "failed"]}, "tags": {"type": "array", "items": {"type": "string"}},
                   "at": {"type": "string", "format": "date-time"}},
}


def write_day(base, definitions: int, per_type: int):
    """A catalog of `definitions` types and a day with `per_type` good records of each, plus one
    malformed line, one unknown type and one schema violation per 50 types."""
    messages = {f"scale.T{i}": {
        "envelope": "CloudEvents/1.0",
        "envelopemetadata": {"type": {"value": f"scale.T{i}"}, "source": {"type": "uritemplate", "value": "/sites/{site}"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA} for i in range(definitions)}
    catalog = base / f"catalog-{definitions}"
    catalog.mkdir()
    (catalog / "scale.xreg.json").write_text(json.dumps({"specversion": "1.0-rc2", "messagegroups": {"scale": {"messages": messages}}}))
    lines, bad = [], {"malformed_json": 0, "no_match": 0, "schema_violation": 0}
    for n in range(per_type * definitions):
        i = n % definitions
        lines.append(json.dumps({"specversion": "1.0", "id": f"{n}", "source": f"/sites/s{n % 7}", "type": f"scale.T{i}",
                                 "data": {"device": f"d{n}", "reading": n % 100, "status": "ok", "tags": ["a"],
                                          "at": "2026-11-20T10:00:00Z"}}))
    for j in range(definitions // 50):
        lines += ['{"specversion": "1.0", "id": "broken', json.dumps({"specversion": "1.0", "id": f"u{j}", "source": "/x", "type": "scale.Unknown"}),
                  json.dumps({"specversion": "1.0", "id": f"v{j}", "source": "/sites/a", "type": f"scale.T{j}", "data": {"device": "d", "reading": -1}})]
        bad = {k: v + 1 for k, v in bad.items()}
    landing = base / f"landing-{definitions}" / DAY.isoformat()
    landing.mkdir(parents=True)
    (landing / "a.jsonl").write_text("\n".join(lines[::2]) + "\n")
    (landing / "b.jsonl").write_text("\n".join(lines[1::2]) + "\n")
    return catalog, landing.parent, bad


def run_day(spark, base, catalog, landing):
    from catalake.platform.warehouse.store import DeltaStore

    cat = load_catalog([catalog])
    tables, _ = message_tables(cat, [catalog])
    store = DeltaStore(spark, base / f"warehouse-{catalog.name}")
    sync_message_tables(store, tables)
    return store, tables, classify_partition(spark, store, tables, landing, DAY)


def snapshot(store, names) -> dict:
    out = {}
    for name in names:
        rows = DeltaTable(store.path(name)).to_pyarrow_table().drop(["ingested_at"]).to_pylist()
        out[name] = sorted(json.dumps(r, default=str, sort_keys=True) for r in rows)
    return out


@pytest.fixture(scope="module")
def two_sizes(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("scale")
    return {n: (*write_day(base, n, per_type=20), base) for n in (20, 200)}


def test_a_day_feeding_200_definitions(spark, two_sizes):
    catalog, landing, bad, base = two_sizes[200]
    store, tables, result = run_day(spark, base, catalog, landing)
    assert result.records == 200 * 20 + 3 * 4
    assert len(result.tables) == 200 and set(result.tables.values()) == {20}
    assert result.deadletter == bad
    ok, counts = conservation(store, tables, DAY, result.records)
    assert ok and len(counts["per_table"]) == 201
    # each table's expectations, from the same pass: the violation of `reading`'s minimum named
    quality = result.quality[next(t.name for t in tables if t.message.message_id == "scale.T0")]
    reading = next(r for r in quality.results if r.expectation.id == "data.reading:range")
    assert (reading.element_count, reading.unexpected_count, quality.rejected) == (21, 1, 1)
    before = snapshot(store, [t.name for t in tables] + [DEADLETTER_TABLE])
    again = classify_partition(spark, store, tables, landing, DAY)
    assert again.as_json() == result.as_json()
    assert snapshot(store, [t.name for t in tables] + [DEADLETTER_TABLE]) == before


def test_the_number_of_spark_jobs_does_not_depend_on_the_number_of_tables(spark, two_sizes):
    tracker, group = spark.sparkContext.statusTracker(), f"catalake-classify-{DAY}"
    counts = {}
    for n, (catalog, landing, _, base) in two_sizes.items():
        before = set(tracker.getJobIdsForGroup(group))
        folder = base / f"jobs-{n}"
        folder.mkdir()
        run_day(spark, folder, catalog, landing)
        counts[n] = len(set(tracker.getJobIdsForGroup(group)) - before)
    assert counts == {20: 1, 200: 1}
