"""Files as the tools that land them write them (README "Tools whose files catalake reads"): Kafka
Connect sinks' JSON files (one record a line, named `.json`), Amazon Data Firehose's JSON records
back to back, RFC 7464 sequences, plain values of a sink or an application (Avro, Parquet, JSON),
Event Hubs Capture's metadata, and the file names of Capture's custom naming, Lenses' and Aiven's
sinks. Each file is written by the library the tool uses (fastavro, pyarrow, gzip), with its
schema and its naming, and every landed record is compared with the row it became."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalake.demo.generate import day_records
from catalake.demo.writers import CAPTURE_SCHEMA, write_avro
from catalake.platform.catalog import load_catalog
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables
from support.landed import day_rows, run_landing
from support.paths import DEMO_CATALOG

DAY = dt.date(2026, 11, 21)
ENQUEUED = 1795242616123  # 2026-11-21 06:30:16.123 UTC, in epoch milliseconds


@pytest.fixture(scope="module")
def demo_tables():
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    return catalog, tables


def catalog_of(folder: Path, document: dict) -> tuple:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "catalog.xreg.json").write_text(json.dumps(document))
    catalog = load_catalog([folder])
    tables, _ = message_tables(catalog, [folder])
    return catalog, tables


def demo_events(count: int) -> list[dict]:
    """`count` structured CloudEvents of the demo's day, every one of a definition."""
    events = [r for r in day_records(DAY, 120)["rides-http.jsonl"] if isinstance(r, dict)]
    assert len(events) >= count
    return events[:count]


def same_data(row: dict, data: dict) -> bool:
    """A row's typed `data` holds the event's data (timestamps as the instants their text names)."""
    for key, value in data.items():
        got = row[key]
        if isinstance(got, dt.datetime):
            got, value = got.replace(tzinfo=dt.timezone.utc), dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if got != value:
            return False
    return True


def by_id(store, tables) -> dict[str, dict]:
    """Every row of the message tables by event id (each id once)."""
    out: dict[str, dict] = {}
    for t in tables:
        for row in day_rows(store, t.name, DAY):
            assert row["id"] not in out, row["id"]
            out[row["id"]] = row
    return out


# -- JSON files that are not one JSON document

def test_a_connect_sink_json_file_is_one_record_a_line(tmp_path, demo_tables):
    """Kafka Connect's S3 sink with JsonFormat: 200 values, one a line, in `<topic>+<partition>+
    <startOffset>.json`: 200 rows, each its line, the Kafka offset its place; no dead letter."""
    events = demo_events(200)
    folder = tmp_path / "landing" / "topics" / "rides" / "year=2026" / "month=11" / "day=21" / "hour=06"
    folder.mkdir(parents=True)
    (folder / "rides+3+0000000500.json").write_text("".join(json.dumps(e) + "\n" for e in events))
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", "connect", "sink", DAY)
    assert result.records == 200 and result.deadletter == {} and sum(result.tables.values()) == 200
    rows = by_id(store, demo_tables[1])
    for line, event in enumerate(events, start=1):
        row = rows[event["id"]]
        assert (row["source_line"], row["type"], row["source"]) == (line, event["type"], event["source"])
        assert same_data(row["data"], event["data"])
        metadata = dict(row["protocol_metadata"])
        assert row["protocol"] == "KAFKA" and (metadata["topic"], metadata["partition"], metadata["offset"]) == \
            ("rides", "3", str(500 + line - 1))


@pytest.mark.parametrize("layout, name, separator", [
    # Firehose: no separator at all; its objects have no extension unless one is set, `.gz` when compressed
    ("firehose", "rides-1-2026-11-21-06-00-00-0f1e", b""),
    ("firehose", "rides-1-2026-11-21-06-05-00-9a2b.gz", b""),
    ("firehose", "rides-1-2026-11-21-06-10-00-77c3.json", b""),
    ("rfc7464", "rides.json-seq", b"\n"),  # a record separator before each value
    ("pretty", "rides.json", b"\n"),  # `jq .` output: values over several lines each
])
def test_json_values_back_to_back_are_one_record_each(tmp_path, demo_tables, layout, name, separator):
    events = demo_events(40)
    if layout == "pretty":
        text = b"\n".join(json.dumps(e, indent=2).encode() for e in events)
    elif layout == "rfc7464":
        text = b"".join(b"\x1e" + json.dumps(e).encode() + separator for e in events)
    else:
        text = b"".join(json.dumps(e, separators=(",", ":")).encode() for e in events)
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    (day / name).write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", "day", layout, DAY)
    assert result.records == 40 and result.deadletter == {}
    rows = by_id(store, demo_tables[1])
    assert [rows[e["id"]]["source_line"] for e in events] == list(range(1, 41))  # each value's place in the file
    assert all(rows[e["id"]]["source_file"] == f"{DAY}/{name}" for e in events)


def test_one_broken_record_is_one_dead_letter_and_the_rest_is_stored(tmp_path, demo_tables):
    """A broken line of a sink's `.json` file (gzip-compressed too) and a broken value among
    values back to back: one dead letter each, holding that record only."""
    events = demo_events(30)
    lines = [json.dumps(e) for e in events]
    broken = lines[9][: len(lines[9]) // 2]  # a record cut in two
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    (day / "sink.json").write_text("\n".join(lines[:9] + [broken] + lines[10:20]) + "\n")
    (day / "sink2.json.gz").write_bytes(gzip.compress(("\n".join([broken] + lines[20:25]) + "\n").encode()))
    (day / "firehose.json").write_text("".join(lines[25:27]) + broken + "".join(lines[27:30]))
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", "day", "broken", DAY)
    assert result.records == 30 + 2 and result.deadletter == {"malformed_json": 3}
    dead = sorted((r["source_file"].rsplit("/", 1)[-1], r["source_line"], r["raw"]) for r in day_rows(store, DEADLETTER_TABLE, DAY))
    # Firehose's broken value ends where the next whole value starts: the record itself, nothing more
    assert dead == [("firehose.json", 3, broken), ("sink.json", 10, broken), ("sink2.json.gz", 1, broken)]
    rows = by_id(store, demo_tables[1])
    assert set(rows) == {e["id"] for i, e in enumerate(events) if i != 9}
    assert [rows[e["id"]]["source_line"] for e in events[25:]] == [1, 2, 4, 5, 6]


# -- plain values: definitions without envelope and protocol

ORDER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
         "required": ["order_id", "amount"],
         "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}, "note": {"type": "string"}}}
REFUND = {"type": "record", "name": "Refund", "namespace": "shop", "fields": [
    {"name": "refund_id", "type": "string"}, {"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"}]}
PLAIN_CATALOG = {"messagegroups": {"shop": {"messages": {
    "Order": {"dataschemaformat": "JsonSchema/draft-07", "dataschema": ORDER},
    "Refund": {"dataschemaformat": "Avro/1.11.1", "dataschema": REFUND},
}}}}


def test_plain_avro_json_and_parquet_values_are_rows_of_the_definition_without_envelope(tmp_path):
    """An application's orders as plain JSON lines, a sink's Avro records and a Parquet export,
    under the day layout: each is a row of the definition whose schema takes it (two definitions
    without envelope and protocol, told apart by their schemas as any candidates are); a value
    neither accepts is a schema_violation naming each one's first violation, never ambiguous."""
    catalog = catalog_of(tmp_path / "catalog", PLAIN_CATALOG)
    day = tmp_path / "landing" / DAY.isoformat()
    orders = [{"order_id": f"O-{i}", "amount": 10.5 + i, "note": "gift" if i % 2 else None} for i in range(6)]
    refunds = [{"refund_id": f"F-{i}", "order_id": f"O-{i}", "amount": 1.25 * i} for i in range(4)]
    day.mkdir(parents=True)
    (day / "orders").write_text("".join(json.dumps({k: v for k, v in o.items() if v is not None}) + "\n"
                                        for o in orders[:2]))  # an application's log, no extension
    order_avro = {"type": "record", "name": "Order", "fields": [
        {"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None}]}
    write_avro([o for o in orders[2:4]], order_avro, day / "orders.avro")
    pq.write_table(pa.Table.from_pylist(orders[4:]), day / "orders.parquet")
    write_avro(refunds, REFUND, day / "refunds.avro")
    # an older producer's order, its field renamed: no definition takes it
    (day / "old.jsonl").write_text(json.dumps({"order_ref": "O-9", "amount": 3}) + "\n")

    result, store = run_landing(tmp_path, catalog, tmp_path / "landing", "day", "plain", DAY)
    assert result.records == 11 and result.deadletter == {"schema_violation": 1}
    got = sorted((r["data"]["order_id"], r["data"]["amount"], r["data"]["note"], r["source_file"].rsplit("/", 1)[-1],
                  r["source_line"]) for r in day_rows(store, "messages/shop__order", DAY))
    files = ["orders"] * 2 + ["orders.avro"] * 2 + ["orders.parquet"] * 2
    assert got == [(o["order_id"], o["amount"], o["note"], f, (i % 2) + 1) for i, (o, f) in enumerate(zip(orders, files))]
    refunded = sorted((r["data"]["refund_id"], r["data"]["order_id"], r["data"]["amount"], r["source_line"])
                      for r in day_rows(store, "messages/shop__refund", DAY))
    assert refunded == [(f["refund_id"], f["order_id"], f["amount"], i + 1) for i, f in enumerate(refunds)]
    dead, = day_rows(store, DEADLETTER_TABLE, DAY)
    assert dead["reason"] == "schema_violation" and dead["record_kind"] == "plain"
    assert sorted(dead["candidates"]) == ["/messagegroups/shop/messages/Order", "/messagegroups/shop/messages/Refund"]
    assert "none of 2 candidates accepts the payload" in dead["detail"]
    assert "messages/Order: " in dead["detail"] and "messages/Refund: " in dead["detail"]


def test_a_plain_value_is_not_an_event_while_no_definition_takes_plain_values(tmp_path, demo_tables):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    (day / "orders.jsonl").write_text('{"order_id": "O-1", "amount": 1}\n')
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", "day", "none", DAY)
    dead, = day_rows(store, DEADLETTER_TABLE, DAY)
    assert result.deadletter == {"not_an_event": 1} and dead["record_kind"] == "plain"
    assert "no definition without envelope and protocol" in dead["detail"]


# -- Event Hubs Capture's metadata

AMQP_CATALOG = {"messagegroups": {"meters": {"messages": {"Reading": {
    "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "meters.Reading"}},
    "protocol": "AMQP/1.0", "dataschemaformat": "JsonSchema/draft-07",
    "dataschema": {"type": "object", "properties": {"kwh": {"type": "number"}}, "required": ["kwh"]}}}}}}


def capture_event(n: int, system: dict) -> dict:
    """A binary-mode CloudEvent as Event Hubs Capture writes it (its `EventData` record)."""
    properties = {"cloudEvents_specversion": "1.0", "cloudEvents_id": f"r-{n}", "cloudEvents_source": "/meters/7",
                  "cloudEvents_type": "meters.Reading"}
    return {"SequenceNumber": 1000 + n, "Offset": str(8192 + 512 * n), "EnqueuedTimeUtc": "11/21/2026 6:30:16 AM",
            "SystemProperties": {"content-type": "application/json", **system}, "Properties": properties,
            "Body": json.dumps({"kwh": n / 2}).encode()}


def test_capture_metadata_is_typed_from_the_system_properties_first(tmp_path):
    """The enqueued time is a UTC timestamp equal to the system property (milliseconds kept),
    the sequence number and offset integers; Capture's own fields fill in what a record lacks."""
    catalog = catalog_of(tmp_path / "catalog", AMQP_CATALOG)
    folder = tmp_path / "landing" / "ns" / "meters" / "0" / "2026" / "11" / "21" / "06" / "30"
    system = {"x-opt-enqueued-time": ENQUEUED, "x-opt-sequence-number": 1000, "x-opt-offset": "8192"}
    write_avro([capture_event(0, system), capture_event(1, {})], CAPTURE_SCHEMA, folder / "16.avro")
    result, store = run_landing(tmp_path, catalog, tmp_path / "landing", "capture", "capture", DAY)
    assert result.deadletter == {}
    first, second = sorted(day_rows(store, "messages/meters__reading", DAY), key=lambda r: r["id"])
    enqueued = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ENQUEUED)
    assert enqueued == dt.datetime(2026, 11, 21, 6, 30, 16, 123000, tzinfo=dt.timezone.utc)
    assert first["amqp_enqueued_time"].replace(tzinfo=dt.timezone.utc) == enqueued
    assert (first["amqp_sequence_number"], first["amqp_offset"]) == (1000, 8192)
    assert dict(first["amqp_message_annotations"])["x-opt-enqueued-time"] == str(ENQUEUED)  # not the locale text
    # no system properties: Capture's fields, its time read as the UTC it is (to the second)
    assert second["amqp_enqueued_time"].replace(tzinfo=dt.timezone.utc) == dt.datetime(2026, 11, 21, 6, 30, 16,
                                                                                          tzinfo=dt.timezone.utc)
    assert (second["amqp_sequence_number"], second["amqp_offset"]) == (1001, 8704)


# -- file names: Capture's custom naming, Lenses, Aiven

def test_capture_named_with_the_date_in_the_file_name(tmp_path, demo_tables):
    """Capture's archive name format `{Namespace}/{EventHub}/p{PartitionId}--{Year}-{Month}-{Day}
    --{Hour}-{Minute}-{Second}`: one folder of every day; the day and partition from each name."""
    from catalake.demo.writers import capture_records

    events = demo_events(12)
    folder = tmp_path / "landing" / "bikeshare-ns" / "rides"
    write_avro(capture_records(events[:5], True), CAPTURE_SCHEMA, folder / "p0--2026-11-21--06-00-00.avro")
    write_avro(capture_records(events[5:9], True), CAPTURE_SCHEMA, folder / "p1--2026-11-21--23-59-00.avro")
    write_avro(capture_records(events[9:], True), CAPTURE_SCHEMA, folder / "p0--2026-11-22--00-00-00.avro")
    layout = "{namespace}/{eventhub}/p{partition}--{yyyy}-{mm}-{dd}--*"
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", layout, "capture-named", DAY)
    assert result.records == 9 and result.deadletter == {}
    rows = by_id(store, demo_tables[1])
    assert set(rows) == {e["id"] for e in events[:9]}
    for i, event in enumerate(events[:9]):
        fields = dict(rows[event["id"]]["source_fields"])
        assert fields == {"namespace": "bikeshare-ns", "eventhub": "rides", "partition": "0" if i < 5 else "1"}
        assert rows[event["id"]]["protocol"] == "AMQP/1.0"


@pytest.mark.parametrize("tool, layout, paths", [
    # Lenses' S3 sink: <prefix>/<topic>/<partition>/<offset>.<ext>, the prefix dated
    ("lenses", "events/{date}/{topic}/{partition}/{offset}",
     ["events/dt=2026-11-21/rides/0/000000000120.json", "events/dt=2026-11-21/rides/4/000000000007.json",
      "events/dt=2026-11-22/rides/0/000000000130.json"]),
    # Aiven's S3 sink: <prefix><topic>-<partition>-<startOffset>.<ext>, the prefix {{utc_date}}/
    ("aiven", "{date}/{topic}-{partition}-{offset}",
     ["2026-11-21/bike.rides-0-0000000120.jsonl", "2026-11-21/bike.rides-4-0000000007.jsonl.gz",
      "2026-11-22/bike.rides-0-0000000130.jsonl"]),
])
def test_sink_file_names_make_the_values_kafka_records(tmp_path, demo_tables, tool, layout, paths):
    """The topic, partition and first offset a sink writes into the file name make each value the
    Kafka record it was (offset = first + place - 1); the other day's file is not read."""
    events = demo_events(14)
    chunks = [events[:6], events[6:10], events[10:]]
    for path, chunk in zip(paths, chunks):
        target = tmp_path / "landing" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        # Aiven's jsonl output: each record an object of its output fields, `value` by default
        text = "".join(json.dumps({"value": e} if tool == "aiven" else e) + "\n" for e in chunk).encode()
        target.write_bytes(gzip.compress(text) if path.endswith(".gz") else text)
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", layout, tool, DAY)
    assert result.records == 10 and result.deadletter == {}
    rows = by_id(store, demo_tables[1])
    topic = "rides" if tool == "lenses" else "bike.rides"
    for (partition, first), chunk in zip(((0, 120), (4, 7)), chunks):
        for place, event in enumerate(chunk, start=1):
            metadata = dict(rows[event["id"]]["protocol_metadata"])
            assert (metadata["topic"], metadata["partition"], metadata["offset"]) == (topic, str(partition), str(first + place - 1))
            assert rows[event["id"]]["source_line"] == place
    assert not {e["id"] for e in chunks[2]} & set(rows)


def test_a_large_sink_json_file_is_cut_at_line_ends_and_firehose_values_are_read_whole(tmp_path):
    """A sink's `.json` file of JSON lines larger than a task's share is cut into pieces like any
    JSON lines file (each line once, its number kept); values back to back, or a batch on one
    line, cannot be cut: one piece."""
    from catalake.platform.landing.listing import Landed
    from catalake.platform.landing.planning import plan_tasks, tiling_faults
    from catalake.platform.landing.reading import read_piece

    values = [{"n": i, "text": "x" * (i % 50)} for i in range(30000)]
    (tmp_path / "sink.json").write_text("".join(json.dumps(v) + "\n" for v in values))
    (tmp_path / "firehose").write_text("".join(json.dumps(v) for v in values))
    (tmp_path / "batch.json").write_text(json.dumps(values) + "\n")  # one line, one document: a batch
    for name, cut in (("sink.json", True), ("firehose", False), ("batch.json", False)):
        path = tmp_path / name
        files = [Landed(str(path), path.stat().st_size)]
        tasks = plan_tasks(None, files, 2, target=path.stat().st_size // 5)
        pieces = [p for t in tasks for p in t]
        assert (len(pieces) >= 4) == cut and tiling_faults(files, tasks) == [], name
        got = sorted((line, json.loads(raw)["n"]) for p in pieces for line, raw in read_piece(None, p))
        assert got == [(i + 1, i) for i in range(30000)], name


def test_aivens_output_fields_are_the_kafka_records_members(tmp_path, demo_tables):
    """Aiven's sink with `format.output.fields=key,value,offset,timestamp,headers`: the envelope's
    key, offset, timestamp and headers are the record's, its value the payload."""
    events = demo_events(3)
    target = tmp_path / "landing" / "2026-11-21" / "rides-2-0000000040.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("".join(json.dumps({"key": f"k{i}", "value": e, "offset": 40 + i, "timestamp": ENQUEUED + i,
                                          "headers": [{"key": "trace", "value": f"t{i}"}]}) + "\n"
                              for i, e in enumerate(events)))
    result, store = run_landing(tmp_path, demo_tables, tmp_path / "landing", "{date}/{topic}-{partition}-{offset}", "aiven-fields", DAY)
    assert result.records == 3 and result.deadletter == {}
    rows = by_id(store, demo_tables[1])
    for i, event in enumerate(events):
        metadata = dict(rows[event["id"]]["protocol_metadata"])
        assert (metadata["key"], metadata["offset"], metadata["partition"]) == (f"k{i}", str(40 + i), "2")
        assert metadata["timestamp"] == "2026-11-21 06:30:16"
        assert same_data(rows[event["id"]]["data"], event["data"])


def test_file_name_layouts_and_json_values_on_s3_give_the_rows_of_local_disk(tmp_path, demo_tables):
    """The same tools' files on a real S3 server on the loopback: Capture named with the date in
    the file name, Aiven's gzip JSON lines, Firehose objects with no extension; the rows of disk."""
    from catalake.demo.writers import capture_records
    from support.services import s3_server

    events = demo_events(24)
    capture = tmp_path / "capture" / "bikeshare-ns" / "rides"
    write_avro(capture_records(events[:6], True), CAPTURE_SCHEMA, capture / "p0--2026-11-21--06-00-00.avro")
    write_avro(capture_records(events[6:8], True), CAPTURE_SCHEMA, capture / "p0--2026-11-22--06-00-00.avro")
    aiven = tmp_path / "aiven" / "2026-11-21" / "bike.rides-1-0000000100.jsonl.gz"
    aiven.parent.mkdir(parents=True)
    aiven.write_bytes(gzip.compress("".join(json.dumps({"value": e}) + "\n" for e in events[8:16]).encode()))
    firehose = tmp_path / "firehose" / "2026" / "11" / "21" / "06" / "rides-1-2026-11-21-06-00-00-0f1e"
    firehose.parent.mkdir(parents=True)
    firehose.write_text("".join(json.dumps(e) for e in events[16:]))
    landings = {"capture": "{namespace}/{eventhub}/p{partition}--{yyyy}-{mm}-{dd}--*",
                "aiven": "{date}/{topic}-{partition}-{offset}", "firehose": "dated"}
    (tmp_path / "s3").mkdir()
    with s3_server(tmp_path / "s3") as server, pytest.MonkeyPatch.context() as patch:
        for key, value in server.environment.items():
            patch.setenv(key, value)
        bucket = server.bucket("tools")
        for name, layout in landings.items():
            local, local_store = run_landing(tmp_path, demo_tables, tmp_path / name, layout, f"{name}-local", DAY)
            remote, remote_store = run_landing(tmp_path, demo_tables, server.upload(tmp_path / name, f"{bucket}/{name}"),
                                               layout, f"{name}-s3", DAY)
            assert remote.records == local.records == (6 if name == "capture" else 8) and remote.deadletter == {}, name
            got, want = by_id(remote_store, demo_tables[1]), by_id(local_store, demo_tables[1])
            strip = lambda rows: {k: {c: v for c, v in r.items() if c != "ingested_at"} for k, r in rows.items()}  # noqa: E731
            assert strip(got) == strip(want), name


def test_plain_values_dead_lettered_before_their_definition_are_replayed_into_it(spark, tmp_path, demo_tables):
    """Plain values landed while the catalog had no definition for them are `not_an_event`; once
    the catalog has one, a replay moves exactly those into its table, lineage kept."""
    from catalake.platform.runs.replay import replay_partition
    from catalake.platform.warehouse.store import DeltaStore

    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    orders = [{"order_id": f"O-{i}", "amount": 2.0 * i} for i in range(5)]
    (day / "orders.jsonl").write_text("".join(json.dumps(o) + "\n" for o in orders) + "{broken\n")
    first, _ = run_landing(tmp_path, demo_tables, tmp_path / "landing", "day", "replay", DAY)
    assert first.deadletter == {"not_an_event": 5, "malformed_json": 1}

    plain = catalog_of(tmp_path / "plain", PLAIN_CATALOG)
    catalog = load_catalog([DEMO_CATALOG, tmp_path / "plain"])
    tables, _ = message_tables(catalog, [DEMO_CATALOG, tmp_path / "plain"])
    assert {t.name for t in plain[1]} <= {t.name for t in tables}
    store = DeltaStore(spark, tmp_path / "warehouse-replay", "delta-rs")
    result = replay_partition(spark, store, tables, DAY)
    assert result.moved == {"not_an_event -> messages/shop__order": 5} and result.conserved
    got = sorted((r["data"]["order_id"], r["data"]["amount"], r["source_line"]) for r in day_rows(store, "messages/shop__order", DAY))
    assert got == [(o["order_id"], o["amount"], i + 1) for i, o in enumerate(orders)]
    assert [r["reason"] for r in day_rows(store, DEADLETTER_TABLE, DAY)] == ["malformed_json"]
