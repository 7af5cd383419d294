"""Landed file formats other than JSON text, as the records the classifier reads
(landing-zone.md "Formats").

A file's format is recognised by its first bytes (`sniff`), its name deciding only between JSON
lines and one JSON document. Binary formats become the JSON records the rest of the platform
already reads, so that matching, dead letters (`raw`), replay and lineage work the same for all:

* an Azure Event Hubs Capture record (Avro `EventData`: SequenceNumber, Offset, EnqueuedTimeUtc,
  SystemProperties, Properties, Body) is an AMQP message (`protocol: AMQP/1.0`): the system
  properties that are AMQP message properties (`content-type`, `message-id`, ...) its
  `properties`, the `x-opt-*` ones with the sequence number, offset and enqueued time its
  `message_annotations`, `Properties` its `application_properties` (where the CloudEvents AMQP
  binding carries attributes as `cloudEvents_`/`cloudEvents:`), Body its body;
* a CloudEvents Avro format record (`attribute` map + `data`), or an Avro/Parquet record whose
  fields are the CloudEvents attributes, is a structured CloudEvent;
* a Parquet row of Spark's Kafka source (`key`, `value`, `topic`, `partition`, `offset`,
  `timestamp`, `headers`) is a Kafka record (the CloudEvents Kafka binding decides its mode);
* any other Avro or Parquet record is its fields as a JSON object, null fields left out
  (`plain_value`: a plain value, or a Kafka Connect value, then made a Kafka record of its topic
  by `kafka_value_record`).

Bytes that are UTF-8 text stay text (a JSON payload is then decoded once, as for a landed JSON
record); other bytes are given as base64 (`payload_base64`, `body_base64`, `data_base64`).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import re
import uuid
from typing import Any, Callable

import orjson

from ..records import cloudevents

GZIP = b"\x1f\x8b"
ZSTD = b"\x28\xb5\x2f\xfd"
SNAPPY_FRAMED = b"\xff\x06\x00\x00sNaPpY"
AVRO = b"Obj\x01"
PARQUET = b"PAR1"
HEAD_BYTES = 16  # enough for every magic above
COMPRESSED = {"gzip": (".gz", ".gzip"), "zstd": (".zst", ".zstd"), "snappy": (".sz", ".snappy")}
LINE_SUFFIXES = (".jsonl", ".ndjson", ".ldjson")
AMQP_PROPERTIES = frozenset({"message-id", "user-id", "to", "subject", "reply-to", "correlation-id", "content-type",
                             "content-encoding", "absolute-expiry-time", "creation-time", "group-id", "group-sequence",
                             "reply-to-group-id"})
CAPTURE_FIELDS = frozenset({"SequenceNumber", "Offset", "EnqueuedTimeUtc", "SystemProperties", "Properties", "Body"})
KAFKA_SOURCE_COLUMNS = frozenset({"key", "value", "topic", "partition", "offset"})
CE_REQUIRED = frozenset(cloudevents.REQUIRED)
# Kafka Connect's storage sinks name a file <topic>+<kafkaPartition>+<startOffset>.<format>[.<codec>]
CONNECT_FILE = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<offset>\d+)(?:\.[^.+]+)*$")


def sniff(head: bytes, name: str) -> str:
    """The format of a file from its first bytes and (only for JSON text) its name: `gzip`,
    `zstd`, `snappy` (framed), `avro`, `parquet`, `lines` (named as JSON lines, or empty),
    `document` (other JSON text: one JSON value, JSON lines, or values one after another; read
    by its first line, reading.py), or `unknown`."""
    if head.startswith(GZIP):
        return "gzip"
    if head.startswith(ZSTD):
        return "zstd"
    if head.startswith(SNAPPY_FRAMED):
        return "snappy"
    if head.startswith(AVRO):
        return "avro"
    if head.startswith(PARQUET):
        return "parquet"
    lower = inner_name(name).lower()
    if lower.endswith(".json") or head.startswith(b"\x1e"):  # RFC 7464 starts every value with RS
        return "document"
    if lower.endswith(LINE_SUFFIXES):
        return "lines"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text and len(head) < HEAD_BYTES:
        return "lines"  # an empty (or blank) file: a quiet file, whatever its name
    if text.startswith((b"{", b"[")):  # JSON lines or not: the first line decides (reading.py)
        return "document"
    return "unknown"


def is_json_value(text: bytes) -> bool:
    """Whether `text` is one whole JSON value (how a JSON text file's first line tells JSON lines)."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def inner_name(name: str) -> str:
    """A file name without its compression suffix (`rides.jsonl.zst` -> `rides.jsonl`)."""
    lower = name.lower()
    for suffixes in COMPRESSED.values():
        for suffix in suffixes:
            if lower.endswith(suffix):
                return name[: -len(suffix)]
    return name


def decompressed(kind: str, f) -> io.BufferedIOBase:
    """A readable stream of a compressed file's content."""
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=f, mode="rb")
    if kind == "zstd":
        return io.BufferedReader(_Zstd(f), buffer_size=1 << 20)
    import cramjam

    # cramjam's snappy Decompressor buffers the whole stream too: framed snappy files are read
    # whole (writers keep them small: Snappy framing has no seek points to split at either)
    return io.BufferedReader(io.BytesIO(bytes(cramjam.snappy.decompress(f.read()))))


class _Zstd(io.RawIOBase):
    """zstd frames decompressed as they are read. zstandard's own stream_reader ends quietly
    where a truncated file stops inside a frame; this reader raises ZstdError there instead."""

    def __init__(self, f):
        import zstandard

        self.f, self.codec = f, zstandard.ZstdDecompressor()
        self.frame = self.codec.decompressobj()
        self.inside = False  # within a frame not yet complete
        self.pending, self.at = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        import zstandard

        while self.at >= len(self.pending):
            chunk = self.f.read(1 << 20)
            if not chunk:
                if self.inside:
                    raise zstandard.ZstdError("the file ends inside a zstd frame")
                return 0
            self.pending, self.at = self._feed(chunk), 0
        n = min(len(buffer), len(self.pending) - self.at)
        buffer[:n] = self.pending[self.at:self.at + n]
        self.at += n
        return n

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            out.append(self.frame.decompress(chunk))
            self.inside = not self.frame.eof
            chunk = self.frame.unused_data if self.frame.eof else b""
            if self.frame.eof:  # the next frame, if any, starts in what is left
                self.frame = self.codec.decompressobj()
        return b"".join(out)


def corrupt_errors() -> tuple[type[BaseException], ...]:
    """What the decompressors raise on a broken stream."""
    import zlib

    import cramjam
    import zstandard

    return EOFError, OSError, zlib.error, zstandard.ZstdError, cramjam.DecompressionError


# -- values

def _text_or_base64(value: bytes) -> tuple[str, bool]:
    """(text, is_base64): UTF-8 bytes as their text, other bytes as base64."""
    try:
        return value.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(value).decode("ascii"), True


def jsonable(value) -> Any:
    """An Avro or Parquet value as JSON: bytes as UTF-8 text (else base64), timestamps as RFC
    3339 text, decimals as numbers."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _text_or_base64(bytes(value))[0]
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)).isoformat().replace("+00:00", "Z")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def plain_value(value) -> Any:
    """An Avro record or Parquet row of no event shape as the JSON object it stands for: a null
    field is a member the value does not have (Avro's `["null", T]`, a Parquet null: an optional
    field left out), as JSON Schema reads an optional property."""
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return jsonable(value)


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dt.datetime, dt.date)):
        return jsonable(value)
    return str(value)


def _payload(record: dict, member: str, value) -> None:
    """A binary payload into `member` (text) or `member_base64`."""
    if value is None:
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        text, b64 = _text_or_base64(bytes(value))
        record[member + "_base64" if b64 else member] = text
    else:
        record[member] = jsonable(value)


def _as_millis(value) -> int | None:
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return int(aware.timestamp() * 1000)
    return value if isinstance(value, int) else None


# -- records

CAPTURE_TIME = "%m/%d/%Y %I:%M:%S %p"  # EnqueuedTimeUtc as Capture writes it: 12/9/2022 5:10:16 PM (UTC)


def capture_time(text) -> int | None:
    """Capture's `EnqueuedTimeUtc` text as epoch milliseconds (what the `x-opt-enqueued-time`
    annotation holds), or None when it is not in Capture's form."""
    try:
        moment = dt.datetime.strptime(str(text).strip(), CAPTURE_TIME)
    except ValueError:
        return None
    return int(moment.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def capture_record(r: dict) -> dict:
    """An Event Hubs Capture `EventData` record as the AMQP message it was received as. The
    system properties are the message's own annotations (`x-opt-enqueued-time` in epoch
    milliseconds, `x-opt-sequence-number`, `x-opt-offset`); Capture's SequenceNumber, Offset and
    EnqueuedTimeUtc (a locale text, to the second) only fill in what they lack."""
    system = {str(k).lower(): v for k, v in (r.get("SystemProperties") or {}).items()}
    properties = {k: _text(v) for k, v in system.items() if k in AMQP_PROPERTIES}
    annotations = {k: _text(v) for k, v in system.items() if k not in AMQP_PROPERTIES}
    enqueued = r.get("EnqueuedTimeUtc")
    captured = {"x-opt-sequence-number": r.get("SequenceNumber"), "x-opt-offset": r.get("Offset"),
                "x-opt-enqueued-time": capture_time(enqueued) or enqueued}
    for name, value in captured.items():
        if annotations.get(name) is None:
            annotations[name] = _text(value)
    record = {"protocol": "AMQP/1.0", "properties": properties,
              "application_properties": {str(k): _text(v) for k, v in (r.get("Properties") or {}).items()},
              "message_annotations": {k: v for k, v in annotations.items() if v is not None}}
    _payload(record, "body", r.get("Body"))
    return record


def _ce_data(event: dict, data) -> None:
    """`data` of a structured event from Avro/Parquet: under a JSON content type, bytes or text
    holding JSON are that JSON value; other bytes are `data_base64`; anything else is the value."""
    from ..records.record import json_content

    json_type = json_content(event.get("datacontenttype"))
    if isinstance(data, (bytes, bytearray, memoryview, str)) and json_type:
        try:
            event["data"] = orjson.loads(bytes(data) if not isinstance(data, str) else data)
            return
        except orjson.JSONDecodeError:
            pass  # not JSON after all: kept as it is (the data schema decides)
    if isinstance(data, (bytes, bytearray, memoryview)):
        event["data_base64"] = base64.b64encode(bytes(data)).decode("ascii")
    elif data is not None:
        event["data"] = _unwrap(jsonable(data))


def _unwrap(value):
    # the CloudEvents Avro format nests JSON objects as `CloudEventData` records {"value": map}
    if isinstance(value, dict):
        if set(value) == {"value"} and isinstance(value["value"], dict):
            return _unwrap(value["value"])
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def avro_format_event(r: dict) -> dict:
    """A CloudEvents Avro format record (`attribute` map, `data`) as a structured event."""
    event = {k: jsonable(v) for k, v in (r.get("attribute") or {}).items() if v is not None}
    _ce_data(event, r.get("data"))
    return event


def flat_event(r: dict) -> dict:
    """A record whose fields are CloudEvents attributes (and `data`/`data_base64`) as a structured event."""
    event = {k: jsonable(v) for k, v in r.items() if k not in ("data", "data_base64") and v is not None}
    if r.get("data_base64") is not None:
        event["data_base64"] = jsonable(r["data_base64"])
    else:
        _ce_data(event, r.get("data"))
    return event


def kafka_source_record(r: dict) -> dict:
    """A row of Spark's Kafka source schema as a Kafka record (headers kcat-style, in order)."""
    record = {"topic": r.get("topic"), "partition": r.get("partition"), "offset": r.get("offset")}
    if r.get("key") is not None:
        _payload(record, "key", r["key"])
    _payload(record, "payload", r.get("value"))
    if r.get("timestamp") is not None:
        record["timestamp"] = _as_millis(r["timestamp"])
    headers = []
    for header in r.get("headers") or []:
        headers += [header.get("key"), _text(header.get("value"))]
    if headers:
        record["headers"] = headers
    return record


def converter(field_names: set[str]) -> Callable[[dict], dict]:
    """How a record with these fields becomes a JSON record (module docstring)."""
    if CAPTURE_FIELDS <= field_names:
        return capture_record
    if {"attribute", "data"} <= field_names:
        return avro_format_event
    if KAFKA_SOURCE_COLUMNS <= field_names:
        return kafka_source_record
    if CE_REQUIRED <= field_names:
        return flat_event
    return plain_value


def avro_field_names(schema) -> set[str]:
    """The field names of an Avro file's record schema (empty for another top-level type)."""
    if isinstance(schema, dict) and schema.get("type") == "record":
        return {f["name"] for f in schema.get("fields", [])}
    return set()


def connect_origin(name: str) -> tuple[int, int] | None:
    """(Kafka partition, first offset) from a Kafka Connect storage sink file name, or None."""
    m = CONNECT_FILE.match(name)
    return (int(m.group("partition")), int(m.group("offset"))) if m else None


def kafka_origin(fields: dict, name: str) -> tuple[int | None, int | None]:
    """(Kafka partition, first offset) of a file of a topic's values: the layout's `{partition}`
    and `{offset}` fields (Lenses', Aiven's names), else Kafka Connect's file name; None where
    neither says."""
    named = connect_origin(name) or (None, None)
    partition, offset = fields.get("partition"), fields.get("offset")
    return (int(partition) if partition is not None else named[0], int(offset) if offset is not None else named[1])


def is_kafka_record(obj) -> bool:
    from ..records.protocols import binding_of

    return isinstance(obj, dict) and binding_of(obj) is not None


def kafka_value_record(value, topic: str, origin: tuple[int | None, int | None], position: int) -> dict:
    """A Kafka sink's value (a record whose file carries no topic) as the Kafka record it was:
    the topic from the layout, partition and offset from the layout or the file name (first
    offset + the record's position - 1). A value that is a structured CloudEvent keeps that mode
    (the `content-type` header the binding requires for it)."""
    partition, first = origin
    record: dict = {"topic": topic}
    if partition is not None:
        record["partition"] = partition
    # no offset known: the position keeps the record a Kafka record
    record["offset"] = first + position - 1 if first is not None else position - 1
    if is_output_envelope(value):
        record.update(_enveloped(value))
        value = value["value"]
    headers = record.get("headers", [])
    if isinstance(value, dict) and CE_REQUIRED <= set(value) and "content-type" not in map(str.lower, headers[::2]):
        record["headers"] = [*headers, "content-type", "application/cloudevents+json"]
    record["payload"] = value
    return record


# Aiven's sinks write each record as an object of its `format.output.fields` (key, value, offset,
# timestamp, headers; `value` alone by default) unless format.output.envelope=false
OUTPUT_FIELDS = frozenset({"key", "value", "offset", "timestamp", "headers"})


def is_output_envelope(value) -> bool:
    """Whether a sink's value is Aiven's output envelope around the record's value."""
    return isinstance(value, dict) and "value" in value and set(value) <= OUTPUT_FIELDS


def _enveloped(envelope: dict) -> dict:
    """The Kafka record members an output envelope carries beside the value (its headers as
    kcat's flat list, from Aiven's [{key, value}] or an object)."""
    out: dict = {}
    if envelope.get("key") is not None:
        out["key"] = envelope["key"]
    if isinstance(envelope.get("offset"), int):
        out["offset"] = envelope["offset"]
    if envelope.get("timestamp") is not None:
        out["timestamp"] = envelope["timestamp"]
    headers = envelope.get("headers")
    if isinstance(headers, dict):
        headers = [{"key": k, "value": v} for k, v in headers.items()]
    if isinstance(headers, list):
        out["headers"] = [part for h in headers if isinstance(h, dict) and h.get("key") is not None
                          for part in (str(h["key"]), h.get("value"))]
    return out
