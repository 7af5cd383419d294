"""A landed record (parsed JSON) -> one normalized shape (`Record`), in plain Python.

The kind is recognised by content, never by file name (landing-zone.md, "Record kinds"): a
`protocol` member or Kafka's `topic` + `offset` name a protocol binding (protocols.py);
`specversion` a CloudEvent in structured mode; any other JSON object is a `plain` value (an Avro
record or Parquet row of a sink, a JSON object of an application), which only definitions with
neither envelope nor protocol take, by their schema; any other JSON is `not_an_event`, text that
is not JSON `malformed_json`.

CloudEvents attributes come from the structured event (every member but `data` and
`data_base64`, as text) or, in binary mode, from the binding's headers or properties with its
CloudEvents prefix; the binding's content type becomes `datacontenttype`, also over a prefixed
`datacontenttype` header (the bindings map the one to the other: Kafka 3.2.1). A content type
starting with `application/cloudevents` means the payload is a structured-mode event.

The payload is `data` (a JSON value; MISSING when absent) or `data_b64` (base64 text). A
protocol payload given as a JSON string holding a JSON object or array is the payload's bytes
as text and is decoded once (landing-zone.md); a structured event's `data` is what the JSON
event format says it is.

`fields` is what the matcher checks: `ce:<attribute>` and `opt:<option>` / `opt:<section>.<entry>`
(the catalog's protocol option names) -> text, and `payload:contenttype`, the payload's media
type (`payload_content_type`).

Why Python and not Spark SQL: a record is a few dictionary lookups here, while the same
normalization as Spark expressions cost more than the whole plain Python classification of a
record (benchmarks/RESULTS.md, sessions 4-7).
"""

from __future__ import annotations

import orjson

from ..jsonvalues import as_text, name_value_map, rfc3339
from .cloudevents import JSON_STRINGS, NON_EMPTY, REQUIRED
from .protocols import Binding, binding_of

MISSING = object()  # no payload at all (not JSON null)
PLAIN = "plain"  # the kind of a JSON object that is neither an event nor a protocol record
JSON_KINDS = {bool: "boolean", int: "number", float: "number", dict: "object", list: "array"}


class Record:
    __slots__ = ("kind", "binding", "raw", "headers", "props", "protocol", "is_structured", "attrs", "content_type",
                 "data", "data_b64", "address", "fields", "_times", "payload_error", "event")

    def __init__(self, kind: str, binding: Binding | None = None, raw: dict | None = None):
        self.kind, self.binding, self.raw = kind, binding, raw
        self.headers: dict = {}
        self.props: dict = {}
        self.protocol = None
        self.is_structured = False
        self.attrs: dict | None = None
        self.content_type = None
        self.data = MISSING
        self.data_b64 = None
        self.payload_error: str | None = None  # why a JSON payload's text does not decode
        self.address = None
        self.event: dict | None = None  # a structured event as the JSON event format carries it
        self.fields: dict = {}
        self._times: dict = {}

    @property
    def is_ce(self) -> bool:
        return self.attrs is not None

    def timestamp(self, key: str):
        """The field `key` as an RFC 3339 date-time (parsed once: the matcher checks it, the
        table stores it), or None."""
        if key not in self._times:
            self._times[key] = rfc3339(self.fields.get(key))
        return self._times[key]

    def metadata(self, column) -> object:
        """One protocol metadata column (protocols.Column) of this record; None for another binding."""
        return column.get(self.raw, self.headers, self.props) if self.binding is not None else None

    def metadata_map(self) -> dict | None:
        """Scalar protocol metadata as text (`protocol_metadata` of any-binding definitions)."""
        if self.binding is None:
            return None
        out = {}
        for column in self.binding.columns:
            if column.scalar:
                value = column.get(self.raw, self.headers, self.props)
                if value is not None:
                    out[column.name.split("_", 1)[1]] = value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else as_text(value)
        return out


BATCH = "application/cloudevents-batch"


def batch_events(obj) -> list | None:
    """The events of an HTTP record in batched content mode (HTTP binding 3.3: content type
    `application/cloudevents-batch+json`, the body a JSON array of structured events), else None."""
    binding = binding_of(obj) if isinstance(obj, dict) else None
    if binding is None or binding.kind != "http":
        return None
    content_type = binding.content_type(obj, name_value_map(obj.get(binding.header_member)) or {}, {})
    if not (as_text(content_type) or "").lower().startswith(BATCH):
        return None
    body = decode_payload(obj.get("body"))
    return body if isinstance(body, list) else None


def record_fault(rec: Record, takes_plain: bool = False) -> tuple[str, str] | None:
    """(dead-letter reason, detail) of a record no definition may take, whatever the catalog:
    not an event (a plain value too, unless the catalog `takes_plain` values); a CloudEvent
    without a core attribute, with a defined attribute the JSON event format writes as a string
    carried as another JSON value (`json_string_faults`), of another specversion, or otherwise
    invalid by CloudEvents 1.0 "Context Attributes" (`id`, `source`,
    `type` and `subject` MUST be non-empty: `empty_attributes`; `time`, when present, MUST be an
    RFC 3339 timestamp with its offset). None for any other record."""
    if rec.kind == "not_an_event" or rec.kind == PLAIN and not takes_plain:
        return "not_an_event", "neither a CloudEvent nor a protocol record" + (
            " (and no definition without envelope and protocol takes plain values)" if rec.kind == PLAIN else "")
    if not rec.is_ce:
        return None
    missing = [a for a in REQUIRED if rec.attrs.get(a) is None]
    if missing:
        return "missing_required_attribute", "missing CloudEvents attribute(s): " + ", ".join(missing)
    not_strings = json_string_faults(rec)
    if not_strings:
        return "invalid_attribute", ("CloudEvents attribute(s) " + ", ".join(not_strings)
                                     + " (the JSON event format writes them as JSON strings)")
    if rec.attrs["specversion"] != "1.0":
        return "unsupported_specversion", f"specversion {rec.attrs['specversion']} (1.0 is supported)"
    empty = empty_attributes(rec)
    if empty:
        return "invalid_attribute", "empty CloudEvents attribute(s): " + ", ".join(empty) + " (must be non-empty)"
    time = rec.attrs.get("time")
    if time is not None and rec.timestamp("ce:time") is None:
        return "invalid_attribute", f"time {time[:64]!r} is not an RFC 3339 timestamp with an offset (e.g. 2026-11-20T10:00:00Z)"
    return None


def empty_attributes(rec: Record) -> list[str]:
    """The attributes CloudEvents 1.0 requires to be non-empty strings when present (`NON_EMPTY`:
    id, source, type, subject) that are empty. An empty `type` is a malformed envelope, not an
    event type the catalog lacks (`no_match`)."""
    return [name for name in NON_EMPTY if rec.attrs.get(name) == ""]


def json_string_faults(rec: Record) -> list[str]:
    """The attributes CloudEvents defines as text (`JSON_STRINGS`) that a structured event carries
    as another JSON value (`"id": 5`, `"specversion": 1.0`), each with that value's JSON kind. The
    JSON event format writes them as strings; extension attributes may be JSON numbers and booleans."""
    if rec.event is None:
        return []
    return [f"{name} is a JSON {JSON_KINDS.get(type(rec.event[name]), 'value')}" for name in JSON_STRINGS
            if rec.event.get(name) is not None and not isinstance(rec.event[name], str)]


def decode_payload(value):
    """A protocol payload; a JSON string holding an object or array is decoded once."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def json_content(content_type: str | None) -> bool:
    """No content type, or a JSON one (`application/json`, `*+json`; landing-zone.md)."""
    if content_type is None:
        return True
    head = content_type.split(";", 1)[0].strip().lower()
    return head == "application/json" or head.endswith("+json")


def payload_error(value, content_type: str | None) -> str | None:
    """Why a protocol payload that is JSON text (an object or array, with a JSON content type or
    none) does not decode: a message cut off in transit is a malformed payload, not a string
    the schema then refuses."""
    if not (isinstance(value, str) and value.lstrip()[:1] in ("{", "[") and json_content(content_type)):
        return None
    try:
        orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        return f"the payload is not JSON: {exc}"
    return None


def _structured_attrs(event: dict) -> dict:
    return {k: as_text(v) for k, v in event.items() if k not in ("data", "data_base64") and v is not None}


def _with_prefix(headers: dict, prefixes: tuple[str, ...]) -> dict:
    if prefixes == ("",):
        return {k: v for k, v in headers.items() if v is not None}
    out = {}
    for key, value in headers.items():
        for prefix in prefixes:
            if key.startswith(prefix):
                if value is not None:
                    out[key[len(prefix):]] = value
                break
    return out


def normalize(obj) -> Record:
    """The normalized record of one parsed landed JSON value (not an object: `not_an_event`)."""
    if not isinstance(obj, dict):
        return Record("not_an_event")
    binding = binding_of(obj)
    if binding is None:
        if obj.get("specversion") is None:
            rec = Record(PLAIN, None, obj)
            rec.data = obj
            rec.fields = _fields(rec)
            return rec
        rec = Record("cloudevents", None, obj)
        rec.is_structured = True
        _structured(rec, obj)
    else:
        rec = Record(binding.kind, binding, obj)
        _protocol_record(rec, obj, binding)
    rec.fields = _fields(rec)
    return rec


def _structured(rec: Record, event: dict) -> None:
    rec.event = event
    rec.attrs = _structured_attrs(event)
    if "data" in event:
        rec.data = event["data"]
    rec.data_b64 = as_text(event.get("data_base64"))


def structured_mode(protocol: str | None, content_type: str | None, payload) -> bool:
    """Whether a protocol record carries a structured-mode event: its content type says
    `application/cloudevents...` (every binding's "Structured Content Mode"), or it is MQTT 3.1.1
    without a content type and its payload is a JSON event (MQTT binding 3.1: 3.1.1 has no
    properties to carry attributes, so it only has the structured mode; a payload that is no
    event is plain MQTT, for definitions without an envelope)."""
    if content_type is not None:
        return content_type.lower().startswith("application/cloudevents")
    if (protocol or "").upper() != "MQTT/3.1.1":
        return False
    event = decode_payload(payload)
    return isinstance(event, dict) and "specversion" in event


def _protocol_record(rec: Record, obj: dict, binding: Binding) -> None:
    rec.protocol = binding.protocol_name(obj)
    rec.headers = name_value_map(obj.get(binding.header_member)) or {} if binding.header_member else {}
    rec.props = binding.properties(obj) if binding.properties else {}
    content_type = binding.content_type(obj, rec.headers, rec.props)
    rec.address = binding.address(obj, rec.headers, rec.props)
    payload = MISSING
    for member in binding.payload_members:
        if obj.get(member) is not None:
            payload = obj[member]
            break
    if structured_mode(rec.protocol, content_type, payload):
        rec.is_structured = True
        event = payload
        if isinstance(payload, str):
            try:
                event = orjson.loads(payload)
            except orjson.JSONDecodeError:
                event = None
        if isinstance(event, dict):
            _structured(rec, event)
        rec.content_type = rec.attrs.get("datacontenttype") if rec.attrs else None
        if rec.content_type is None:
            rec.content_type = content_type
        return
    attrs = _with_prefix(rec.headers, binding.ce_prefixes)
    if binding.attribute_value is not None:
        attrs = {k: binding.attribute_value(v) if isinstance(v, str) else v for k, v in attrs.items()}
    for name in binding.content_type_attributes:
        attrs.pop(name, None)
    if content_type is not None:  # the binding's content type is `datacontenttype` (Kafka 3.2.1, HTTP 3.1.1, ...)
        attrs["datacontenttype"] = content_type
    if "specversion" in attrs or "type" in attrs or "id" in attrs:
        rec.attrs = attrs
    rec.content_type = attrs.get("datacontenttype", content_type) if rec.attrs else content_type
    rec.data = decode_payload(payload) if payload is not MISSING else MISSING
    if isinstance(rec.data, str):
        rec.payload_error = payload_error(rec.data, rec.content_type)
    rec.data_b64 = as_text(obj.get(binding.base64_member)) if binding.base64_member else None


def payload_content_type(rec: Record) -> str | None:
    """The payload's media type: an event's `datacontenttype`, another record's content type
    (header or property of its binding). A record that names none carries JSON (the CloudEvents
    JSON format says so of a structured event's `data`, and the landing zone reads any other
    such payload as JSON), unless its payload is base64, which says nothing of its type."""
    declared = rec.attrs.get("datacontenttype") if rec.attrs is not None else rec.content_type
    if declared is None and rec.data_b64 is None:
        return "application/json"
    return declared


def _fields(rec: Record) -> dict:
    fields = {}
    if rec.attrs is not None:
        for key, value in rec.attrs.items():
            fields["ce:" + key] = value
        # CloudEvents JSON format: a structured event without datacontenttype carries JSON
        if rec.is_structured and "datacontenttype" not in rec.attrs and rec.data_b64 is None:
            fields["ce:datacontenttype"] = "application/json"
    content_type = payload_content_type(rec)
    if content_type is not None:
        fields["payload:contenttype"] = content_type
    if rec.binding is not None:
        for name, value in rec.binding.options(rec.raw, rec.headers, rec.props).items():
            if isinstance(value, dict):
                for entry, text in value.items():
                    if text is not None:
                        fields[f"opt:{name}.{entry}"] = text
            elif value is not None:
                fields["opt:" + name] = value
    return fields
