"""Raw landed records -> one normalized shape, in Spark expressions (no Python per record).

Each record is parsed once with `from_json` into a fixed struct of the fields any record kind
uses (`RECORD`): scalars as text, headers and property sections as their JSON text (parsed again
only for the records of the kind that has them, a few short strings), payloads as VARIANT. The
kind is recognised by content, never by file name (landing-zone.md, "Record kinds"):

* a `protocol` field: MQTT/3.1.1, MQTT/5.0, AMQP/1.0, HTTP, NATS and ROCKETMQ protocol records;
* `topic` + `partition` + `offset`: Kafka records (`kcat -J`);
* `specversion`: a CloudEvent in structured mode;
* anything else that is JSON is `not_an_event`; text that is not JSON is `malformed_json`.

Why not one VARIANT per record and a `try_variant_get` per field: Spark 4.1 copies the whole
record's variant out of the row on every access and builds a Cast expression per converted
value (JFR profile and timings in benchmarks/RESULTS.md).

CloudEvents attributes come from the structured event (every top-level member but `data` and
`data_base64`, as text) or, in binary mode, from the protocol's headers per its CloudEvents
binding: Kafka `ce_` headers, MQTT 5 user properties, AMQP `cloudEvents:`/`cloudEvents_`
application properties, HTTP and NATS `ce-` headers, RocketMQ `CE_` properties; the protocol's
content type becomes `datacontenttype`. A content type starting with `application/cloudevents`
means the payload is a structured-mode event.

The payload becomes `data_v` (VARIANT; a JSON string that holds a JSON object or array is
decoded once) or, when landed as base64 (`data_base64`, `payload_base64`), `data_b64`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, VariantType

E = F.expr
TEXT_FIELDS = (
    "protocol", "specversion", "data_base64",
    # Kafka (kcat -J)
    "topic", "partition", "offset", "key", "key_base64", "ts", "timestamp", "payload_base64",
    # MQTT, AMQP, HTTP, NATS, RocketMQ
    "topic_name", "qos", "retain", "content_type", "method", "path", "subject", "reply_to", "tags", "keys", "body_base64",
    # sections as JSON text: parsed only for the kind that has them
    "headers", "user_properties", "application_properties", "properties", "message_annotations", "header", "query",
)
VARIANT_FIELDS = ("data", "payload", "value", "body")
CORRUPT = "_corrupt"
RECORD = StructType(
    [StructField(n, StringType()) for n in TEXT_FIELDS]
    + [StructField(n, VariantType()) for n in VARIANT_FIELDS]
    + [StructField(CORRUPT, StringType())]
)
EVENT_DATA = "struct<data:variant,data_base64:string>"


def _empty_map() -> Column:
    return E("cast(map() as map<string,string>)")


def _name_value_map(text: Column) -> Column:
    """Headers as JSON text: [{name, value}], {name: value} or kcat's flat [n1, v1, n2, v2] -> map,
    names lower-cased."""
    pairs = F.from_json(text, "array<struct<name:string,value:string>>")
    from_pairs = F.map_from_entries(F.transform(F.filter(pairs, lambda x: x["name"].isNotNull()),
                                                lambda x: F.struct(F.lower(x["name"]), x["value"])))
    flat = F.from_json(text, "array<string>")
    from_flat = F.map_from_arrays(
        F.transform(F.filter(flat, lambda x, i: i % 2 == 0), lambda x: F.lower(F.coalesce(x, F.lit("")))),
        F.filter(flat, lambda x, i: i % 2 == 1),
    )
    from_object = F.transform_keys(F.from_json(text, "map<string,string>"), lambda k, v: F.lower(k))
    start = F.substring(F.ltrim(text), 1, 1)
    return F.when(start == "{", from_object).when(start == "[", F.coalesce(from_pairs, from_flat))


def _with_prefix(m: Column, prefixes: tuple[str, ...]) -> Column:
    """The entries of `m` whose key starts with one of `prefixes`, the prefix removed."""
    def matches(k: Column) -> Column:
        cond = k.startswith(prefixes[0])
        for p in prefixes[1:]:
            cond = cond | k.startswith(p)
        return cond

    def strip(k: Column) -> Column:
        out = F.when(k.startswith(prefixes[0]), F.substring(k, len(prefixes[0]) + 1, 1 << 16))
        for p in prefixes[1:]:
            out = out.when(k.startswith(p), F.substring(k, len(p) + 1, 1 << 16))
        return out

    return F.transform_keys(F.map_filter(m, lambda k, v: matches(k)), lambda k, v: strip(k))


def _without_prefix(m: Column, prefixes: tuple[str, ...]) -> Column:
    def keep(k: Column) -> Column:
        cond = ~k.startswith(prefixes[0])
        for p in prefixes[1:]:
            cond = cond & ~k.startswith(p)
        return cond

    return F.map_filter(m, lambda k, v: keep(k))


def _variant_text(value: Column) -> Column:
    """The text of a VARIANT that is a JSON string, else null (schema_of_variant is cheap; casting
    a non-string to text would serialize it)."""
    return F.when(F.schema_of_variant(value) == "STRING", F.try_variant_get(value, "$", "string"))


def decode_payload(payload: Column) -> Column:
    """A payload VARIANT; a JSON string holding an object or array is decoded once."""
    text = _variant_text(payload)
    decoded = F.when(F.regexp_like(text, F.lit(r"^\s*[\[{]")), F.try_parse_json(text))
    return F.coalesce(decoded, payload)


def record_kind(j: Column, raw: Column) -> Column:
    """The record kind (landing-zone.md "Record kinds") from the parsed record `j`."""
    # from_json (like parse_json) accepts an object followed by other text: still malformed JSON
    ends_object = raw.endswith(F.lit("}")) | F.rtrim(raw, F.lit(" \t\r\n")).endswith(F.lit("}"))  # the trim only for the rare rest
    proto = F.upper(j["protocol"])
    return (
        F.when(j.isNull() | j[CORRUPT].isNotNull(),  # not an object: valid JSON (array, scalar) or not JSON at all
               F.when(F.try_parse_json(raw).isNull(), F.lit("malformed_json")).otherwise(F.lit("not_an_event")))
        .when(~ends_object, F.lit("malformed_json"))
        .when(proto.startswith("MQTT"), "mqtt")
        .when(proto.startswith("AMQP"), "amqp")
        .when(proto.startswith("HTTP"), "http")
        .when(proto.startswith("NATS"), "nats")
        .when(proto.startswith("ROCKETMQ"), "rocketmq")
        .when(j["topic"].isNotNull() & j["offset"].try_cast("bigint").isNotNull(), "kafka")
        .when(j["specversion"].isNotNull(), "cloudevents")
        .otherwise("not_an_event")
    )


def normalize(records: DataFrame) -> DataFrame:
    """Adds: record_kind, protocol, is_structured, attrs, content_type, data_v, data_b64, address,
    fields (see matcher.py), pm (protocol metadata struct), pm_map."""
    df = records.withColumn("j", F.from_json("raw", RECORD, {"columnNameOfCorruptRecord": CORRUPT}))
    j = F.col("j")
    df = df.withColumn("record_kind", record_kind(j, F.col("raw")))
    k = F.col("record_kind")

    # the section that carries this kind's headers, parsed by one expression
    header_text = (
        F.when(k.isin("kafka", "http", "nats"), j["headers"])
        .when(k == "mqtt", j["user_properties"])
        .when(k == "amqp", j["application_properties"])
        .when(k == "rocketmq", j["properties"])
    )
    headers = _name_value_map(header_text)
    amqp_props = F.when(k == "amqp", F.transform_keys(F.from_json(j["properties"], "map<string,string>"),
                                                       lambda key, x: F.lower(F.replace(key, F.lit("_"), F.lit("-")))))
    annotations = F.when(k == "amqp", _name_value_map(j["message_annotations"]))
    df = df.withColumn("headers", headers).withColumn("amqp_props", amqp_props).withColumn("annotations", annotations)
    h = F.col("headers")
    content_type = (
        F.when(k.isin("kafka", "http", "nats"), h["content-type"])
        .when(k == "mqtt", j["content_type"])
        .when(k == "amqp", F.col("amqp_props")["content-type"])
        .when(k == "rocketmq", F.coalesce(h["ce_contenttype"], h["ce_datacontenttype"]))
    )
    payload = (
        F.when(k.isin("kafka", "nats", "mqtt"), F.coalesce(j["payload"], j["value"]))
        .when(k.isin("amqp", "http", "rocketmq"), j["body"])
    )
    df = df.withColumn("proto_content_type", content_type).withColumn("payload", payload)
    structured_inside = (k != "cloudevents") & F.lower(F.coalesce(F.col("proto_content_type"), F.lit(""))).startswith("application/cloudevents")
    df = df.withColumn("is_structured", (k == "cloudevents") | structured_inside)
    # the structured event as JSON text: the record itself, or the protocol payload (text, or an object)
    event_text = F.when(k == "cloudevents", F.col("raw")).when(
        structured_inside, F.coalesce(_variant_text(F.col("payload")), F.to_json(F.col("payload"))))
    df = df.withColumn("event_text", event_text)
    event = F.when(k == "cloudevents", F.struct(j["data"].alias("data"), j["data_base64"].alias("data_base64"))).when(
        structured_inside, F.from_json(F.col("event_text"), EVENT_DATA))
    df = df.withColumn("event", event)

    structured_attrs = F.map_filter(
        F.from_json(F.col("event_text"), "map<string,string>"), lambda key, val: ~key.isin("data", "data_base64")
    )
    binary_attrs = (
        F.when(k == "kafka", _with_prefix(h, ("ce_",)))
        .when(k == "mqtt", h)  # MQTT 5 binding: user properties named as the attributes
        .when(k == "amqp", _with_prefix(h, ("cloudevents:", "cloudevents_")))
        .when(k.isin("http", "nats"), _with_prefix(h, ("ce-", "ce_")))
        .when(k == "rocketmq", _with_prefix(h, ("ce_",)))
    )
    binary_attrs = F.when(
        F.col("proto_content_type").isNotNull() & ~F.map_contains_key(binary_attrs, "datacontenttype"),
        F.map_concat(binary_attrs, F.create_map(F.lit("datacontenttype"), F.col("proto_content_type"))),
    ).otherwise(binary_attrs)
    # RocketMQ names the content type CE_contenttype
    binary_attrs = F.when(k == "rocketmq", F.map_filter(binary_attrs, lambda key, val: key != "contenttype")).otherwise(binary_attrs)
    has_ce_headers = F.map_contains_key(binary_attrs, "specversion") | F.map_contains_key(binary_attrs, "type") | F.map_contains_key(binary_attrs, "id")
    attrs = F.when(F.col("is_structured"), structured_attrs).when(has_ce_headers, binary_attrs)
    df = df.withColumn("attrs", attrs).withColumn("is_ce", F.col("attrs").isNotNull())

    data = F.when(F.col("is_structured"), decode_payload(F.col("event.data"))).otherwise(decode_payload(F.col("payload")))
    data_b64 = F.when(F.col("is_structured"), F.col("event.data_base64")).otherwise(F.coalesce(j["payload_base64"], j["body_base64"]))
    df = df.withColumn("data_v", data).withColumn("data_b64", data_b64)
    df = df.withColumn(
        "content_type", F.coalesce(F.col("attrs")["datacontenttype"], F.col("proto_content_type"))
    )

    # protocol metadata, typed (the per-message table columns) and as text (protocol_metadata)
    kafka_key = F.coalesce(j["key"], j["key_base64"])
    kafka_ts = F.coalesce(j["ts"], j["timestamp"]).try_cast("bigint")
    props = F.col("amqp_props")
    pm = F.struct(
        F.when(k == "kafka", j["topic"]).alias("kafka_topic"),
        F.when(k == "kafka", j["partition"].try_cast("int")).alias("kafka_partition"),
        F.when(k == "kafka", j["offset"].try_cast("bigint")).alias("kafka_offset"),
        F.when(k == "kafka", kafka_key).alias("kafka_key"),
        F.when(k == "kafka", F.timestamp_millis(kafka_ts)).alias("kafka_timestamp"),
        F.when(k == "kafka", _without_prefix(h, ("ce_", "content-type"))).alias("kafka_headers"),
        F.when(k == "mqtt", j["topic_name"]).alias("mqtt_topic_name"),
        F.when(k == "mqtt", j["qos"].try_cast("int")).alias("mqtt_qos"),
        F.when(k == "mqtt", j["retain"].try_cast("boolean")).alias("mqtt_retain"),
        F.when(k == "mqtt", j["content_type"]).alias("mqtt_content_type"),
        F.when(k == "mqtt", h).alias("mqtt_user_properties"),
        F.when(k == "amqp", props["message-id"]).alias("amqp_message_id"),
        F.when(k == "amqp", props["to"]).alias("amqp_to"),
        F.when(k == "amqp", props["subject"]).alias("amqp_subject"),
        F.when(k == "amqp", props["content-type"]).alias("amqp_content_type"),
        F.when(k == "amqp", _without_prefix(h, ("cloudevents:", "cloudevents_"))).alias("amqp_application_properties"),
        F.col("annotations").alias("amqp_message_annotations"),
        F.when(k == "http", F.upper(j["method"])).alias("http_method"),
        F.when(k == "http", j["path"]).alias("http_path"),
        F.when(k == "http", _name_value_map(j["query"])).alias("http_query"),
        F.when(k == "http", _without_prefix(h, ("ce-", "ce_", "content-type"))).alias("http_headers"),
        F.when(k == "nats", j["subject"]).alias("nats_subject"),
        F.when(k == "nats", j["reply_to"]).alias("nats_reply_to"),
        F.when(k == "nats", _without_prefix(h, ("ce-", "ce_", "content-type"))).alias("nats_headers"),
        F.when(k == "rocketmq", j["topic"]).alias("rocketmq_topic"),
        F.when(k == "rocketmq", j["tags"]).alias("rocketmq_tags"),
        F.when(k == "rocketmq", j["keys"]).alias("rocketmq_keys"),
        F.when(k == "rocketmq", _without_prefix(h, ("ce_",))).alias("rocketmq_properties"),
    )
    df = df.withColumn("pm", pm)
    p = F.col("pm")
    protocol = (
        F.when(k == "kafka", F.lit("KAFKA"))
        .when(k.isin("mqtt", "amqp", "http", "nats", "rocketmq"), j["protocol"])
    )
    address = (
        F.when(k == "kafka", p.kafka_topic).when(k == "mqtt", p.mqtt_topic_name).when(k == "nats", p.nats_subject)
        .when(k == "http", p.http_path).when(k == "amqp", F.coalesce(p.amqp_to, p.amqp_subject)).when(k == "rocketmq", p.rocketmq_topic)
    )
    df = df.withColumn("protocol", protocol).withColumn("address", address)
    df = df.withColumn("fields", _fields(k, p, h, props)).withColumn("pm_map", _pm_map(k, p))
    return df.drop("j", "headers", "amqp_props", "annotations", "payload", "proto_content_type", "event_text", "event")


def _opt(name: str, value: Column) -> Column:
    return F.create_map(F.lit(f"opt:{name}"), value.cast("string"))


def _prefixed(prefix: str, m: Column) -> Column:
    return F.transform_keys(F.coalesce(m, _empty_map()), lambda key, val: F.concat(F.lit(prefix), key))


def _fields(k: Column, p: Column, h: Column, props: Column) -> Column:
    """What protocol options constrain, as `opt:<option>` / `opt:<section>.<entry>` -> text.

    The keys are the catalog's protocol option names (normalize.py), so a definition's checks
    look them up directly (matcher.py)."""
    kafka = F.map_concat(
        _opt("topic", p.kafka_topic), _opt("partition", p.kafka_partition), _opt("key", p.kafka_key),
        _prefixed("opt:headers.", h),
    )
    mqtt = F.map_concat(
        _opt("topic_name", p.mqtt_topic_name), _opt("qos", p.mqtt_qos), _opt("retain", F.lower(p.mqtt_retain.cast("string"))),
        _opt("content_type", p.mqtt_content_type), _prefixed("opt:user_properties.", h),
    )
    amqp = F.map_concat(
        _prefixed("opt:properties.", props), _prefixed("opt:application_properties.", h),
        _prefixed("opt:message_annotations.", F.col("annotations")),
        _prefixed("opt:header.", _name_value_map(F.col("j")["header"])),
    )
    http = F.map_concat(
        _opt("method", p.http_method), _opt("path", p.http_path), _prefixed("opt:headers.", h),
        _prefixed("opt:query.", p.http_query),
    )
    nats = F.map_concat(_opt("subject", p.nats_subject), _prefixed("opt:headers.", h))
    rocketmq = F.map_concat(_opt("topic", p.rocketmq_topic), _opt("tags", p.rocketmq_tags), _opt("keys", p.rocketmq_keys))
    options = (
        F.when(k == "kafka", kafka).when(k == "mqtt", mqtt).when(k == "amqp", amqp).when(k == "http", http)
        .when(k == "nats", nats).when(k == "rocketmq", rocketmq).otherwise(_empty_map())
    )
    # CloudEvents JSON format: a structured event without datacontenttype carries JSON
    implied = F.when(
        F.col("is_structured") & F.col("attrs").isNotNull() & ~F.map_contains_key("attrs", "datacontenttype") & F.col("data_b64").isNull(),
        F.map_concat(F.col("attrs"), F.create_map(F.lit("datacontenttype"), F.lit("application/json"))),
    ).otherwise(F.col("attrs"))
    return F.map_filter(F.map_concat(_prefixed("ce:", implied), options), lambda key, val: val.isNotNull())


def _pm_map(k: Column, p: Column) -> Column:
    """Scalar protocol metadata as text, for tables of definitions that accept any binding."""
    def scalars(*names: str) -> Column:
        return F.map_filter(
            F.create_map(*[x for n in names for x in (F.lit(n.split("_", 1)[1]), p[n].cast("string"))]),
            lambda key, val: val.isNotNull(),
        )

    return (
        F.when(k == "kafka", scalars("kafka_topic", "kafka_partition", "kafka_offset", "kafka_key", "kafka_timestamp"))
        .when(k == "mqtt", scalars("mqtt_topic_name", "mqtt_qos", "mqtt_retain", "mqtt_content_type"))
        .when(k == "amqp", scalars("amqp_message_id", "amqp_to", "amqp_subject", "amqp_content_type"))
        .when(k == "http", scalars("http_method", "http_path"))
        .when(k == "nats", scalars("nats_subject", "nats_reply_to"))
        .when(k == "rocketmq", scalars("rocketmq_topic", "rocketmq_tags", "rocketmq_keys"))
    )
