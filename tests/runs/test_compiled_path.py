"""The compiled path (runs/bulk.py) against the per-record path, the referee: the same landed records
through both give identical rows, dead letters (reason, detail, candidates, expectations) and
quality tallies (counts and examples). Records are drawn at the edges of each table's schema
(support/edges.py) for JSON Schema, Avro, Protobuf and JSON Structure definitions written here,
and for every definition of the public catalogs. Plain Python: the executor's own code reads,
classifies and writes the Parquet files, which are read back here."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from catalake.platform.catalog import load_catalog
from catalake.platform.landing.planning import Piece
from catalake.platform.runs import bulk
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.message_tables import message_tables
from support.edges import envelopes, payloads
from support.onepass import DAY, record_for
from support.public_catalogs import VALID
from support.runs import plan_for

INGESTED = dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc)
SOURCE = "https://edges.example/sites/{site}"

JSON_SCHEMA = {
    "type": "object", "required": ["name", "amount", "state"], "additionalProperties": True,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]"},
        "amount": {"type": "number", "minimum": -5, "exclusiveMaximum": 100},
        "count": {"type": "integer", "minimum": 0, "maximum": 2147483647},
        "state": {"enum": ["ok", "late"]},
        "kind": {"const": "k"},
        "flag": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0}},
        "inner": {"type": "object", "required": ["x"],
                  "properties": {"x": {"type": "integer", "maximum": 10}, "y": {"type": "string", "format": "date-time"}}},
        "free": {"type": "object"},
    },
}
# keywords jsonschema itself decides (coverage.py): every record of the table takes the per-record path
CLOSED = {"type": "object", "additionalProperties": False, "properties": {
    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "n": {"type": "integer"}}}
AVRO = {
    "type": "record", "name": "Reading", "namespace": "edges", "fields": [
        {"name": "device", "type": "string"},
        {"name": "count", "type": "int"},
        {"name": "amount", "type": "double"},
        {"name": "level", "type": {"type": "enum", "name": "Level", "symbols": ["LOW", "HIGH"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "long"}]}},
    ],
}
STRUCTURE = {
    "$schema": "https://json-structure.org/meta/core/v0/#", "$id": "https://edges.example/s", "name": "S",
    "type": "object", "required": ["id"],
    "properties": {
        "id": {"type": "string", "maxLength": 5}, "small": {"type": "int8"}, "byte": {"type": "uint8"},
        "wide": {"type": "int64"}, "price": {"type": "decimal", "precision": 6, "scale": 2},
        "when": {"type": "datetime"}, "day": {"type": "date"}, "key": {"type": "uuid"},
        "ratio": {"type": "double", "minimum": 0, "maximum": 1}, "on": {"type": "boolean"},
        "names": {"type": "array", "items": {"type": "string"}},
    },
}
# the same languages with only what the compiled path types by column
AVRO_PLAIN = {"type": "record", "name": "Plain", "namespace": "edges", "fields": [
    f for f in AVRO["fields"] if f["name"] != "at"]}
STRUCTURE_PLAIN = {**STRUCTURE, "name": "P", "properties": {
    k: v for k, v in STRUCTURE["properties"].items() if k not in ("wide", "price", "day")}}
PROTO = ('syntax = "proto3";\npackage edges;\nmessage Job {\n  string name = 1;\n  int32 pages = 2;\n'
         '  repeated string tags = 3;\n  double ratio = 4;\n  bool done = 5;\n  Part part = 6;\n}\n'
         'message Part {\n  int64 size = 1;\n}\n')


# a payload each table keeps; records drawn from these change one member at a time
KEPT = {
    "edges.Json": {"name": "ab", "amount": 99.5, "count": 3, "state": "ok", "kind": "k", "flag": True,
                   "at": "2026-11-20T10:00:00Z", "tags": ["a"], "scores": [0, 1.5], "inner": {"x": 10}, "free": {"q": [1]}},
    "edges.Closed": {"tags": ["a", "b"], "n": 1},
    "edges.Avro": {"device": "d", "count": 1, "amount": 1.5, "level": "LOW", "tags": [], "at": 1700000000000,
                   "note": None, "inner": {"x": 1}},
    "edges.AvroPlain": {"device": "d", "count": 1, "amount": 1.5, "level": "HIGH", "tags": ["t"], "note": "n", "inner": {"x": 1}},
    "edges.Structure": {"id": "a", "small": -128, "byte": 255, "wide": "9007199254740993", "price": "12.50",
                        "when": "2026-11-20T10:00:00Z", "day": "2026-11-20", "key": "0e2a8f4c-1d3b-4f5a-9c6d-7e8f9a0b1c2d",
                        "ratio": 1, "on": False, "names": ["x"]},
    "edges.StructurePlain": {"id": "abcde", "small": 127, "byte": 0, "when": "2026-11-20T10:00:00.123456+02:00",
                             "key": "0e2a8f4c-1d3b-4f5a-9c6d-7e8f9a0b1c2d", "ratio": 0.5, "on": True, "names": []},
    "edges.Proto": {"name": "n", "pages": 2147483647, "tags": ["a"], "ratio": 0.25, "done": True, "part": {"size": 5}},
}


def catalog() -> dict:
    def definition(kind: str, fmt: str, schema) -> dict:
        return {"envelope": "CloudEvents/1.0", "dataschemaformat": fmt, "dataschema": schema,
                "envelopemetadata": {"type": {"value": f"edges.{kind}"}, "source": {"type": "uritemplate", "value": SOURCE},
                                     "time": {"required": kind == "Json"}}}
    return {"specversion": "1.0-rc2", "messagegroups": {"edges": {"messages": {
        "edges.Json": definition("Json", "JsonSchema/draft-07", JSON_SCHEMA),
        "edges.Closed": definition("Closed", "JsonSchema/draft-07", CLOSED),
        "edges.Avro": definition("Avro", "Avro/1.11.1", AVRO),
        "edges.Structure": definition("Structure", "JsonStructure/1.0", STRUCTURE),
        "edges.AvroPlain": definition("AvroPlain", "Avro/1.11.1", AVRO_PLAIN),
        "edges.StructurePlain": definition("StructurePlain", "JsonStructure/1.0", STRUCTURE_PLAIN),
        "edges.Proto": definition("Proto", "Protobuf/3", PROTO),
    }}}}


def _as_stored(kind: pa.DataType) -> pa.DataType:
    """`kind` with every timestamp as the integer Parquet stores: an Avro `timestamp-millis` may be
    any long, beyond the years a Python datetime holds."""
    if pa.types.is_timestamp(kind):
        return pa.int64()
    if pa.types.is_struct(kind):
        return pa.struct([kind.field(i).with_type(_as_stored(kind.field(i).type)) for i in range(kind.num_fields)])
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_as_stored(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_as_stored(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(_as_stored(kind.key_type), _as_stored(kind.item_type))
    return kind


def _rows(path: Path) -> list[dict]:
    table = pq.read_table(path)
    return table.cast(pa.schema([f.with_type(_as_stored(f.type)) for f in table.schema])).to_pylist()


def outcome(result, warehouse: Path) -> dict:
    """What a task left: every table's rows (as sorted JSON), the quality tallies and counts."""
    rows = {}
    for table, files in result.files.items():
        rows[table] = sorted(json.dumps(row, sort_keys=True, default=repr) for f in files
                             for row in _rows(warehouse / table / f.path))
    return {"rows": rows, "tallies": result.tallies, "deadletter": result.deadletter, "written": result.rows,
            "records": result.records, "per_file": result.per_file}



def both_paths(tables, landed: Path, base: Path) -> tuple[dict, dict]:
    out = []
    for batch in (False, True):
        warehouse = base / ("batch" if batch else "per-record")
        plan = dataclasses.replace(plan_for(tables, warehouse, DAY, run="diff", ingested_at=INGESTED), compiled=batch)
        result = Classifier(plan).run("1.0", [Piece(str(landed))])
        out.append({**outcome(result, warehouse), "batched": result.batched})
    assert out[0].pop("batched") == 0
    return out[0], out[1]


@pytest.fixture(scope="module", autouse=True)
def every_group_a_batch():
    """Here a group of any size is a batch (a real task leaves groups too small to repay one to
    the per-record path, `bulk.SMALLEST_BATCH`): the draws are a few records a table."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk, "SMALLEST_BATCH", 1)
        yield


@pytest.fixture(scope="module")
def edge_tables(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edges-catalog")
    (folder / "edges.xreg.json").write_text(json.dumps(catalog()))
    tables, _ = message_tables(load_catalog([folder]), [folder])
    return {t.message.xid.rsplit("/", 1)[1]: t for t in tables}


def test_every_language_of_the_edge_catalog_has_a_table_the_compiled_path_types(edge_tables):
    from catalake.platform.runs.bulk import BulkTable
    from catalake.platform.runs.classifier import TableSpec

    plan = plan_for(list(edge_tables.values()), "/nowhere", DAY)
    eligible = {name: BulkTable(TableSpec(t, plan), INGESTED).eligible for name, t in edge_tables.items()}
    # jsonschema's own keywords, Avro's timestamp units, JSON Structure's decimals, dates and
    # string-encoded int64: record by record
    assert eligible == {"edges.Json": True, "edges.Closed": False, "edges.Avro": False, "edges.Structure": False,
                        "edges.AvroPlain": True, "edges.StructurePlain": True, "edges.Proto": True}


def _record(table, envelope: dict, payload, n: int) -> dict:
    kind = table.message.xid.rsplit("/", 1)[1]
    base = {"specversion": "1.0", "id": f"e{n}", "source": f"https://edges.example/sites/s{n % 3}", "type": kind,
            "time": "2026-11-20T10:00:00Z", "datacontenttype": "application/json"}
    record = {**base, **envelope}
    if payload is not ...:
        record["data"] = payload
    return record


@st.composite
def one_member_off(draw, table):
    """The table's kept payload with one member at its edge (or gone), or as it is."""
    kept = dict(KEPT[table.message.xid.rsplit("/", 1)[1]])
    fields = {f.metadata.get("catalake.wire", f.name): f for f in table.schema["data"].dataType.fields}
    name = draw(st.sampled_from(sorted(fields)))
    change = draw(st.sampled_from(["edge", "edge", "edge", "gone", "same"]))
    if change == "edge":
        kept[name] = draw(payloads(fields[name].dataType, fields[name].metadata))
    elif change == "gone":
        kept.pop(name, None)
    return kept


@st.composite
def landed_lines(draw, tables):
    lines = []
    for n in range(draw(st.integers(1, 30))):
        table = draw(st.sampled_from(tables))
        data = table.schema["data"]
        payload = draw(st.just(...) | payloads(data.dataType, data.metadata) | one_member_off(table))
        lines.append(json.dumps(_record(table, draw(envelopes({})), payload, n)))
    # what only a strict reading sees, and a line that is no JSON at all
    lines += draw(st.lists(st.sampled_from([
        '{"specversion":"1.0","id":"d","id":"d2","source":"https://edges.example/sites/s","type":"edges.Json","data":{}}',
        '{"specversion":"1.0","id":"b","source":"https://edges.example/sites/s","type":"edges.Proto","data":{"pages":18446744073709551616}}',
        '{"specversion":"1.0","id":"u","source":"https://edges.example/sites/s\\u003a","type":"edges.Proto","data":{}}',
        '{"specversion":"1.0","id":"x","source":"https', "", "[1, 2]", '"text"',
        # nested too deep inside a value kept as JSON text, and deeper than the decoder recurses
        '{"specversion":"1.0","id":"n","source":"https://edges.example/sites/s","type":"edges.Json","time":"2026-11-20T10:00:00Z",'
        '"data":{"name":"ab","amount":1,"state":"ok","free":{"q":' + "[" * 200 + "]" * 200 + '}}}',
        '{"specversion":"1.0","id":"m","source":"https://edges.example/sites/s","type":"edges.Proto","data":' + "[" * 3000 + "]" * 3000 + '}',
    ]), max_size=3))
    return draw(st.permutations(lines))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_records_at_every_schema_keywords_edges_decide_alike_on_both_paths(edge_tables, tmp_path_factory, data):
    tables = list(edge_tables.values())
    base = tmp_path_factory.mktemp("diff")
    landed = base / "landed.jsonl"
    landed.write_text("\n".join(data.draw(landed_lines(tables), label="lines")) + "\n")
    per_record, batch = both_paths(tables, landed, base)
    batch.pop("batched")
    assert batch == per_record


def test_the_kept_payloads_are_kept_and_decided_in_bulk(edge_tables, tmp_path):
    tables = list(edge_tables.values())
    lines = [json.dumps(_record(t, {}, KEPT[name], n)) for n, (name, t) in enumerate(sorted(edge_tables.items()))]
    (tmp_path / "kept.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths(tables, tmp_path / "kept.jsonl", tmp_path)
    assert batch.pop("batched") == 4  # Json, AvroPlain, StructurePlain, Proto
    assert batch == per_record and per_record["deadletter"] == {} and len(per_record["rows"]) == len(KEPT)


def test_a_group_too_small_for_a_batch_goes_one_by_one(edge_tables, tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, "SMALLEST_BATCH", 32)
    table = edge_tables["edges.Proto"]
    lines = [json.dumps(_record(table, {}, KEPT["edges.Proto"], n)) for n in range(30)]
    lines.append('{"specversion":"1.0","id":"d","id":"e","source":"https://edges.example/sites/s","type":"edges.Proto","data":{}}')
    (tmp_path / "few.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths([table], tmp_path / "few.jsonl", tmp_path)
    assert batch.pop("batched") == 0
    assert batch == per_record and per_record["deadletter"] == {"malformed_json": 1}


def test_an_ordinary_day_is_decided_in_bulk_with_the_same_rows(edge_tables, tmp_path):
    """The ordinary case: clean records of every eligible table, many per group, a few bad ones."""
    tables = [edge_tables["edges.Json"], edge_tables["edges.Proto"]]
    lines = []
    for n in range(3000):
        if n % 2:
            payload = {"name": f"p{n}", "pages": n, "tags": ["a", "b"], "ratio": n / 7, "done": n % 3 == 0, "part": {"size": n}}
            record = _record(tables[1], {}, payload, n)
        else:
            payload = {"name": "a" + str(n % 50)[:5], "amount": (n % 90) - 2.5 if n % 98 else 500, "state": "ok" if n % 5 else "late",
                       "tags": ["x", "y"], "inner": {"x": n % 11}, "at": "2026-11-20T10:00:00.5+01:00"}
            record = _record(tables[0], {"subject": f"s{n}"} if n % 4 else {"ext": n}, payload, n)
        lines.append(json.dumps(record))
    (tmp_path / "day.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths(tables, tmp_path / "day.jsonl", tmp_path)
    assert batch.pop("batched") > 2000  # decided in bulk, with the same outcome
    assert batch == per_record
    assert per_record["deadletter"]["schema_violation"] > 0 and sum(per_record["written"].values()) > 2000


PUBLIC = [path for path, _, _ in VALID]


# no shrinking: a failure names its catalog and records, and these catalogs are wide
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(data=st.data())
@pytest.mark.parametrize("path", PUBLIC, ids=[p.rsplit("/", 1)[1] for p in PUBLIC])
def test_the_public_catalogs_records_decide_alike_on_both_paths(shared_data, tmp_path_factory, path, data):
    catalog = load_catalog([shared_data / path])
    tables, _ = message_tables(catalog, [shared_data / path.split("/")[0]])
    if not tables:
        return
    lines = []
    for n, table in enumerate(tables * 3):
        data_type = table.schema["data"]
        payload = data.draw(payloads(data_type.dataType, data_type.metadata), label=table.message.xid)
        lines.append(json.dumps(record_for(table.message, payload, n)))
    base = tmp_path_factory.mktemp("public")
    (base / "landed.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths(tables, base / "landed.jsonl", base)
    batch.pop("batched")
    assert batch == per_record


def test_what_the_decoder_refuses_goes_to_the_referee_and_decides_alike(edge_tables, tmp_path):
    """Lines the compiled decoder does not take as they are: `1.0` for an integer (kept by the
    referee, as 1), `true` for an integer, an integer beyond the column, an undeclared extension
    attribute (kept, in `other_attributes`), a null for an optional member, a member skipped by
    an open object; each is decided as the per-record path decides it, and the clean lines
    around them stay in bulk."""
    table = edge_tables["edges.Proto"]
    kept = KEPT["edges.Proto"]
    odd = [{**kept, "pages": 1.0}, {**kept, "pages": True}, {**kept, "pages": 2 ** 40}, {**kept, "part": None},
           {**kept, "unknown": 1}, {**kept, "part": {"size": 1, "more": [1]}}]
    lines = [json.dumps(_record(table, {}, kept, n)) for n in range(40)]
    lines += [json.dumps(_record(table, {}, payload, 40 + n)) for n, payload in enumerate(odd)]
    lines.append(json.dumps(_record(table, {"traceparent": "00-ab"}, kept, 50)))
    (tmp_path / "odd.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths([table], tmp_path / "odd.jsonl", tmp_path)
    assert batch.pop("batched") >= 40
    assert batch == per_record
    assert per_record["deadletter"] == {"schema_violation": 2}  # true and 2^40 for an int32
    rows = [json.loads(r) for r in per_record["rows"]["messages/edges__proto"]]
    assert {r["data"]["pages"] for r in rows} == {1, 2147483647}
    assert [r["other_attributes"] for r in rows if r["other_attributes"]] == [[["traceparent", "00-ab"]]]


def test_held_lines_are_bounded_by_their_bytes_and_decide_alike(edge_tables, tmp_path, monkeypatch):
    """Lines wait in groups up to `HELD_BYTES` (large lines flush every group sooner): the
    batches are smaller, the outcome the same."""
    monkeypatch.setattr(bulk, "HELD_BYTES", 4000)
    table = edge_tables["edges.Proto"]
    lines = [json.dumps(_record(table, {}, {**KEPT["edges.Proto"], "name": "n" * (n % 50)}, n)) for n in range(200)]
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n")
    per_record, batch = both_paths([table], tmp_path / "big.jsonl", tmp_path)
    assert batch.pop("batched") == 200
    assert batch == per_record and sum(per_record["written"].values()) == 200
