"""Classification: landing reader, record kinds, matching rules, dead-letter reasons,
idempotent re-runs and the conservation check, on real Spark and Delta."""

import datetime as dt
import gzip
import json
import re

import pytest
from pyspark.sql import functions as F

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import template_regex
from catalake.platform.config import DEMO_DIR
from catalake.platform.landing.listing import Landed, partition_files
from catalake.platform.landing.planning import Piece, plan_tasks
from catalake.platform.landing.reading import Unsupported, read_piece
from catalake.platform.records.protocols import BINDINGS
from catalake.platform.records.record import MISSING, normalize
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.recovery import RUNS_DIR
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from support.classify import DAY, ce, classify_day, jsonl, land, land_azure
from support.paths import DEMO_CATALOG, REPO
from support.runs import no_spark

REPO_DEMO_LANDING = REPO / "src" / "catalake" / "demo" / "landing"


def write_catalog(base, document: dict):
    folder = base / "catalog"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.xreg.json").write_text(json.dumps(document))
    return folder


# -- the landing zone (landing-zone.md "Layout")

def landed_records(files) -> dict:
    """(file name, line) -> raw text of every record the files hold, as the executors read them."""
    return {(piece.path.rsplit("/", 1)[-1], line): raw for task in plan_tasks(None, files, 2) for piece in task
            for line, raw in read_piece(None, piece)}


def test_landing_layout(tmp_path):
    root = tmp_path / "landing"
    land(root, DAY, {"a.jsonl": jsonl(ce("x"), "", ce("y")), "_SUCCESS": "", ".hidden.jsonl": jsonl(ce("z")),
                     "notes.txt": "hello", "b.jsonl.gz": jsonl(ce("g1"), ce("g2")),
                     "batch.json": json.dumps([ce("b1"), ce("b2"), ce("b3")]), "one.json": json.dumps(ce("single"))})
    (root / f"dt={DAY + dt.timedelta(days=1)}").mkdir()
    land(root, DAY + dt.timedelta(days=1), {})
    files = partition_files(root, DAY)
    # every file that is not hidden is the day's: its format is read from it, and a file of no
    # format catalake reads is one record, dead-lettered as unsupported_format (never skipped)
    assert [f.name for f in files] == ["a.jsonl", "b.jsonl.gz", "batch.json", "notes.txt", "one.json"]
    records = landed_records(files)
    notes = records.pop(("notes.txt", 1))
    assert isinstance(notes, Unsupported) and "b'hello'" in notes.detail
    rows = {key: json.loads(raw)["type"] for key, raw in records.items()}
    assert rows == {("a.jsonl", 1): "x", ("a.jsonl", 3): "y", ("b.jsonl.gz", 1): "g1", ("b.jsonl.gz", 2): "g2",
                    ("batch.json", 1): "b1", ("batch.json", 2): "b2", ("batch.json", 3): "b3", ("one.json", 1): "single"}
    assert partition_files(root, dt.date(2030, 1, 1)) == []  # a missing folder is an empty partition


def test_dt_folder_is_the_same_partition(tmp_path):
    root = tmp_path / "landing"
    (root / "dt=2026-11-20").mkdir(parents=True)
    (root / "dt=2026-11-20" / "x.jsonl").write_text(jsonl(ce("x")))
    assert [f.name for f in partition_files(root, DAY)] == ["x.jsonl"]


# -- record kinds (landing-zone.md "Record kinds") and their CloudEvents bindings

RECORDS = [
    ("structured", ce("t.structured", data={"a": 1}), "cloudevents", None, {"type": "t.structured"}),
    ("kafka-binary", {"topic": "orders", "partition": 2, "offset": 7, "key": "k1", "ts": 1795169340000,
                      "headers": ["ce_specversion", "1.0", "ce_id", "9", "ce_source", "/k", "ce_type", "t.kafka", "content-type", "application/json"],
                      "payload": "{\"a\": 1}"}, "kafka", "KAFKA", {"type": "t.kafka", "datacontenttype": "application/json"}),
    ("kafka-structured", {"topic": "orders", "partition": 0, "offset": 8, "headers": {"content-type": "application/cloudevents+json"},
                          "payload": ce("t.kafka.structured", data={"a": 2})}, "kafka", "KAFKA", {"type": "t.kafka.structured"}),
    ("kafka-plain", {"topic": "orders", "partition": 0, "offset": 9, "key": None, "payload": {"a": 3}}, "kafka", "KAFKA", None),
    ("mqtt5", {"protocol": "MQTT/5.0", "topic_name": "dev/1", "qos": 1, "retain": False, "content_type": "application/json",
               "user_properties": [{"name": "specversion", "value": "1.0"}, {"name": "id", "value": "m"}, {"name": "source", "value": "/m"},
                                   {"name": "type", "value": "t.mqtt"}], "payload": {"a": 4}}, "mqtt", "MQTT/5.0", {"type": "t.mqtt"}),
    ("mqtt311-structured", {"protocol": "MQTT/3.1.1", "topic_name": "dev/2", "qos": 0, "content_type": "application/cloudevents+json",
                            "payload": ce("t.mqtt3")}, "mqtt", "MQTT/3.1.1", {"type": "t.mqtt3"}),
    ("amqp", {"protocol": "AMQP/1.0", "properties": {"message-id": "a1", "to": "queue1", "content-type": "application/json"},
              "application_properties": {"cloudEvents:specversion": "1.0", "cloudEvents:id": "a", "cloudEvents:source": "/a",
                                         "cloudEvents_type": "t.amqp"}, "body": {"a": 5}}, "amqp", "AMQP/1.0", {"type": "t.amqp"}),
    ("http", {"protocol": "HTTP", "method": "post", "path": "/hook", "query": {"x": "1"},
              "headers": [{"name": "ce-specversion", "value": "1.0"}, {"name": "Ce-Id", "value": "h"}, {"name": "ce-source", "value": "/h"},
                          {"name": "ce-type", "value": "t.http"}, {"name": "Content-Type", "value": "application/json"}],
              "body": {"a": 6}}, "http", "HTTP", {"type": "t.http", "datacontenttype": "application/json"}),
    ("nats", {"protocol": "NATS", "subject": "orders.created", "headers": {"ce-specversion": "1.0", "ce-id": "n", "ce-source": "/n", "ce-type": "t.nats"},
              "payload": {"a": 7}}, "nats", "NATS", {"type": "t.nats"}),
    ("rocketmq", {"protocol": "ROCKETMQ", "topic": "orders", "tags": "tg", "properties": {"CE_specversion": "1.0", "CE_id": "r", "CE_source": "/r",
                  "CE_type": "t.rocket", "CE_contenttype": "application/json"}, "body": {"a": 8}}, "rocketmq", "ROCKETMQ",
     {"type": "t.rocket", "datacontenttype": "application/json"}),
    ("base64", ce("t.bin", data_base64="AAEC"), "cloudevents", None, {"type": "t.bin"}),
    ("plain-value", {"hello": "world"}, "plain", None, None),  # not_an_event unless a definition takes plain values
    ("malformed", "{not json", "malformed_json", None, None),
    ("trailing-text", json.dumps(ce("t.trailing")) + " and more", "malformed_json", None, None),
    ("json-array", "[1, 2]", "not_an_event", None, None),
    ("kafka-text-payload", {"topic": "orders", "partition": 0, "offset": 10, "payload": "5"}, "kafka", "KAFKA", None),
    ("kafka-number-payload", {"topic": "orders", "partition": 0, "offset": 11, "payload": 5}, "kafka", "KAFKA", None),
]


def _normalized(record):
    """The record as the classifier sees it: (kind, Record or None)."""
    raw = record if isinstance(record, str) else json.dumps(record)
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        return "malformed_json", None
    rec = normalize(obj)
    return rec.kind, rec


def _metadata(rec, name):
    column = next(c for b in BINDINGS.values() for c in b.columns if c.name == name)
    return rec.metadata(column)


def test_record_kinds_and_bindings():
    by_name = {}
    for name, record, kind, protocol, attrs in RECORDS:
        got, rec = _normalized(record)
        assert got == kind, name
        if rec is None:
            continue
        by_name[name] = rec
        assert rec.protocol == protocol, name
        if attrs is None:
            assert rec.attrs is None, name
        else:
            assert {k: rec.attrs.get(k) for k in attrs} == attrs, name
    kafka = by_name["kafka-binary"]
    assert _metadata(kafka, "kafka_offset") == 7 and _metadata(kafka, "kafka_key") == "k1"
    assert _metadata(kafka, "kafka_timestamp") == dt.datetime(2026, 11, 20, 10, 9, tzinfo=dt.timezone.utc)
    assert kafka.data == {"a": 1}  # a protocol payload: a JSON string holding JSON is decoded once
    assert by_name["mqtt5"].fields["opt:topic_name"] == "dev/1" and _metadata(by_name["mqtt5"], "mqtt_qos") == 1
    assert by_name["http"].fields["opt:method"] == "POST" and by_name["http"].fields["opt:query.x"] == "1"
    assert by_name["amqp"].address == "queue1" and by_name["nats"].address == "orders.created"
    assert by_name["base64"].data_b64 == "AAEC" and by_name["base64"].data is MISSING
    # a payload keeps its JSON kind: the text "5" is not the number 5
    assert by_name["kafka-text-payload"].data == "5" and by_name["kafka-number-payload"].data == 5


# -- matching rules (xRegistry message spec, "Property Definitions: value", RFC 6570 level 1)

def test_uritemplate_regex_loose_and_strict():
    regex, names = template_regex("https://api/{city}/stations/{station}")
    assert names == ["city", "station"]
    assert re.fullmatch(regex, "https://api/lyon/stations/LYS-1").groups() == ("lyon", "LYS-1")
    # a placeholder takes '/' and ':' (whole paths and URLs), the value is anchored
    assert re.fullmatch(regex, "https://api/a/b:c/stations/x").groups() == ("a/b:c", "x")
    assert re.fullmatch(regex, "https://api/lyon/stations/") is None
    # ambiguous split: the earlier placeholder takes the shortest match
    regex, _ = template_regex("{a}/{b}")
    assert re.fullmatch(regex, "x/y/z").groups() == ("x", "y/z")
    strict, _ = template_regex("{a}/{b}", strict=True)
    assert re.fullmatch(strict, "x/y/z") is None and re.fullmatch(strict, "x/y%2Fz").groups() == ("x", "y%2Fz")


RULES_CATALOG = {
    "specversion": "1.0-rc2",
    "messagegroups": {
        "acme": {"messages": {
            "acme.Order": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
                "type": {"value": "acme.Order"}, "source": {"type": "uritemplate", "value": "/shops/{shop}"},
                "subject": {"type": "uritemplate", "value": "shops/{shop}/orders/{order}", "required": True},
                "priority": {"type": "integer"}}},
            "acme.Any": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "acme.Any"}}},
            "acme.Twin1": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "acme.Twin"}},
                           "dataschemaformat": "JsonSchema/draft-07",
                           "dataschema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}},
            "acme.Twin2": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "acme.Twin"}},
                           "dataschemaformat": "JsonSchema/draft-07",
                           "dataschema": {"type": "object", "required": ["b"], "properties": {"b": {"type": "string"}}}},
        }},
        "acme.kafka": {"messages": {
            "acme.kafka.Any": {"basemessage": "/messagegroups/acme/messages/acme.Any", "protocol": "KAFKA",
                               "protocoloptions": {"topic": {"value": "anything"}}},
            "acme.kafka.Plain": {"protocol": "KAFKA", "protocoloptions": {"topic": {"value": "plain"}, "key": {"value": "{region}-{id}"}}},
        }},
        "acme.bindings": {"messages": {
            # xRegistry message spec, "HTTP 1.1 / 2.0 / 3.0 protocol options": method, path, headers, query
            "acme.http.Order": {"protocol": "HTTP", "protocoloptions": {
                "method": {"value": "POST"}, "path": {"value": "/orders/{region}"},
                "headers": [{"name": "x-tenant", "value": "acme"}], "query": {"v": {"value": "2"}}}},
            # "NATS protocol options": subject
            "acme.nats.Order": {"protocol": "NATS", "protocoloptions": {"subject": {"value": "orders.{region}.created"}}},
            # "AMQP 1.0 protocol options": properties and application-properties sections
            "acme.amqp.Order": {"protocol": "AMQP/1.0", "protocoloptions": {
                "properties": {"subject": {"value": "order-created"}},
                "application_properties": {"tenant": {"value": "acme"}}}},
        }},
    },
}

CASES = [
    # (record, expected status, winner message id or None, detail fragment)
    (ce("acme.Order", "/shops/s1", subject="shops/s1/orders/o9"), "matched", "acme.Order", None),
    (ce("acme.order", "/shops/s1", subject="shops/s1/orders/o9"), "no_match", None, None),  # value: case-sensitive
    (ce("acme.Order", "/shops/s1"), "missing_required_attribute", None, "subject"),  # required
    (ce("acme.Order", "/shops/s1", subject="shops/s2/orders/o9"), "no_match", None, None),  # same placeholder, two values
    (ce("acme.Order", "/stores/s1", subject="shops/s1/orders/o9"), "no_match", None, None),  # uritemplate anchored
    (ce("acme.Order", "/shops/s1", subject="shops/s1/orders/o9", priority="high"), "no_match", None, None),  # declared type integer
    (ce("acme.Order", "/shops/s1", subject="shops/s1/orders/o9", priority="3"), "matched", "acme.Order", None),
    (ce("acme.Any"), "matched", "acme.Any", None),  # envelope only: plain CloudEvents JSON
    ({"topic": "anything", "partition": 0, "offset": 1, "headers": ["ce_specversion", "1.0", "ce_id", "1", "ce_source", "/k", "ce_type", "acme.Any"],
      "payload": "{}"}, "matched", "acme.kafka.Any", None),  # most derived of two candidates wins
    ({"topic": "other", "partition": 0, "offset": 2, "headers": ["ce_specversion", "1.0", "ce_id", "1", "ce_source", "/k", "ce_type", "acme.Any"],
      "payload": "{}"}, "matched", "acme.Any", None),  # envelope-only definition applies to every binding
    ({"topic": "plain", "partition": 0, "offset": 3, "key": "eu-42", "payload": {"x": 1}}, "matched", "acme.kafka.Plain", None),  # protocol only
    ({"topic": "plain", "partition": 0, "offset": 4, "key": "nodash", "payload": {"x": 1}}, "no_match", None, None),
    (ce("acme.Twin", data={"a": 1}), "matched", "acme.Twin1", None),  # ambiguous -> the data schema decides
    (ce("acme.Twin", data={"c": 1}), "schema_violation", None, "none of 2 candidates accepts the payload: "),  # not ambiguous
    (ce("acme.Any", specversion="0.3"), "unsupported_specversion", None, "0.3"),
    ({"specversion": "1.0", "type": "acme.Any", "source": "/x"}, "missing_required_attribute", None, "id"),
    (ce("acme.Any", time="yesterday"), "invalid_attribute", None, "time 'yesterday'"),  # `time` is RFC 3339 or invalid
    (ce("acme.Any", time="2026-11-20T10:00:00+01:00"), "matched", "acme.Any", None),
    ({"protocol": "HTTP", "method": "POST", "path": "/orders/eu", "query": {"v": "2"},
      "headers": [{"name": "X-Tenant", "value": "acme"}], "body": {"n": 1}}, "matched", "acme.http.Order", None),
    ({"protocol": "HTTP", "method": "PUT", "path": "/orders/eu", "query": {"v": "2"},
      "headers": [{"name": "x-tenant", "value": "acme"}], "body": {}}, "no_match", None, None),  # method
    ({"protocol": "HTTP", "method": "POST", "path": "/orders/eu", "query": {"v": "1"},
      "headers": [{"name": "x-tenant", "value": "acme"}], "body": {}}, "no_match", None, None),  # query value
    ({"protocol": "HTTP", "method": "POST", "path": "/orders/eu", "query": {"v": "2"}, "body": {}}, "no_match", None, None),  # header
    ({"protocol": "NATS", "subject": "orders.eu.created", "payload": {"n": 1}}, "matched", "acme.nats.Order", None),
    ({"protocol": "NATS", "subject": "orders.eu.deleted", "payload": {}}, "no_match", None, None),
    ({"protocol": "AMQP/1.0", "properties": {"subject": "order-created", "message-id": "m1"},
      "application_properties": {"tenant": "acme"}, "body": {"n": 1}}, "matched", "acme.amqp.Order", None),
    ({"protocol": "AMQP/1.0", "properties": {"subject": "order-created"},
      "application_properties": {"tenant": "other"}, "body": {}}, "no_match", None, None),
    # a protocol definition takes only records of its protocol: the NATS subject over HTTP is no match
    ({"protocol": "HTTP", "method": "POST", "path": "orders.eu.created", "body": {}}, "no_match", None, None),
]


@pytest.fixture(scope="module")
def rules_run(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("rules")
    root = land(base / "landing", DAY, {"cases.jsonl": jsonl(*[c[0] for c in CASES])})
    store, tables, warnings, result = classify_day(spark, base, [write_catalog(base, RULES_CATALOG)], root)
    assert not warnings
    return store, tables, result


def test_matching_rules(rules_run):
    store, tables, result = rules_run
    table_of = {t.name: t.message.message_id for t in tables}
    where = {}
    for t in tables:
        for row in store.read(t.name).select("source_line").collect():
            where[row.source_line] = ("matched", table_of[t.name], None)
    for row in store.read(DEADLETTER_TABLE).collect():
        where[row.source_line] = (row.reason, None, row.detail)
    for line, (_, status, message, fragment) in enumerate(CASES, start=1):
        got = where[line]
        assert got[0] == status, (line, got)
        assert got[1] == message, (line, got)
        if fragment:
            assert fragment in got[2], (line, got)


def test_placeholders_and_protocol_metadata_reach_the_table(rules_run):
    store, _, _ = rules_run
    http = store.read("messages/acme_bindings__acme_http_order").first()
    assert (http.region, http.http_method, http.http_query, http.http_headers) == ("eu", "POST", {"v": "2"}, {"x-tenant": "acme"})
    nats = store.read("messages/acme_bindings__acme_nats_order").first()
    assert (nats.region, nats.nats_subject) == ("eu", "orders.eu.created")
    amqp = store.read("messages/acme_bindings__acme_amqp_order").first()
    assert (amqp.amqp_subject, amqp.amqp_message_id, amqp.amqp_application_properties) == ("order-created", "m1", {"tenant": "acme"})
    order = store.read("messages/acme__order").where("priority = 3").first()
    assert (order.shop, order.order) == ("s1", "o9")
    plain = store.read("messages/acme_kafka__plain").first()
    assert (plain.region, plain.id, plain.kafka_topic, plain.kafka_offset) == ("eu", "42", "plain", 3)
    assert json.loads(plain.data) == {"x": 1}  # no data schema: the payload as JSON text


# -- the demo partition: every record in exactly one table, re-runs identical

def _snapshot(store, tables):
    out = {}
    for name in [t.name for t in tables] + [DEADLETTER_TABLE]:
        df = store.read(name).drop("ingested_at")
        out[name] = sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True) for r in df.collect())
    return out


def test_demo_partition_conservation_and_idempotent_rerun(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    landing = DEMO_DIR / "landing"
    first = classify_partition(spark, store, tables, landing, DAY)
    # nothing but the tables in the warehouse (the catalog's too, empty: no catalog job made it),
    # and the (empty) folder of runs in progress
    assert sorted(p.name for p in (tmp_path / "warehouse").iterdir()) == ["_catalake", "catalog", "deadletter", "messages"]
    assert not list((tmp_path / "warehouse" / RUNS_DIR).iterdir())
    assert first.records == 59
    assert first.deadletter == {"malformed_json": 1, "no_match": 1, "schema_violation": 1}
    assert first.tables["/messagegroups/bikeshare.docks.mqtt/messages/bikeshare.docks.mqtt.DockStatus"] == 15
    assert first.tables["/messagegroups/bikeshare.rides.kafka/messages/bikeshare.rides.kafka.RideStarted"] == 6
    assert sum(first.tables.values()) + sum(first.deadletter.values()) == 59
    ok, counts = conservation(store, tables, DAY, first.records)
    assert ok and counts["rows_stored"] == 59
    # the counts the commits left loaded are the logs' counts
    assert conservation(store, tables, DAY, first.records, first.stored) == (ok, counts)
    assert set(first.stored) == set(first.written)
    violation = store.read(DEADLETTER_TABLE).where("reason = 'schema_violation'").first()
    assert violation.detail == "data.distance_m: -5 is less than the minimum of 0"
    assert violation.source_file.endswith("rides-http.jsonl") and violation.candidates == [
        "/messagegroups/bikeshare.rides/messages/bikeshare.rides.RideEnded"]
    dock = store.read("messages/bikeshare_docks_mqtt__dockstatus").orderBy("source_line").first()
    assert dock.data.reported_at == dock.time  # Avro timestamp-millis in a JSON payload
    assert (dock.city, dock.mqtt_qos, dock.firmware) == ("amsterdam", 1, "4.2.1")

    before = _snapshot(store, tables)
    again = classify_partition(spark, store, tables, landing, DAY)
    assert again.as_json() == first.as_json()
    assert _snapshot(store, tables) == before

    # a lost record: the conservation check fails
    name = "messages/bikeshare_payments__paymentcaptured"
    store.overwrite_partition(name, store.read(name).where(F.col("source_line") != 1), "event_date", DAY)
    ok, counts = conservation(store, tables, DAY, first.records)
    assert not ok and counts["rows_stored"] == 58


def test_a_small_day_in_local_processes_writes_what_the_spark_job_writes(spark, tmp_path):
    """CATALAKE_LOCAL_TASK_BYTES: the same tasks in local Python processes, Spark never asked
    for, give the same tables, dead letters, counts and quality tallies as the Spark job."""
    from catalake.platform.warehouse.store import DeltaStore

    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    landing = DEMO_DIR / "landing"
    results, snapshots = [], []
    for mode in ("spark", "local"):
        store = DeltaStore(spark, tmp_path / mode)
        sync_message_tables(store, tables)

        result = classify_partition(spark if mode == "spark" else no_spark, store, tables, landing, DAY,
                                    local_bytes=0 if mode == "spark" else 1 << 30)
        assert conservation(store, tables, DAY, result.records, result.stored)[0]
        summary = result.as_json()
        assert summary.pop("engine") == mode
        results.append((summary, {n: (q.results, q.types, q.rejected) for n, q in result.quality.items()}))
        snapshots.append({n: [re.sub(r'"source_file": "[^"]*/', '"source_file": "', r) for r in rows]
                          for n, rows in _snapshot(store, tables).items()})
    assert results[0] == results[1] and results[0][0]["records"] == 59
    assert snapshots[0] == snapshots[1]


def test_a_day_without_landed_files_is_an_empty_partition(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    empty_day = dt.date(2030, 1, 1)
    result = classify_partition(spark, store, tables, DEMO_DIR / "landing", empty_day)
    assert (result.records, result.tables, result.deadletter) == (0, {}, {})
    assert conservation(store, tables, empty_day, 0) == (True, {"records_read": 0, "rows_stored": 0, "per_table": {}})
    assert not [p for p in (tmp_path / "warehouse").iterdir() if p.name.startswith(".")]


def test_real_azure_events_classify_as_their_catalog_says(spark, tmp_path, shared_data):
    landing, catalog_file = land_azure(shared_data, tmp_path)
    store, _, warnings, result = classify_day(spark, tmp_path, [catalog_file], landing)
    assert len(warnings) == 5  # the sample's schemas are external URLs only: payloads kept as JSON text
    got = {xid.rsplit("/", 1)[-1]: n for xid, n in result.tables.items() if n}
    assert got == {"Microsoft.Storage.BlobCreated": 1, "Microsoft.Storage.BlobDeleted": 1}, result.deadletter
    created = store.read("messages/microsoft_storage__blobcreated").first()
    assert json.loads(created.data)["api"] == "PutBlob"
    assert "operationId" in created.other_attributes  # undeclared extension attributes are kept


# -- more real events: CloudEvents conformance vectors (over HTTP) and GitHub webhooks

def _conformance_records(path) -> list[dict]:
    """The conformance YAML events as landed records: binary mode -> an HTTP record with `ce-`
    headers (the HTTP binding), structured mode -> an HTTP record whose body is the event, no
    mode -> a CloudEvents JSON line."""
    import yaml

    records = []
    for doc in yaml.safe_load_all(path.read_text()):
        attrs = {k: str(v) for k, v in doc["ContextAttributes"].items() if k != "Extensions"}
        extensions = {k: str(v) for k, v in (doc["ContextAttributes"].get("Extensions") or {}).items()}
        data = doc.get("Data")
        mode = doc.get("Mode")
        if mode == "binary":
            headers = [{"name": f"ce-{k}", "value": v} for k, v in {**attrs, **extensions}.items()]
            headers.append({"name": "content-type", "value": "application/json"})
            records.append({"protocol": "HTTP", "method": "POST", "path": "/", "headers": headers, "body": data})
        elif mode == "structured":
            event = {**attrs, **extensions, "datacontenttype": "application/json", "data": json.loads(data)}
            records.append({"protocol": "HTTP", "method": "POST", "path": "/", "body": json.dumps(event),
                            "headers": [{"name": "content-type", "value": "application/cloudevents+json"}]})
        else:
            records.append({**attrs, "data": data})
    return records


CONFORMANCE_CATALOG = {
    "specversion": "1.0-rc2",
    "messagegroups": {"conformance": {"messages": {
        "com.example.someevent": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
            "type": {"value": "com.example.someevent"}, "source": {"type": "uritemplate", "value": "/mycontext/{context}"},
            "comexampleextension1": {"type": "string", "required": True}},
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": {"type": "object", "required": ["world"], "properties": {"world": {"type": "string"}}}},
        "io.cloudevents.minimum": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "io.cloudevents.minimum"}}},
    }}},
}


def test_cloudevents_conformance_events_classify(spark, tmp_path, shared_data):
    yaml_dir = shared_data / "cloudevents-conformance/yaml"
    records = _conformance_records(yaml_dir / "v1.yaml") + _conformance_records(yaml_dir / "v1.0/v1_minimum.yaml")
    old = _conformance_records(yaml_dir / "v0.3/v03_minimum.yaml")
    root = land(tmp_path / "landing", DAY, {"v1.jsonl": jsonl(*records), "v03.jsonl": jsonl(*old)})
    store, _, _, result = classify_day(spark, tmp_path, [write_catalog(tmp_path, CONFORMANCE_CATALOG)], root)
    assert result.tables == {"/messagegroups/conformance/messages/com.example.someevent": 2,
                             "/messagegroups/conformance/messages/io.cloudevents.minimum": 6}
    assert result.deadletter == {"unsupported_specversion": len(old)}
    some = store.read("messages/conformance__com_example_someevent").orderBy("protocol").collect()
    assert {(r.protocol, r.context, r.comexampleextension1, r.data.world) for r in some} == {
        ("HTTP", "subcontext", "value", "hello")}
    assert all(json.loads(r.other_attributes["comexampleextension2"]) == {"othervalue": 5} for r in some)
    texts = {r.id: r.datacontenttype for r in store.read("messages/conformance__io_cloudevents_minimum").collect()}
    assert texts["conformance-0001"] == "text/plain; charset=us-ascii" and len(texts) == 6


GITHUB_CATALOG = {
    "specversion": "1.0-rc2",
    "messagegroups": {"com.github": {"messages": {
        f"com.github.{name}": {
            "envelope": "CloudEvents/1.0",
            "envelopemetadata": {"type": {"value": f"com.github.{name}"},
                                 "source": {"type": "uritemplate", "value": "https://github.com/{owner}/{repo}"}},
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": {"type": "object", "required": required, "properties": {
                "action": {"type": "string"}, "sender": {"type": "object", "required": ["login"],
                                                         "properties": {"login": {"type": "string"}}}}},
        }
        for name, required in [("issues.edited", ["action", "issue", "sender"]), ("pull_request.ready_for_review", ["action", "pull_request"]),
                               ("release.published", ["action", "release"]), ("star.created", ["action", "starred_at"])]
    }}},
}


def test_github_webhooks_as_cloudevents_classify(spark, tmp_path, shared_data):
    """octokit's real webhook payloads, wrapped per the CloudEvents GitHub adapter
    (`com.github.<event>.<action>`, source the repository URL)."""
    events = []
    for path in sorted((shared_data / "octokit-webhooks/payload-examples/api.github.com").rglob("*.payload.json")):
        payload = json.loads(path.read_text())
        event = path.parent.name + (f".{payload['action']}" if "action" in payload else "")
        repo = (payload.get("repository") or {}).get("full_name", "github/none")
        events.append(ce(f"com.github.{event}", f"https://github.com/{repo}", id=path.name, data=payload))
    assert len(events) == 20
    root = land(tmp_path / "landing", DAY, {"github.jsonl": jsonl(*events)})
    store, _, _, result = classify_day(spark, tmp_path, [write_catalog(tmp_path, GITHUB_CATALOG)], root)
    matched = {xid.rsplit("/", 1)[-1]: n for xid, n in result.tables.items() if n}
    wanted = {"com.github.issues.edited", "com.github.pull_request.ready_for_review", "com.github.release.published", "com.github.star.created"}
    landed = {e["type"] for e in events}
    assert matched == {t: sum(1 for e in events if e["type"] == t) for t in wanted & landed}
    assert result.deadletter == {"no_match": 20 - sum(matched.values())}
    release = store.read("messages/com_github__release_published").first()
    assert release.source == f"https://github.com/{release.owner}/{release.repo}"
    assert release.data.action == "published" and release.data.sender.login


def test_large_json_lines_files_are_read_in_splits_with_exact_line_numbers(tmp_path):
    """landing-zone.md: `source_line` is the record's line in its file, however the day is cut into tasks."""
    lines = []
    for i in range(1, 401):
        lines.append("" if i % 37 == 0 else json.dumps({"n": i, "pad": "x" * (i % 50)}))
    path = tmp_path / "big.jsonl"
    path.write_bytes(("\r\n".join(lines[:200]) + "\n" + "\n".join(lines[200:]) + "\n").encode())
    other = tmp_path / "small.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"n": 1}\n\n{"n": 3}\n'))
    tasks = plan_tasks(None, [Landed(str(p), p.stat().st_size) for p in (path, other)], 2, target=2048)  # a dozen pieces of big.jsonl
    pieces = [p for task in tasks for p in task]
    assert len([p for p in pieces if p.path == str(path)]) > 5
    got = {}
    for piece in pieces:
        for line, raw in read_piece(None, piece):
            key = (piece.path.rsplit("/", 1)[1], line)
            assert key not in got  # every line once
            got[key] = json.loads(raw)["n"]
    expected = {("big.jsonl", i): i for i in range(1, 401) if i % 37}
    expected.update({("small.jsonl.gz", 1): 1, ("small.jsonl.gz", 3): 3})
    assert got == expected  # every line once, at its number; blank lines skipped, CRLF stripped
    assert [p for p in pieces if p.path == str(other)] == [Piece(str(other), size=other.stat().st_size)]  # gzip: one piece


def test_the_reported_delta_version_holds_the_partitions_rows(spark, tmp_path):
    """Issue 29.2: time travel to the version a partition run reports reads that run's rows."""
    from deltalake import DeltaTable

    landing = REPO_DEMO_LANDING
    store, tables, _, result = classify_day(spark, tmp_path, [DEMO_CATALOG], landing)
    fed = [t for t in tables if result.tables.get(t.message.xid)]
    assert fed
    for table in fed:
        version = result.versions[table.name]
        assert version == store.version(table.name) and version >= 1  # 0 is the CREATE TABLE
        rows = DeltaTable(store.path(table.name), version=version).to_pyarrow_table().num_rows
        assert rows == result.tables[table.message.xid]
        before = DeltaTable(store.path(table.name), version=version - 1).to_pyarrow_table().num_rows
        assert before == 0
