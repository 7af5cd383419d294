"""Real landing zones (landing-zone.md "Layouts" and "Formats"): the folder layouts and file
formats capture tools write, classified with the same guarantees as JSON lines in day folders.

Every file here is written by the library that writes it in the wild (fastavro, pyarrow,
zstandard, cramjam), never assembled by hand; days run through classify_partition in local
processes (no JVM) into real Delta tables read back with delta-rs."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from catalake.demo.generate import day_records, write_layouts
from catalake.demo.writers import (CAPTURE_SCHEMA, capture_records, write_avro, write_kafka_parquet, write_snappy_lines,
                                   write_zstd_lines)
from catalake.platform import layouts
from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.normalize import protocol_family
from catalake.platform.config import DEMO_DIR, Settings
from catalake.platform.landing.listing import Landed, landing_partitions, list_day
from catalake.platform.landing.planning import plan_tasks, tiling_faults
from catalake.platform.landing.reading import read_piece
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.landed import day_rows, fed, run_landing
from support.paths import DEMO_CATALOG

DAY = dt.date(2026, 11, 21)
# what a row is, whatever the file it came from: lineage and the protocol envelope differ
LINEAGE = {"source_file", "source_line", "source_fields", "ingested_at", "protocol", "protocol_metadata"}


def run(tmp_path: Path, demo_tables, landing: Path, layout: str, name: str, day: dt.date = DAY):
    """Classify one day of `landing` in `layout` into a warehouse of its own; (result, store)."""
    return run_landing(tmp_path, demo_tables, landing, layout, name, day)


def rows(store: DeltaStore, name: str, day: dt.date = DAY) -> list[dict]:
    return day_rows(store, name, day)


@pytest.fixture(scope="module")
def demo_tables():
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    return catalog, tables


def _without_ingested(rows_: list[dict]) -> list[dict]:
    """Rows without `ingested_at`, in (source_file, source_line) order: what two runs share."""
    return sorted(({k: v for k, v in r.items() if k != "ingested_at"} for r in rows_),
                  key=lambda r: (r["source_file"], r["source_line"]))


def payload_rows(store: DeltaStore, name: str) -> list[str]:
    """A table's rows without lineage and envelope columns, comparable across formats."""
    return sorted(json.dumps({k: v for k, v in r.items() if k not in LINEAGE}, default=str, sort_keys=True)
                  for r in rows(store, name))


# -- layouts

@pytest.mark.parametrize("setting, folder, fields", [
    ("day", "2026-11-21", {}),
    ("day", "dt=2026-11-21", {}),
    ("hive", "year=2026/month=11/day=21/hour=05", {}),
    ("dated", "2026/11/21/05/17", {}),
    ("dated", "year=2026/month=11/day=21", {}),  # a date folder alone also reads Hive-style
    ("capture", "ns1/hub-a/3/2026/11/21/05/17", {"namespace": "ns1", "eventhub": "hub-a", "partition": "3"}),
    ("connect", "topics/orders/year=2026/month=11/day=21/hour=23", {"topic": "orders"}),
    ("connect", "topics/orders/2026/11/21/23", {"topic": "orders"}),
    ("{tenant}/events/{yyyy}-{mm}-{dd}", "acme/events/2026-11-21", {"tenant": "acme"}),
])
def test_a_layout_finds_the_day_with_every_hour_and_its_path_fields(tmp_path, setting, folder, fields):
    root = tmp_path / "landing"
    (root / folder).mkdir(parents=True)
    (root / folder / "a.jsonl").write_text('{"x": 1}\n')
    other = folder.replace("21", "22", 1)
    (root / other).mkdir(parents=True)
    (root / other / "b.jsonl").write_text('{"x": 2}\n')
    listing = list_day(str(root), DAY, setting)
    assert [f.name for f in listing.files] == ["a.jsonl"] and dict(listing.files[0].fields) == fields
    assert list_day(str(root), dt.date(2026, 11, 23), setting).missing  # says so, as a missing day folder does
    assert sorted(landing_partitions(str(root), setting)) == ["2026-11-21", "2026-11-22"]


@pytest.mark.parametrize("setting, rule", [
    ("{yyyy}/{mm}", "by {date}, or by all of {yyyy}, {mm} and {dd}"),
    ("{Namespace}/{date}", "a field name is lower-case"),
    ("{date}/{date}", "appears twice"),
    ("x/{date", "is not a literal name or {placeholder}s"),
])
def test_a_layout_that_cannot_be_used_is_refused_naming_the_rule(setting, rule):
    with pytest.raises(layouts.LayoutError, match="CATALAKE_LANDING_LAYOUT") as caught:
        layouts.parse(setting)
    assert rule in str(caught.value)
    with pytest.raises(layouts.LayoutError):
        Settings.from_env({"CATALAKE_LANDING_LAYOUT": setting})


def test_the_cli_refuses_a_bad_layout_in_one_line(tmp_path, monkeypatch, capsys):
    from catalake.cli import main

    monkeypatch.setenv("CATALAKE_LANDING_LAYOUT", "{yyyy}")
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(tmp_path / "w"))
    assert main(["run", "--date", "2026-11-21"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("catalake: CATALAKE_LANDING_LAYOUT '{yyyy}'")


# -- the same demo events in four layouts and formats

def test_the_demo_day_as_capture_tools_land_it_gives_the_same_rows(tmp_path, demo_tables):
    """JSON lines in day folders; zstd JSON lines in Hive hours; Event Hubs Capture Avro (AMQP,
    binary and structured mode); Kafka-source Parquet in Kafka Connect topic folders: per table
    the same ids and payload columns, lineage as each file says, conservation every time."""
    roots = write_layouts(DAY, 12, tmp_path / "landings")
    json_result, json_store = run(tmp_path, demo_tables, roots["json"], "day", "json")
    zstd_result, zstd_store = run(tmp_path, demo_tables, roots["hive-zstd"], "hive", "zstd")
    capture_result, capture_store = run(tmp_path, demo_tables, roots["capture"], "capture", "capture")
    parquet_result, parquet_store = run(tmp_path, demo_tables, roots["connect-parquet"], "connect", "parquet")
    _, tables = demo_tables
    by_json = fed(json_result, tables)

    # zstd JSON lines hold every record of the day: every table is the same, the dead letters too
    assert zstd_result.tables == json_result.tables and zstd_result.deadletter == json_result.deadletter
    for table in tables:
        assert payload_rows(zstd_store, table.name) == payload_rows(json_store, table.name), table.name

    # the Kafka records as Spark's Kafka source writes them: the Kafka tables, row for row
    kafka = {t.name for t in tables if protocol_family(t.message.protocol) == "KAFKA"}
    assert set(fed(parquet_result, tables)) == {n for n in by_json if n in kafka}
    for name in kafka:
        assert payload_rows(parquet_store, name) == payload_rows(json_store, name), name
        for r in rows(parquet_store, name):
            assert r["source_file"].endswith(".parquet") and dict(r["source_fields"]) == {"topic": "rides"}
            assert r["kafka_topic"] == "rides" and r["kafka_offset"] >= 739941000
    assert parquet_result.deadletter == {}

    # Capture: the structured events as AMQP messages go to the protocol-less tables they went to
    structured = fed(capture_result, tables)
    assert structured and set(structured) <= {n for n in by_json if n not in kafka}
    for name in structured:
        assert {r["id"]: (r["data"], r["time"]) for r in rows(capture_store, name)} == \
            {r["id"]: (r["data"], r["time"]) for r in rows(json_store, name) if "rides-http" in r["source_file"]
             or "battery-batch" in r["source_file"]}, name
        fields = [dict(r["source_fields"]) for r in rows(capture_store, name)]
        assert all(f["namespace"] == "bikeshare-ns" and f["eventhub"] == "rides" and f["partition"] in "01" for f in fields)
    # the lines that are no event, and the event of no definition, dead-letter here too
    assert set(capture_result.deadletter) <= set(json_result.deadletter) | {"not_an_event"}
    assert sum(capture_result.deadletter.values()) == 3


def test_the_shipped_demo_copies_are_what_the_writers_write(tmp_path):
    """demo/capture and the second day's Kafka Parquet are regenerated byte for byte."""
    from catalake.demo.writers import write_capture

    files = day_records(DAY, 12)
    written = write_capture(DAY, files, tmp_path / "capture")
    for path in written:
        shipped = DEMO_DIR / "capture" / path.relative_to(tmp_path / "capture")
        assert shipped.read_bytes() == path.read_bytes(), shipped
    write_kafka_parquet(files["rides-kafka.jsonl"], tmp_path / "rides-kafka.parquet")
    shipped = DEMO_DIR / "landing" / DAY.isoformat() / "rides-kafka.parquet"
    assert shipped.read_bytes() == (tmp_path / "rides-kafka.parquet").read_bytes()


# -- formats: Avro, Parquet, compression, what cannot be read

def landed(path: Path) -> list:
    return [(line, raw) for task in plan_tasks(None, [Landed(str(path), path.stat().st_size)], 1) for p in task
            for line, raw in read_piece(None, p)]


def test_cloudevents_avro_format_and_flat_event_records(tmp_path):
    """The CloudEvents Avro format (`attribute` map, `data`), and records whose fields are the
    attributes (as an Avro-writing producer or a Parquet export has them), are structured events."""
    avro_format = {"type": "record", "name": "CloudEvent", "namespace": "io.cloudevents", "fields": [
        {"name": "attribute", "type": {"type": "map", "values": ["null", "boolean", "int", "string", "bytes"]}},
        {"name": "data", "type": ["bytes", "null", "boolean", "double", "string"]}]}
    write_avro([{"attribute": {"specversion": "1.0", "id": "1", "source": "/s", "type": "t", "datacontenttype": "application/json"},
                 "data": b'{"a": 1}'},
                {"attribute": {"specversion": "1.0", "id": "2", "source": "/s", "type": "t",
                               "datacontenttype": "application/octet-stream"}, "data": b"\x00\xff"}],
               avro_format, tmp_path / "ce.avro", codec="null")
    got = [json.loads(raw) for _, raw in landed(tmp_path / "ce.avro")]
    assert got[0]["data"] == {"a": 1} and got[0]["id"] == "1"
    assert got[1]["data_base64"] == "AP8=" and "data" not in got[1]

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"specversion": ["1.0"], "id": ["p1"], "source": ["/s"], "type": ["t"],
                      "time": pa.array([dt.datetime(2026, 11, 21, 6, tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")),
                      "datacontenttype": ["application/json"], "data": ['{"b": 2}']})
    pq.write_table(table, tmp_path / "ce.parquet")
    (line, raw), = landed(tmp_path / "ce.parquet")
    assert line == 1 and json.loads(raw) == {"specversion": "1.0", "id": "p1", "source": "/s", "type": "t",
                                             "time": "2026-11-21T06:00:00Z", "datacontenttype": "application/json",
                                             "data": {"b": 2}}


def test_kafka_connect_avro_values_become_records_of_their_topic(tmp_path, demo_tables):
    """Kafka Connect's S3 sink writes the values only: the topic comes from `topics/<topic>/`,
    partition and offsets from the file name `<topic>+<partition>+<startOffset>.avro`."""
    files = day_records(DAY, 12)
    schema = {"type": "record", "name": "Ride", "fields": [{"name": "ride_id", "type": "string"}]}
    folder = tmp_path / "landing" / "topics" / "rides" / "2026" / "11" / "21" / "06"
    write_avro([{"ride_id": "R-1"}, {"ride_id": "R-2"}], schema, folder / "rides+2+0000000100.avro")
    # a value that is a structured event keeps that mode (JSON format of the sink)
    event = next(r for r in files["rides-http.jsonl"] if isinstance(r, dict) and r["type"].endswith("RideStarted"))
    (folder / "rides+0+0000000007.json").write_text(json.dumps(event) + "\n")
    result, store = run(tmp_path, demo_tables, tmp_path / "landing", "connect", "connect")
    assert result.records == 3
    started = [r for r in rows(store, "messages/bikeshare_rides__ridestarted")]
    assert [(r["id"], r["source_line"], dict(r["source_fields"])) for r in started] == [(event["id"], 1, {"topic": "rides"})]
    dead = sorted((r["source_line"], json.loads(r["raw"])) for r in rows(store, DEADLETTER_TABLE) if r["source_file"].endswith(".avro"))
    assert [d[1] for d in dead] == [{"ride_id": "R-1"}, {"ride_id": "R-2"}]
    assert {r["reason"] for r in rows(store, DEADLETTER_TABLE)} == {"no_match"}
    assert all(r["protocol"] == "KAFKA" for r in rows(store, DEADLETTER_TABLE))


def test_compressed_json_lines_by_their_magic_bytes(tmp_path):
    lines = ['{"specversion":"1.0","id":"%d","source":"/s","type":"t"}' % i for i in range(3)]
    write_zstd_lines(lines, tmp_path / "a.jsonl.zst")
    write_snappy_lines(lines, tmp_path / "b.sz")
    (tmp_path / "c.JSONL").write_text("\n".join(lines) + "\n")  # a name in capitals: read, never skipped
    for name in ("a.jsonl.zst", "b.sz", "c.JSONL"):
        assert [(n, json.loads(raw)["id"]) for n, raw in landed(tmp_path / name)] == [(1, "0"), (2, "1"), (3, "2")], name


def test_unknown_and_corrupt_files_are_dead_letters_naming_the_file(tmp_path, demo_tables):
    """A file of no known format is one `unsupported_format` dead letter; an Avro, Parquet or
    zstd file that breaks off keeps what was read and says where it broke; the rest of the day
    is stored."""
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    (day / "notes.txt").write_text("these are not events\n")
    (day / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(64))
    records = capture_records([{"specversion": "1.0", "id": str(i), "source": "/s", "type": "bikeshare.docks.BatteryLow",
                                "datacontenttype": "application/json", "data": {"bike_id": "B-1"}} for i in range(2000)], False)
    write_avro(records, CAPTURE_SCHEMA, tmp_path / "whole.avro", codec="null", sync_interval=2000)
    data = (tmp_path / "whole.avro").read_bytes()
    (day / "cut.avro").write_bytes(data[: len(data) // 2])
    files = day_records(DAY, 12)
    write_kafka_parquet(files["rides-kafka.jsonl"], tmp_path / "whole.parquet")
    (day / "cut.parquet").write_bytes((tmp_path / "whole.parquet").read_bytes()[:-20])
    write_zstd_lines(['{"a": %d}' % i for i in range(50000)], tmp_path / "whole.zst")
    (day / "cut.jsonl.zst").write_bytes((tmp_path / "whole.zst").read_bytes()[:200])
    (day / "good.jsonl").write_text("\n".join(json.dumps(r) for r in files["rides-kafka.jsonl"]) + "\n")
    result, store = run(tmp_path, demo_tables, tmp_path / "landing", "day", "faults")
    dead = {(r["source_file"].rsplit("/", 1)[-1], r["reason"]): r for r in rows(store, DEADLETTER_TABLE)
            if r["reason"] in ("unsupported_format", "corrupt_file")}
    assert set(dead) == {("notes.txt", "unsupported_format"), ("image.png", "unsupported_format"),
                         ("cut.avro", "corrupt_file"), ("cut.parquet", "corrupt_file"), ("cut.jsonl.zst", "corrupt_file")}
    assert "Avro file breaks off at record" in dead[("cut.avro", "corrupt_file")]["detail"]
    assert b"PNG" in dead[("image.png", "unsupported_format")]["detail"].encode()
    avro_kept = [r for r in rows(store, DEADLETTER_TABLE) if r["source_file"].endswith("cut.avro") and r["reason"] != "corrupt_file"]
    _, tables = demo_tables
    assert 0 < len(avro_kept) + fed(result, tables).get("messages/bikeshare_docks__batterylow", 0) < 2000
    assert sum(result.tables.values()) >= len(files["rides-kafka.jsonl"])  # the rest of the day is stored


# -- splitting large Avro and Parquet files

def test_large_avro_and_parquet_files_split_into_pieces_each_record_once(tmp_path):
    events = [{"specversion": "1.0", "id": str(i), "source": "/s", "type": "t", "datacontenttype": "application/json",
               "data": {"n": i}} for i in range(30000)]
    write_avro(capture_records(events, False), CAPTURE_SCHEMA, tmp_path / "big.avro")
    kafka = [{"topic": "t", "partition": 0, "offset": i, "ts": 1795305600000 + i, "key": str(i),
              "headers": ["ce_id", str(i)], "payload": json.dumps({"n": i})} for i in range(30000)]
    write_kafka_parquet(kafka, tmp_path / "big.parquet", row_group_size=2000)
    for name in ("big.avro", "big.parquet"):
        path = tmp_path / name
        files = [Landed(str(path), path.stat().st_size)]
        tasks = plan_tasks(None, files, 2, target=path.stat().st_size // 5)
        pieces = [p for t in tasks for p in t]
        assert len(pieces) >= 4 and tiling_faults(files, tasks) == [], name
        got = [(line, json.loads(raw)) for p in pieces for line, raw in read_piece(None, p)]
        assert sorted(line for line, _ in got) == list(range(1, 30001)), name
        ids = sorted(int(json.loads(r["body"])["id"]) if "body" in r else r["offset"] for _, r in got)
        assert ids == list(range(30000)), name
        # the record number is the record's place in the file
        assert all((int(json.loads(r["body"])["id"]) if "body" in r else r["offset"]) == line - 1 for line, r in got), name


# -- on object storage

def test_every_layout_and_format_on_s3_gives_the_rows_of_local_disk(tmp_path, demo_tables):
    """The same four landings uploaded to a real S3 server on the loopback: listing by layout,
    sniffing, Avro blocks and Parquet footers read by ranged requests, the same rows."""
    from support.services import s3_server

    roots = write_layouts(DAY, 12, tmp_path / "landings")
    _, tables = demo_tables
    (tmp_path / "s3").mkdir()
    with s3_server(tmp_path / "s3") as server, pytest.MonkeyPatch.context() as patch:
        for key, value in server.environment.items():
            patch.setenv(key, value)
        bucket = server.bucket("landings")
        for (name, root), layout in zip(roots.items(), ("day", "hive", "capture", "connect")):
            local, local_store = run(tmp_path, demo_tables, root, layout, f"{name}-local")
            remote, remote_store = run(tmp_path, demo_tables, server.upload(root, f"{bucket}/{name}"), layout, f"{name}-s3")
            assert remote.records == local.records > 0 and remote.tables == local.tables, name
            assert remote.deadletter == local.deadletter, name
            for table in [t.name for t in tables] + [DEADLETTER_TABLE]:
                # source_file is below the landing root in both: the same rows
                got, want = rows(remote_store, table), rows(local_store, table)
                assert _without_ingested(got) == _without_ingested(want), (name, table)


def test_the_landing_sensor_requests_the_days_of_the_layout(tmp_path):
    """The sensor lists the landing in its layout: the shipped Capture folders are one day."""
    from dagster import DagsterInstance, build_sensor_context

    from catalake.component import build_definitions

    settings = Settings(landing=str(DEMO_DIR / "capture"), layout="capture", warehouse=str(tmp_path / "warehouse"),
                        start_date="2026-11-01")
    sensor = build_definitions(settings, analytics=False).get_sensor_def("landing_sensor")
    with DagsterInstance.ephemeral() as instance:
        context = build_sensor_context(instance=instance)
        requests = sensor(context)
        assert [r.partition_key for r in requests] == ["2026-11-21"]
        again = sensor(build_sensor_context(instance=instance, cursor=context.cursor))
        assert not isinstance(again, list)  # nothing new: a SkipReason
