"""Payload typing and native schema checks (payload.py) on real Spark."""

import json

from pyspark.sql import functions as F

from catalake.platform.payload import typed_payloads
from catalake.platform.schemas.json_schema import json_schema_to_spark

SCHEMA = {
    "type": "object",
    "required": ["id", "readings"],
    "properties": {
        "id": {"type": "string", "pattern": "^D-"},
        "readings": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "labels": {"type": "object", "additionalProperties": {"type": "number"}},
    },
}


def check(spark, payloads):
    dtype, _ = json_schema_to_spark(SCHEMA)
    df = spark.createDataFrame([(json.dumps(p),) for p in payloads], "text string")
    df = typed_payloads(df.withColumn("v", F.parse_json("text")), [("v", dtype, {}, "data", "true")])
    return df.select("data", F.col("data_errors").alias("errors")).collect()


def test_arrays_maps_and_constraints(spark):
    rows = check(spark, [
        {"id": "D-1", "readings": [1, 2], "labels": {"a": 1.5}},
        {"id": "X-1", "readings": [1, "two"], "labels": {"a": "high"}},
        {"id": "D-2", "readings": [1, 2, 3, 4]},
        {"readings": []},
    ])
    assert rows[0].errors == [] and rows[0].data.readings == [1, 2] and rows[0].data.labels == {"a": 1.5}
    assert rows[1].errors == [
        "data.id: X-1 does not match '^D-'",
        "data.readings: has an item that does not match its schema",
        "data.labels: has a value that does not match its schema",
    ]
    assert rows[2].errors == ["data.readings: has more than 3 items"]
    assert rows[3].errors == ["data.id: is a required property"]


def test_names_and_patterns_are_quoted_in_the_generated_sql(spark):
    # the checks are SQL text: names with backquotes and patterns with quotes and backslashes
    schema = {
        "type": "object",
        "required": ["odd `name"],
        "properties": {"odd `name": {"type": "string", "pattern": "^it's \\d+$", "enum": ["it's 1", "it's x"]}},
    }
    dtype, _ = json_schema_to_spark(schema)
    df = spark.createDataFrame([(json.dumps(p),) for p in ({"odd `name": "it's 1"}, {"odd `name": "it's x"}, {})], "text string")
    rows = typed_payloads(df.withColumn("v", F.parse_json("text")), [("v", dtype, {}, "data", "true")]).collect()
    assert rows[0].data["odd `name"] == "it's 1" and rows[0].data_errors == []
    assert rows[1].data_errors == ["data.odd `name: it's x does not match \"^it's \\\\d+$\""]
    assert rows[2].data_errors == ["data.odd `name: is a required property"]


def test_checks_run_only_on_the_rows_asked_for(spark):
    dtype, _ = json_schema_to_spark(SCHEMA)
    df = spark.createDataFrame([(json.dumps({"readings": []}), True), (json.dumps({"readings": []}), False)], "text string, mine boolean")
    rows = typed_payloads(df.withColumn("v", F.parse_json("text")), [("v", dtype, {}, "data", "mine")]).collect()
    assert rows[0].data_errors == ["data.id: is a required property"] and rows[0].data.readings == []
    assert rows[1].data_errors is None and rows[1].data is None
