"""Payload typing and native schema checks (payload.py) on real Spark."""

import json

from pyspark.sql import functions as F

from catalake.platform.payload import typed_payload
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
    typed, errors = typed_payload(dtype, {}, F.parse_json("text"))
    return df.select(typed.alias("data"), errors.alias("errors")).collect()


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
