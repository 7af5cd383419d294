"""Raw landed records -> one normalized shape, in Spark expressions (no Python per record).

Each record is parsed once into a VARIANT and recognised by its content, never its file name
(landing-zone.md, "Record kinds"):

* a `protocol` field: MQTT/3.1.1, MQTT/5.0, AMQP/1.0, HTTP, NATS and ROCKETMQ protocol records;
* `topic` + `partition` + `offset`: Kafka records (`kcat -J`);
* `specversion`: a CloudEvent in structured mode;
* anything else that is JSON is `not_an_event`; text that is not JSON is `malformed_json`.

CloudEvents attributes come from the structured event or, in binary mode, from the protocol's
headers per its CloudEvents binding: Kafka `ce_` headers, MQTT 5 user properties, AMQP
`cloudEvents:`/`cloudEvents_` application properties, HTTP and NATS `ce-` headers, RocketMQ
`CE_` properties; the protocol's content type becomes `datacontenttype`. A content type starting
with `application/cloudevents` means the payload is a structured-mode event.

The payload becomes `data_v` (VARIANT; a JSON string that holds a JSON object or array is
decoded once) or, when landed as base64 (`data_base64`, `payload_base64`), `data_b64`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

E = F.expr


def _empty_map() -> Column:
    return E("cast(map() as map<string,string>)")


def _get(path: str, dtype: str = "string", source: str = "v") -> Column:
    return E(f"try_variant_get({source}, '{path}', '{dtype}')")


def _name_value_map(path: str, source: str = "v") -> Column:
    """Headers as [{name, value}], {name: value} or kcat's flat [n1, v1, n2, v2] -> map, names lower-cased."""
    arr = f"try_variant_get({source}, '{path}', 'array<struct<name:string,value:string>>')"
    pairs = E(
        f"CASE WHEN forall({arr}, x -> x.name IS NOT NULL) THEN "
        f"map_from_entries(transform({arr}, x -> struct(lower(x.name), x.value))) END"
    )
    mapping = E(f"transform_keys(try_variant_get({source}, '{path}', 'map<string,string>'), (k, x) -> lower(k))")
    flat = E(
        f"map_from_arrays("
        f"transform(filter(try_variant_get({source}, '{path}', 'array<string>'), (x, i) -> i % 2 = 0), x -> lower(coalesce(x, ''))),"
        f"filter(try_variant_get({source}, '{path}', 'array<string>'), (x, i) -> i % 2 = 1))"
    )
    return F.coalesce(pairs, mapping, flat)


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


def decode_payload(payload: Column) -> Column:
    """A payload VARIANT; a JSON string holding an object or array is decoded once."""
    text = F.try_variant_get(payload, "$", "string")
    decoded = F.try_parse_json(text)
    is_doc = F.regexp_like(F.coalesce(text, F.lit("")), F.lit(r"^\s*[\[{]"))
    return F.when(is_doc & decoded.isNotNull(), decoded).otherwise(payload)


def normalize(records: DataFrame) -> DataFrame:
    """Adds: v, record_kind, protocol, is_structured, attrs, content_type, data_v, data_b64,
    address, fields (see matcher.py), pm (protocol metadata struct), pm_map."""
    df = records.withColumn("v", E("try_parse_json(raw)"))
    proto = F.upper(_get("$.protocol"))
    kind = (
        F.when(F.col("v").isNull(), F.lit("malformed_json"))
        .when(proto.startswith("MQTT"), "mqtt")
        .when(proto.startswith("AMQP"), "amqp")
        .when(proto.startswith("HTTP"), "http")
        .when(proto.startswith("NATS"), "nats")
        .when(proto.startswith("ROCKETMQ"), "rocketmq")
        .when(_get("$.topic").isNotNull() & _get("$.offset", "bigint").isNotNull(), "kafka")
        .when(_get("$.specversion").isNotNull(), "cloudevents")
        .otherwise("not_an_event")
    )
    df = df.withColumn("record_kind", kind)
    k = F.col("record_kind")

    headers = (
        F.when(k.isin("kafka", "http", "nats"), _name_value_map("$.headers"))
        .when(k == "mqtt", _name_value_map("$.user_properties"))
        .when(k == "amqp", _name_value_map("$.application_properties"))
        .when(k == "rocketmq", _name_value_map("$.properties"))
    )
    amqp_props = E("transform_keys(try_variant_get(v, '$.properties', 'map<string,string>'), (k, x) -> lower(replace(k, '_', '-')))")
    annotations = F.when(k == "amqp", _name_value_map("$.message_annotations"))
    df = df.withColumn("headers", headers).withColumn("amqp_props", amqp_props).withColumn("annotations", annotations)
    h = F.col("headers")
    content_type = (
        F.when(k.isin("kafka", "http", "nats"), h["content-type"])
        .when(k == "mqtt", _get("$.content_type"))
        .when(k == "amqp", F.col("amqp_props")["content-type"])
        .when(k == "rocketmq", F.coalesce(h["ce_contenttype"], h["ce_datacontenttype"]))
    )
    payload = F.coalesce(
        F.when(k.isin("kafka", "nats", "mqtt"), F.coalesce(F.try_variant_get("v", "$.payload", "variant"), F.try_variant_get("v", "$.value", "variant"))),
        F.when(k.isin("amqp", "http", "rocketmq"), F.try_variant_get("v", "$.body", "variant")),
    )
    df = df.withColumn("proto_content_type", content_type).withColumn("payload", decode_payload(payload))
    structured_inside = (k != "cloudevents") & F.lower(F.coalesce(F.col("proto_content_type"), F.lit(""))).startswith("application/cloudevents")
    df = df.withColumn("is_structured", (k == "cloudevents") | structured_inside)
    event = F.when(k == "cloudevents", F.col("v")).when(structured_inside, F.col("payload"))

    structured_attrs = F.map_filter(
        F.try_variant_get(event, "$", "map<string,string>"), lambda key, val: ~key.isin("data", "data_base64")
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

    data = F.when(F.col("is_structured"), decode_payload(F.try_variant_get(event, "$.data", "variant"))).otherwise(F.col("payload"))
    data_b64 = F.coalesce(
        F.when(F.col("is_structured"), F.try_variant_get(event, "$.data_base64", "string")),
        F.when(~F.col("is_structured"), _get("$.payload_base64")),
        F.when(~F.col("is_structured"), _get("$.body_base64")),
    )
    df = df.withColumn("data_v", data).withColumn("data_b64", data_b64)
    df = df.withColumn(
        "content_type", F.coalesce(F.col("attrs")["datacontenttype"], F.col("proto_content_type"))
    )

    # protocol metadata, typed (the per-message table columns) and as text (protocol_metadata)
    kafka_key = F.coalesce(_get("$.key"), _get("$.key_base64"))
    kafka_ts = F.coalesce(_get("$.ts", "bigint"), _get("$.timestamp", "bigint"))
    props = F.col("amqp_props")
    pm = F.struct(
        F.when(k == "kafka", _get("$.topic")).alias("kafka_topic"),
        F.when(k == "kafka", _get("$.partition", "int")).alias("kafka_partition"),
        F.when(k == "kafka", _get("$.offset", "bigint")).alias("kafka_offset"),
        F.when(k == "kafka", kafka_key).alias("kafka_key"),
        F.when(k == "kafka", F.timestamp_millis(kafka_ts)).alias("kafka_timestamp"),
        F.when(k == "kafka", _without_prefix(h, ("ce_", "content-type"))).alias("kafka_headers"),
        F.when(k == "mqtt", _get("$.topic_name")).alias("mqtt_topic_name"),
        F.when(k == "mqtt", _get("$.qos", "int")).alias("mqtt_qos"),
        F.when(k == "mqtt", _get("$.retain", "boolean")).alias("mqtt_retain"),
        F.when(k == "mqtt", _get("$.content_type")).alias("mqtt_content_type"),
        F.when(k == "mqtt", h).alias("mqtt_user_properties"),
        F.when(k == "amqp", props["message-id"]).alias("amqp_message_id"),
        F.when(k == "amqp", props["to"]).alias("amqp_to"),
        F.when(k == "amqp", props["subject"]).alias("amqp_subject"),
        F.when(k == "amqp", props["content-type"]).alias("amqp_content_type"),
        F.when(k == "amqp", _without_prefix(h, ("cloudevents:", "cloudevents_"))).alias("amqp_application_properties"),
        F.col("annotations").alias("amqp_message_annotations"),
        F.when(k == "http", F.upper(_get("$.method"))).alias("http_method"),
        F.when(k == "http", _get("$.path")).alias("http_path"),
        F.when(k == "http", _name_value_map("$.query")).alias("http_query"),
        F.when(k == "http", _without_prefix(h, ("ce-", "ce_", "content-type"))).alias("http_headers"),
        F.when(k == "nats", _get("$.subject")).alias("nats_subject"),
        F.when(k == "nats", _get("$.reply_to")).alias("nats_reply_to"),
        F.when(k == "nats", _without_prefix(h, ("ce-", "ce_", "content-type"))).alias("nats_headers"),
        F.when(k == "rocketmq", _get("$.topic")).alias("rocketmq_topic"),
        F.when(k == "rocketmq", _get("$.tags")).alias("rocketmq_tags"),
        F.when(k == "rocketmq", _get("$.keys")).alias("rocketmq_keys"),
        F.when(k == "rocketmq", _without_prefix(h, ("ce_",))).alias("rocketmq_properties"),
    )
    df = df.withColumn("pm", pm)
    p = F.col("pm")
    protocol = (
        F.when(k == "kafka", F.lit("KAFKA"))
        .when(k.isin("mqtt", "amqp", "http", "nats", "rocketmq"), _get("$.protocol"))
    )
    address = (
        F.when(k == "kafka", p.kafka_topic).when(k == "mqtt", p.mqtt_topic_name).when(k == "nats", p.nats_subject)
        .when(k == "http", p.http_path).when(k == "amqp", F.coalesce(p.amqp_to, p.amqp_subject)).when(k == "rocketmq", p.rocketmq_topic)
    )
    df = df.withColumn("protocol", protocol).withColumn("address", address)
    df = df.withColumn("fields", _fields(k, p, h, props)).withColumn("pm_map", _pm_map(k, p))
    return df.drop("headers", "amqp_props", "annotations", "payload", "proto_content_type")


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
        _prefixed("opt:header.", _name_value_map("$.header")),
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
