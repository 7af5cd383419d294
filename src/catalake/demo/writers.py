"""The demo's events as capture tools land them: other layouts, other formats (landing-zone.md).

`python -m catalake.demo.generate --layouts OUT_DIR` writes one landing root per layout under
OUT_DIR with these writers, each holding the same demo day:

* `json/`      the day folder layout, JSON lines and a batch document (as generate.py writes);
* `hive-zstd/` Hive-style `year=/month=/day=/hour=` folders, zstd-compressed JSON lines;
* `capture/`   Azure Event Hubs Capture: `{namespace}/{eventhub}/{partition}/{Y}/{M}/{D}/{h}/{m}/{s}.avro`
               holding the structured events (the rides over HTTP in the AMQP binary mode,
               `cloudEvents_` application properties; the battery batch in the structured mode);
* `connect-parquet/` Kafka Connect's `topics/<topic>/year=/month=/day=/hour=` folders holding
               the Kafka records as Spark's Kafka source writes them (Parquet: key, value, topic,
               partition, offset, timestamp, timestampType, headers).

Each file is written by the library that writes it in the wild (fastavro, pyarrow, zstandard).
The bundled demo ships the Capture copy (`demo/capture/`) and lands the second day's Kafka records
as Parquet (`landing/2026-11-21/rides-kafka.parquet`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

CAPTURE_SCHEMA = {
    "type": "record", "name": "EventData", "namespace": "Microsoft.ServiceBus.Messaging",
    "fields": [
        {"name": "SequenceNumber", "type": "long"},
        {"name": "Offset", "type": "string"},
        {"name": "EnqueuedTimeUtc", "type": "string"},
        {"name": "SystemProperties", "type": {"type": "map", "values": ["long", "double", "string", "bytes"]}},
        {"name": "Properties", "type": {"type": "map", "values": ["long", "double", "string", "bytes", "null"]}},
        {"name": "Body", "type": ["null", "bytes"]},
    ],
}
NAMESPACE, HUB = "bikeshare-ns", "rides"


def line(record) -> str:
    """A record as the JSON line a producer writes (a raw line as it is)."""
    return record if isinstance(record, str) else json.dumps(record, separators=(",", ":"))


def kafka_source_table(records: list[dict]):
    """kcat-style Kafka records as a table of Spark's Kafka source schema."""
    import pyarrow as pa

    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
                        ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC")), ("timestampType", pa.int32()),
                        ("headers", pa.list_(header))])
    rows = []
    for r in records:
        flat = r.get("headers") or []
        payload = r.get("payload")
        rows.append({
            "key": None if r.get("key") is None else str(r["key"]).encode(),
            "value": None if payload is None else (payload if isinstance(payload, str) else json.dumps(payload)).encode(),
            "topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
            "timestamp": dt.datetime.fromtimestamp(r["ts"] / 1000, dt.timezone.utc), "timestampType": 0,
            "headers": [{"key": flat[i], "value": str(flat[i + 1]).encode()} for i in range(0, len(flat), 2)],
        })
    return pa.Table.from_pylist(rows, schema=schema)


def write_kafka_parquet(records: list[dict], path: Path, row_group_size: int | None = None) -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(kafka_source_table(records), path, row_group_size=row_group_size)


def capture_records(events: list, binary: bool, first_sequence: int = 0) -> list[dict]:
    """Structured CloudEvents (or raw lines) as Event Hubs Capture `EventData` records: binary
    mode puts the attributes in `cloudEvents_` application properties and the data in the body,
    structured mode the whole event in the body (`application/cloudevents+json`)."""
    out = []
    for n, event in enumerate(events):
        system: dict = {"x-opt-enqueued-time": 1795305600000 + n}
        properties: dict = {}
        if isinstance(event, str):  # a line that is no event: its bytes, as a producer sent them
            body = event.encode()
        elif binary:
            properties = {f"cloudEvents_{k}": str(v) for k, v in event.items() if k not in ("data", "datacontenttype")}
            system["content-type"] = event.get("datacontenttype", "application/json")
            body = json.dumps(event.get("data"), separators=(",", ":")).encode()
        else:
            system["content-type"] = "application/cloudevents+json; charset=utf-8"
            body = json.dumps(event, separators=(",", ":")).encode()
        out.append({"SequenceNumber": first_sequence + n, "Offset": str(4096 * (first_sequence + n)),
                    "EnqueuedTimeUtc": "11/21/2026 6:00:00 AM", "SystemProperties": system, "Properties": properties,
                    "Body": body})
    return out


def write_avro(records: list[dict], schema: dict, path: Path, codec: str = "deflate", sync_interval: int = 16000) -> None:
    import fastavro

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec, sync_interval=sync_interval,
                        metadata={"catalake.demo": "1"}, sync_marker=b"catalake-demo-16")


def write_zstd_lines(lines: list[str], path: Path) -> None:
    import zstandard

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(("\n".join(lines) + "\n").encode()))


def write_snappy_lines(lines: list[str], path: Path) -> None:
    import cramjam

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(cramjam.snappy.compress(("\n".join(lines) + "\n").encode())))  # the framed format


def write_capture(day: dt.date, files: dict[str, list], root: Path) -> list[Path]:
    """The day's structured events in Event Hubs Capture folders: rides over HTTP (binary mode)
    in partition 0, the battery batch (structured mode) in partition 1."""
    written = []
    for partition, name, binary in ((0, "rides-http.jsonl", True), (1, "battery-batch.json", False)):
        folder = root / NAMESPACE / HUB / str(partition) / f"{day:%Y/%m/%d}" / "06" / "00"
        path = folder / "00.avro"
        write_avro(capture_records(files[name], binary), CAPTURE_SCHEMA, path)
        written.append(path)
    return written
