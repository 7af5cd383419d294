"""The dead-letter table: every landed record no message table takes, with the reason why."""

from __future__ import annotations

from typing import Any, NamedTuple

from pyspark.sql.types import ArrayType, DateType, LongType, MapType, StringType, StructField, StructType, TimestampType

DEADLETTER_TABLE = "deadletter"
SOURCE_FIELDS = ("What the landing layout read from the file's folders (Event Hubs Capture: namespace, eventhub, "
                 "partition; Kafka Connect: topic; a template's {fields}); null in the day-folder layout.")

# reason -> what it means (shown in the README and the Dagster UI)
REASONS = {
    "malformed_json": "the line (or file) is not strict JSON (NaN, a duplicate key, an integer beyond 64 bits, ...)",
    "invalid_utf8": "the line is not valid UTF-8 text",
    "too_deep": "the record nests objects and arrays deeper than the limit",
    "not_an_event": "JSON, but neither a CloudEvent nor a protocol record",
    "missing_required_attribute": "a CloudEvent without id, source, type or specversion, or without an attribute its definition requires",
    "invalid_attribute": ("a CloudEvent that breaks CloudEvents 1.0: an attribute name not lower-case a-z/0-9, an empty "
                          "id, source, type or subject, id/source/specversion/type/... not a JSON string in a JSON "
                          "event, or a time that is not an RFC 3339 timestamp"),
    "unsupported_specversion": "a CloudEvent whose specversion is not 1.0",
    "no_match": "no message definition matches the record",
    "ambiguous": "several definitions match and the payload does not single one out",
    "schema_violation": ("the one matching definition's data schema rejects the payload (several matching: every "
                         "one's does, the detail names each candidate's first violation)"),
    "malformed_payload": "the payload cannot be decoded (invalid base64 or Avro binary)",
    "pattern_timeout": ("a value took a backtracking pattern of the data schema (a backreference or lookaround) longer "
                        "than its time budget; the detail names the field and the pattern"),
    "record_too_large": "the record is longer than the size limit (its first bytes are kept)",
    "corrupt_file": "a compressed, Avro or Parquet file breaks off; the records before the break are read",
    "unsupported_format": "a landed file in no format catalake reads (its first bytes are named in the detail)",
}


def _c(name, dtype, nullable, comment):
    return StructField(name, dtype, nullable, {"comment": comment})


NOT_JSON = ("malformed_json", "invalid_utf8", "too_deep")  # reasons of a line that is not read as JSON

SCHEMA = StructType([
    _c("reason", StringType(), False, "Machine-readable reason: " + ", ".join(REASONS)),
    _c("detail", StringType(), True, "What exactly failed (first validation errors, missing attributes, ...)."),
    _c("candidates", ArrayType(StringType(), False), True, "Message definitions (xids) that matched the record's metadata."),
    _c("record_kind", StringType(), True,
       "cloudevents, kafka, mqtt, amqp, http, nats, rocketmq, plain (a JSON object of no binding), not_an_event, malformed_json."),
    _c("protocol", StringType(), True, "Protocol binding the record arrived by."),
    _c("event_type", StringType(), True, "CloudEvents type, when there is one."),
    _c("event_id", StringType(), True, "CloudEvents id, when there is one."),
    _c("source_file", StringType(), False, "Landed file the record was read from, as a path below the landing root (CATALAKE_LANDING)."),
    _c("source_line", LongType(), False, "Line (JSON lines), element (batch) or record (Avro, Parquet) number in the file, from 1."),
    _c("raw", StringType(), True, "The record as landed."),
    _c("ingested_at", TimestampType(), False, "When the partition run that wrote the row started."),
    _c("event_date", DateType(), False, "Landing partition (day) the record came from."),
    _c("expectations", ArrayType(StringType(), False), True,
       "For schema_violation: the rules the record broke, as `<column>:<rule>` (the expectation ids of its suite, "
       "and `<path>:type` for a value of the wrong kind); for a record several definitions matched and none accepted, "
       "each candidate's, as `<candidate xid>#<column>:<rule>`."),
    _c("source_fields", MapType(StringType(), StringType(), True), True, SOURCE_FIELDS),
])


class DeadLetterRow(NamedTuple):
    """One dead-letter row as the classifier writes it: the table's columns in order, but for the
    partition column (the run's day)."""

    reason: str
    detail: str | None
    candidates: list
    record_kind: str | None
    protocol: str | None
    event_type: str | None
    event_id: str | None
    source_file: str
    source_line: int
    raw: str | None
    ingested_at: Any
    expectations: list
    source_fields: dict | None


assert DeadLetterRow._fields == tuple(f.name for f in SCHEMA.fields if f.name != "event_date")
