"""Payload typing and the schema checks no expectation covers (payload.py), in plain Python."""

import datetime as dt
import decimal

from pyspark.sql.types import DecimalType, StructField, StructType, TimestampType

from catalake.platform.schemas.json_schema import json_schema_to_spark
from catalake.platform.schemas.payload import compile_payload

SCHEMA = {
    "type": "object",
    "required": ["id", "readings"],
    "properties": {
        "id": {"type": "string", "pattern": "^D-"},
        "readings": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "labels": {"type": "object", "additionalProperties": {"type": "number"}},
    },
}


def check(schema, payloads, covered=frozenset()):
    dtype, _ = json_schema_to_spark(schema)
    typer = compile_payload(dtype, {}, covered)
    out = []
    for p in payloads:
        errors = []
        out.append((typer(p, errors), [m for _, m in errors], [r for r, _ in errors]))
    return out


def test_arrays_maps_and_constraints():
    rows = check(SCHEMA, [
        {"id": "D-1", "readings": [1, 2], "labels": {"a": 1.5}},
        {"id": "X-1", "readings": [1, "two"], "labels": {"a": "high"}},
        {"id": "D-2", "readings": [1, 2, 3, 4]},
        {"readings": []},
    ])
    assert rows[0][1] == [] and rows[0][0] == {"id": "D-1", "readings": [1, 2], "labels": {"a": 1.5}}
    assert rows[1][1] == [
        "data.id: X-1 does not match '^D-'",
        "data.readings: has an item that does not match its schema",
        "data.labels: has a value that does not match its schema",
    ]
    assert rows[1][2] == ["data.id:pattern", "data.readings[]:type", "data.labels{}:type"]
    assert rows[2][1] == ["data.readings: has more than 3 items"]
    assert rows[3][1] == ["data.id: is a required property"]


def test_hostile_names_and_patterns_survive():
    schema = {
        "type": "object",
        "required": ["odd `name"],
        "properties": {"odd `name": {"type": "string", "pattern": "^it's \\d+$", "enum": ["it's 1", "it's x"]}},
    }
    rows = check(schema, [{"odd `name": "it's 1"}, {"odd `name": "it's x"}, {}])
    assert rows[0][0] == {"odd `name": "it's 1"} and rows[0][1] == []
    assert rows[1][1] == ["data.odd `name: it's x does not match \"^it's \\\\d+$\""]
    assert rows[2][1] == ["data.odd `name: is a required property"]


def test_a_value_of_the_wrong_kind_is_typed_null_and_reported():
    # what Great Expectations would see of the row: the value null, the record rejected for its type
    rows = check(SCHEMA, [{"id": 5, "readings": [1.5], "labels": []}, {"id": "D-1", "readings": True}])
    assert rows[0][0] == {"id": None, "readings": [None], "labels": None}
    assert rows[0][1] == ["data.id: 5 is not of type 'string'", "data.readings: has an item that does not match its schema",
                          "data.labels: [] is not of type 'object'"]
    assert rows[1][0]["readings"] is None and rows[1][2] == ["data.readings:type"]
    assert check({"type": "integer"}, ["5", 5, True, 2**63, 1.5]) == [
        (None, ["data: 5 is not of type 'integer'"], ["data:type"]), (5, [], []),
        (None, ["data: true is not of type 'integer'"], ["data:type"]),
        (None, [f"data: {2**63} does not fit the column's 64-bit integer ({-2**63} to {2**63 - 1})"], ["data:type"]),
        (None, ["data: 1.5 is not of type 'integer'"], ["data:type"])]


def test_constraints_an_expectation_covers_are_left_to_it():
    # the suite's expectations check `pattern` and `maxItems` of these struct fields (quality.py)
    rows = check(SCHEMA, [{"id": "X-1", "readings": [1, 2, 3, 4]}], covered=frozenset({"data.id:pattern", "data.readings:items"}))
    assert rows[0][1] == []


def test_logical_types_and_decimals():
    millis = StructField("at", TimestampType(), True, {"catalake.unit": "millis"})
    typer = compile_payload(StructType([millis, StructField("amount", DecimalType(10, 2))]), {})
    errors = []
    assert typer({"at": 1795169340000, "amount": "12.3"}, errors) == {
        "at": dt.datetime(2026, 11, 20, 10, 9, tzinfo=dt.timezone.utc), "amount": decimal.Decimal("12.30")}
    assert typer({"at": "2026-11-20T10:09:00+01:00", "amount": 1e20}, errors)["at"] == dt.datetime(
        2026, 11, 20, 9, 9, tzinfo=dt.timezone.utc)
    assert errors == [("data.amount:type", "data.amount: 1e+20 is not a decimal(10,2)")]
    # more places than the scale: refused, never rounded
    assert typer({"amount": "12.345"}, errors)["amount"] is None
    assert errors[-1] == ("data.amount:scale", "data.amount: 12.345 has more decimal places than the column's scale 2 (never rounded)")
