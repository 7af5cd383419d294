"""The protocol bindings of landed records, one declarative entry each (landing-zone.md "Record
kinds", and each protocol's CloudEvents binding).

An entry says how a record of that kind is recognised (`protocol` value prefix, or Kafka's
`topic` + `offset`), which member holds its headers or properties and with which prefix they
carry CloudEvents attributes, where its content type and payload are, what its address is (the
option message definitions are indexed by), its metadata columns in the per-message tables, the
`opt:` fields its protocol options are matched against, and the scalars kept in
`protocol_metadata` for definitions that accept any binding, how its attribute headers decode,
and, for the catalog, which options hold named entries. record.py reads a record through its
entry, message_tables.py takes the columns from here, the matcher the address, the catalog
normalizer the option shapes: adding a binding is one entry here (and its tests).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import unquote

from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, MapType, StringType, TimestampType

from ..jsonvalues import as_int, as_text, name_value_map, rfc3339

TEXT_MAP = MapType(StringType(), StringType(), True)


@dataclass(frozen=True)
class Column:
    name: str
    dtype: DataType
    comment: str
    get: Callable[[dict, dict, dict], Any]  # (record, headers, properties) -> value
    scalar: bool = True  # kept in `protocol_metadata` (text) for any-binding definitions


@dataclass(frozen=True)
class Binding:
    kind: str  # record kind
    family: str  # the catalog's protocol family (KAFKA, MQTT, ...)
    header_member: str | None  # the record member holding headers / properties
    ce_prefixes: tuple[str, ...]  # lower-case header prefixes of CloudEvents attributes ("" = all)
    content_type: Callable[[dict, dict, dict], Any]
    payload_members: tuple[str, ...]  # the first present one is the payload
    base64_member: str | None  # the payload as base64, when it is not text
    address_option: str | None  # the option naming where a message goes
    address: Callable[[dict, dict, dict], Any]
    columns: tuple[Column, ...]
    options: Callable[[dict, dict, dict], dict]  # option name -> value (sections: name -> map)
    protocol_name: Callable[[dict], str | None] = lambda rec: as_text(rec.get("protocol"))
    attribute_value: Callable[[str], str] | None = None  # decodes a CloudEvents attribute's header value
    # the catalog side (catalog/normalize.py): options holding several named entries, as a map
    # or as a list of {name, ...}; every other option is one property definition
    map_options: frozenset[str] = frozenset()
    list_options: frozenset[str] = frozenset()
    option_renames: tuple[tuple[str, str], ...] = ()  # spellings found in catalogs -> the spec's
    # options (or option sections) that are delivery settings, not part of the message: a broker
    # may change them in transit, so a declared value describes the producer and never decides
    # a match (the matcher skips them); see each binding for the spec's reasons
    delivery_options: frozenset[str] = frozenset()
    title: str = ""  # the protocol's name as people write it (Kafka, MQTT, ...)
    # the record's message properties beside its headers (AMQP's `properties` section)
    properties: Callable[[dict], dict] | None = None
    # attribute names (prefix removed) that carry the content type rather than an attribute of
    # that name (RocketMQ's CE_contenttype): the binding's content type replaces them
    content_type_attributes: tuple[str, ...] = ()
    # the catalog's protocol options: their types from the spec's protocol tables (options not
    # listed are strings), and of the options sections holding named entries (AMQP's)
    option_types: dict = field(default_factory=dict)
    section_types: dict = field(default_factory=dict)


def http_header_value(value: str) -> str:
    """A CloudEvents attribute from an HTTP header value (HTTP binding 3.1.3.2): first unescaped
    as an RFC 7230 quoted-string (3.2.6) when it is one, then percent-decoded once (UTF-8)."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    if "%" not in value:
        return value
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        return value  # not percent-encoded UTF-8: kept as sent


def _member(name: str) -> Callable[[dict, dict, dict], Any]:
    return lambda rec, headers, props: as_text(rec.get(name))


def _without(headers: dict, prefixes: tuple[str, ...]) -> dict:
    return {k: v for k, v in headers.items() if not k.startswith(prefixes)}


def _bool(value) -> bool | None:
    text = as_text(value)
    return {"true": True, "false": False}.get(text.lower()) if text is not None else None


def _moment_of_millis(value) -> dt.datetime | None:
    millis = as_int(value)
    if millis is None:
        return None
    try:
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    except OverflowError:
        return None


def _annotation(rec: dict, name: str) -> str | None:
    return (name_value_map(rec.get("message_annotations")) or {}).get(name)


def enqueued_time(value) -> dt.datetime | None:
    """The `x-opt-enqueued-time` annotation (Event Hubs, Service Bus) as a UTC timestamp: an AMQP
    timestamp is epoch milliseconds; RFC 3339 text is read too."""
    moment = _moment_of_millis(value)
    if moment is None and isinstance(value, str):
        moment = rfc3339(value)
    return moment.astimezone(dt.timezone.utc) if moment is not None else None


def amqp_properties(rec: dict) -> dict:
    """AMQP `properties`: names lower-case with `-` (message-id, content-type), values as text."""
    raw = rec.get("properties")
    if not isinstance(raw, dict):
        return {}
    return {str(k).lower().replace("_", "-"): as_text(v) for k, v in raw.items()}


KAFKA = Binding(
    kind="kafka", family="KAFKA", title="Kafka",
    option_types={"topic": "string", "partition": "integer", "key": "string", "key_base64": "binary"},
    header_member="headers", ce_prefixes=("ce_",),
    content_type=lambda rec, h, p: h.get("content-type"),
    payload_members=("payload", "value"), base64_member="payload_base64",
    address_option="topic", address=_member("topic"),
    columns=(
        Column("kafka_topic", StringType(), "Kafka topic.", _member("topic")),
        Column("kafka_partition", IntegerType(), "Kafka partition.", lambda rec, h, p: as_int(rec.get("partition"), 32)),
        Column("kafka_offset", LongType(), "Offset within the partition.", lambda rec, h, p: as_int(rec.get("offset"))),
        Column("kafka_key", StringType(), "Record key (text, or base64 when binary).",
               lambda rec, h, p: as_text(rec["key"]) if rec.get("key") is not None else as_text(rec.get("key_base64"))),
        Column("kafka_timestamp", TimestampType(), "Record timestamp.",
               lambda rec, h, p: _moment_of_millis(rec["ts"] if rec.get("ts") is not None else rec.get("timestamp"))),
        Column("kafka_headers", TEXT_MAP, "Record headers other than CloudEvents attributes.",
               lambda rec, h, p: _without(h, ("ce_", "content-type")), scalar=False),
    ),
    options=lambda rec, h, p: {"topic": as_text(rec.get("topic")), "partition": as_text(as_int(rec.get("partition"), 32)),
                               "key": as_text(rec["key"]) if rec.get("key") is not None else as_text(rec.get("key_base64")),
                               "headers": h},
    protocol_name=lambda rec: "KAFKA",
    map_options=frozenset({"headers"}),
)

MQTT = Binding(
    kind="mqtt", family="MQTT", title="MQTT",
    option_types={"qos": "integer", "retain": "boolean", "topic_name": "string", "payload_format": "integer",
                  "message_expiry_interval": "integer", "response_topic": "uritemplate", "correlation_data": "binary",
                  "content_type": "symbol"},
    header_member="user_properties", ce_prefixes=("",),  # MQTT 5: properties named as the attributes
    content_type=lambda rec, h, p: as_text(rec.get("content_type")),
    payload_members=("payload", "value"), base64_member="payload_base64",
    address_option="topic_name", address=_member("topic_name"),
    columns=(
        Column("mqtt_topic_name", StringType(), "MQTT topic name.", _member("topic_name")),
        Column("mqtt_qos", IntegerType(), "MQTT quality of service (0, 1, 2).", lambda rec, h, p: as_int(rec.get("qos"), 32)),
        Column("mqtt_retain", BooleanType(), "MQTT retain flag.", lambda rec, h, p: _bool(rec.get("retain"))),
        Column("mqtt_content_type", StringType(), "MQTT 5 content type.", _member("content_type")),
        Column("mqtt_user_properties", TEXT_MAP, "MQTT 5 user properties other than CloudEvents attributes.",
               lambda rec, h, p: h, scalar=False),
    ),
    options=lambda rec, h, p: {"topic_name": as_text(rec.get("topic_name")), "qos": as_text(as_int(rec.get("qos"), 32)),
                               "retain": as_text(_bool(rec.get("retain"))), "content_type": as_text(rec.get("content_type")),
                               "user_properties": h, "payload_format": as_text(as_int(rec.get("payload_format_indicator"), 32)),
                               "response_topic": as_text(rec.get("response_topic")),
                               "correlation_data": as_text(rec.get("correlation_data"))},
    list_options=frozenset({"user_properties"}), option_renames=(("topic", "topic_name"),),
    # MQTT 5.0: a subscriber gets the minimum of the published and the subscription QoS (4.3),
    # RETAIN is set only when a retained message is sent on subscribing (3.3.1.3), the Message
    # Expiry Interval is forwarded minus the time waited in the server (3.3.2.3.3), and a Topic
    # Alias replaces the topic name per connection (3.3.2.3.4). The rest is forwarded unaltered.
    delivery_options=frozenset({"qos", "retain", "message_expiry_interval", "topic_alias"}),
)

AMQP = Binding(
    kind="amqp", family="AMQP", title="AMQP", header_member="application_properties", ce_prefixes=("cloudevents:", "cloudevents_"),
    properties=amqp_properties,
    section_types={
        "properties": {"message-id": "string", "user-id": "binary", "to": "uritemplate", "subject": "string",
                       "reply-to": "uritemplate", "correlation-id": "string", "content-type": "symbol",
                       "content-encoding": "symbol", "absolute-expiry-time": "timestamp", "group-id": "string",
                       "group-sequence": "integer", "reply-to-group-id": "uritemplate"},
        "header": {"durable": "boolean", "priority": "integer", "ttl": "integer", "first-acquirer": "boolean",
                   "delivery-count": "integer"},
    },
    content_type=lambda rec, h, p: p.get("content-type"),
    payload_members=("body",), base64_member="body_base64",
    address_option=None, address=lambda rec, h, p: p.get("to") if p.get("to") is not None else p.get("subject"),
    columns=(
        Column("amqp_message_id", StringType(), "AMQP properties message-id.", lambda rec, h, p: p.get("message-id")),
        Column("amqp_to", StringType(), "AMQP properties to (address).", lambda rec, h, p: p.get("to")),
        Column("amqp_subject", StringType(), "AMQP properties subject.", lambda rec, h, p: p.get("subject")),
        Column("amqp_content_type", StringType(), "AMQP properties content-type.", lambda rec, h, p: p.get("content-type")),
        Column("amqp_application_properties", TEXT_MAP, "AMQP application properties other than CloudEvents attributes.",
               lambda rec, h, p: _without(h, ("cloudevents:", "cloudevents_")), scalar=False),
        Column("amqp_message_annotations", TEXT_MAP, "AMQP message annotations.",
               lambda rec, h, p: name_value_map(rec.get("message_annotations")), scalar=False),
        # Event Hubs' (and Service Bus') annotations of every message, typed as they are meant
        Column("amqp_enqueued_time", TimestampType(), "When the broker enqueued the message (x-opt-enqueued-time), UTC.",
               lambda rec, h, p: enqueued_time(_annotation(rec, "x-opt-enqueued-time"))),
        Column("amqp_sequence_number", LongType(), "The message's sequence number in its partition (x-opt-sequence-number).",
               lambda rec, h, p: as_int(_annotation(rec, "x-opt-sequence-number"))),
        Column("amqp_offset", LongType(), "The message's offset in its partition (x-opt-offset).",
               lambda rec, h, p: as_int(_annotation(rec, "x-opt-offset"))),
    ),
    options=lambda rec, h, p: {"properties": p, "application_properties": h,
                               "message_annotations": name_value_map(rec.get("message_annotations")) or {},
                               "header": name_value_map(rec.get("header")) or {}},
    map_options=frozenset({"properties", "application_properties", "message_annotations", "delivery_annotations", "header", "footer"}),
    # AMQP 1.0 3.2.1: the header carries "transport headers" (durable, priority, ttl,
    # first-acquirer, delivery-count: set or changed by intermediaries); 3.2.2: delivery
    # annotations are for one hop only
    delivery_options=frozenset({"header", "delivery_annotations"}),
)

HTTP = Binding(
    kind="http", family="HTTP", title="HTTP",
    option_types={"path": "uritemplate", "method": "string", "status": "string"},
    header_member="headers", ce_prefixes=("ce-", "ce_"), attribute_value=http_header_value,
    content_type=lambda rec, h, p: h.get("content-type"),
    payload_members=("body",), base64_member="body_base64",
    address_option="path", address=_member("path"),
    columns=(
        Column("http_method", StringType(), "HTTP request method.", lambda rec, h, p: (as_text(rec.get("method")) or "").upper() or None),
        Column("http_path", StringType(), "HTTP request path.", _member("path")),
        Column("http_query", TEXT_MAP, "HTTP query parameters.", lambda rec, h, p: name_value_map(rec.get("query")), scalar=False),
        Column("http_headers", TEXT_MAP, "HTTP headers other than CloudEvents attributes.",
               lambda rec, h, p: _without(h, ("ce-", "ce_", "content-type")), scalar=False),
    ),
    options=lambda rec, h, p: {"method": (as_text(rec.get("method")) or "").upper() or None, "path": as_text(rec.get("path")),
                               "headers": h, "query": name_value_map(rec.get("query")) or {}},
    map_options=frozenset({"query"}), list_options=frozenset({"headers"}),
)

NATS = Binding(
    kind="nats", family="NATS", title="NATS",
    option_types={"subject": "uritemplate", "reply_to": "uritemplate"},
    header_member="headers", ce_prefixes=("ce-", "ce_"),
    attribute_value=http_header_value,  # NATS headers are HTTP-style headers (NATS binding 3.1.3.2)
    content_type=lambda rec, h, p: h.get("content-type"),
    payload_members=("payload", "value"), base64_member="payload_base64",
    address_option="subject", address=_member("subject"),
    columns=(
        Column("nats_subject", StringType(), "NATS subject.", _member("subject")),
        Column("nats_reply_to", StringType(), "NATS reply subject.", _member("reply_to")),
        Column("nats_headers", TEXT_MAP, "NATS headers other than CloudEvents attributes.",
               lambda rec, h, p: _without(h, ("ce-", "ce_", "content-type")), scalar=False),
    ),
    options=lambda rec, h, p: {"subject": as_text(rec.get("subject")), "headers": h},
    list_options=frozenset({"headers"}),
)

ROCKETMQ = Binding(
    kind="rocketmq", family="ROCKETMQ", title="RocketMQ", header_member="properties", ce_prefixes=("ce_",),
    content_type_attributes=("contenttype",),
    content_type=lambda rec, h, p: h.get("ce_contenttype") if h.get("ce_contenttype") is not None else h.get("ce_datacontenttype"),
    payload_members=("body",), base64_member="body_base64",
    address_option="topic", address=_member("topic"),
    columns=(
        Column("rocketmq_topic", StringType(), "RocketMQ topic.", _member("topic")),
        Column("rocketmq_tags", StringType(), "RocketMQ tags.", _member("tags")),
        Column("rocketmq_keys", StringType(), "RocketMQ keys.", _member("keys")),
        Column("rocketmq_properties", TEXT_MAP, "RocketMQ properties other than CloudEvents attributes.",
               lambda rec, h, p: _without(h, ("ce_",)), scalar=False),
    ),
    options=lambda rec, h, p: {"topic": as_text(rec.get("topic")), "tags": as_text(rec.get("tags")), "keys": as_text(rec.get("keys"))},
)

BINDINGS: dict[str, Binding] = {b.kind: b for b in (KAFKA, MQTT, AMQP, HTTP, NATS, ROCKETMQ)}
BY_FAMILY: dict[str, Binding] = {b.family: b for b in BINDINGS.values()}
# the `protocol` member's value (upper-cased prefix) -> record kind; Kafka records have none
PROTOCOL_PREFIXES = {"MQTT": "mqtt", "AMQP": "amqp", "HTTP": "http", "NATS": "nats", "ROCKETMQ": "rocketmq"}


def binding_of(rec: dict) -> Binding | None:
    """The binding a JSON object is a record of, or None (a structured CloudEvent, or not an event)."""
    protocol = rec.get("protocol")
    if protocol is not None:
        head = as_text(protocol).upper()
        for prefix, kind in PROTOCOL_PREFIXES.items():
            if head.startswith(prefix):
                return BINDINGS[kind]
    if rec.get("topic") is not None and as_int(rec.get("offset")) is not None:
        return KAFKA
    return None
