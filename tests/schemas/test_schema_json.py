"""JSON Schema -> Spark: exact types per construct, on drafts 04 to 2020-12."""

import json

import pytest
from pyspark.sql.types import (ArrayType, BooleanType, DateType, DoubleType, LongType, MapType, StringType, StructField,
                               StructType, TimestampType)
from referencing import Registry

from catalake.platform.schemas.json_schema import NeverFollowed, SchemaError, json_schema_to_spark, resource

D7 = "http://json-schema.org/draft-07/schema#"


def field_type(prop: dict, dialect: str = D7, extra: dict | None = None):
    schema = {"$schema": dialect, "type": "object", "properties": {"x": prop}, **(extra or {})}
    dtype, _ = json_schema_to_spark(schema)
    return dtype["x"].dataType, dtype["x"].nullable


CASES = [
    ("string", {"type": "string"}, StringType()),
    ("integer", {"type": "integer"}, LongType()),
    ("number", {"type": "number"}, DoubleType()),
    ("boolean", {"type": "boolean"}, BooleanType()),
    ("date-time", {"type": "string", "format": "date-time"}, TimestampType()),
    ("date", {"type": "string", "format": "date"}, DateType()),
    ("uuid-format-stays-string", {"type": "string", "format": "uuid"}, StringType()),
    ("null-only", {"type": "null"}, StringType()),
    ("nullable-type-array", {"type": ["integer", "null"]}, LongType()),
    ("enum-strings", {"enum": ["a", "b"]}, StringType()),
    ("enum-integers", {"enum": [1, 2, 3]}, LongType()),
    ("enum-int-and-float", {"enum": [1, 2.5]}, DoubleType()),
    ("enum-mixed", {"enum": [1, "a"]}, StringType()),
    ("const-bool", {"const": True}, BooleanType()),
    ("array-of-int", {"type": "array", "items": {"type": "integer"}}, ArrayType(LongType(), True)),
    ("array-no-items", {"type": "array"}, ArrayType(StringType(), True)),
    ("tuple-items-draft7", {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}, StringType()),
    ("map", {"type": "object", "additionalProperties": {"type": "integer"}}, MapType(StringType(), LongType(), True)),
    ("pattern-map", {"type": "object", "patternProperties": {"^x": {"type": "boolean"}}}, MapType(StringType(), BooleanType(), True)),
    ("open-object", {"type": "object"}, StringType()),
    ("object-additional-true", {"type": "object", "additionalProperties": True}, StringType()),
    ("empty-schema", {}, StringType()),
    ("nested-object", {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
     StructType([StructField("a", LongType(), False)])),
    ("object-inferred-from-properties", {"properties": {"a": {"type": "string"}}}, StructType([StructField("a", StringType(), True)])),
    ("array-inferred-from-items", {"items": {"type": "number"}}, ArrayType(DoubleType(), True)),
    ("allOf-merge", {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}},
                               {"required": ["a"], "properties": {"b": {"type": "integer"}}}]},
     StructType([StructField("a", StringType(), False), StructField("b", LongType(), True)])),
    ("oneOf-nullable-collapses", {"oneOf": [{"type": "null"}, {"type": "string", "format": "date"}]}, DateType()),
    ("anyOf-objects-merge", {"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                                       {"type": "object", "properties": {"b": {"type": "string"}}}]},
     StructType([StructField("a", LongType(), True), StructField("b", StringType(), True)])),
    ("oneOf-objects-conflicting-field", {"oneOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"a": {"type": "string"}}}]},
     StructType([StructField("a", StringType(), True, {"catalake.json": True})])),
    ("anyOf-int-number", {"anyOf": [{"type": "integer"}, {"type": "number"}]}, DoubleType()),
    ("oneOf-incompatible-scalars", {"oneOf": [{"type": "integer"}, {"type": "string"}]}, StringType()),
    ("type-array-incompatible", {"type": ["string", "boolean"]}, StringType()),
    ("ref-definitions", {"$ref": "#/definitions/Money"},
     StructType([StructField("amount", DoubleType(), False), StructField("currency", StringType(), True)])),
]
MONEY = {"definitions": {"Money": {"type": "object", "required": ["amount"],
                                   "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}}}}}


@pytest.mark.parametrize("name,prop,expected", CASES, ids=[c[0] for c in CASES])
def test_construct(name, prop, expected):
    dtype, _ = field_type(prop, extra=MONEY)
    assert dtype == expected


def test_nullability_from_required_and_null_type():
    schema = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "string"}, "b": {"type": ["string", "null"]}, "c": {"type": "string"}}}
    dtype, nullable = json_schema_to_spark(schema)
    assert [(f.name, f.nullable) for f in dtype.fields] == [("a", False), ("b", True), ("c", True)]
    assert nullable is False


def test_descriptions_become_comments():
    dtype, _ = json_schema_to_spark({"type": "object", "properties": {"a": {"type": "string", "description": "the a"}}})
    assert dtype["a"].metadata["comment"] == "the a"


def test_defs_in_2020_12_and_prefix_items():
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
              "properties": {"p": {"$ref": "#/$defs/P"}, "t": {"type": "array", "prefixItems": [{"type": "string"}]}},
              "$defs": {"P": {"type": "integer"}}}
    dtype, _ = json_schema_to_spark(schema)
    assert dtype["p"].dataType == LongType() and dtype["t"].dataType == StringType()


def test_draft4_definitions_and_id():
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.com/root.json",
              "type": "object", "properties": {"n": {"$ref": "#/definitions/N"}}, "definitions": {"N": {"type": "number"}}}
    assert json_schema_to_spark(schema)[0]["n"].dataType == DoubleType()


def test_draft_2019_09_defs():
    schema = {"$schema": "https://json-schema.org/draft/2019-09/schema", "properties": {"n": {"$ref": "#/$defs/N"}},
              "$defs": {"N": {"type": "boolean"}}}
    assert json_schema_to_spark(schema)[0]["n"].dataType == BooleanType()


def test_draft6_const():
    schema = {"$schema": "http://json-schema.org/draft-06/schema#", "properties": {"c": {"const": 3}}}
    assert json_schema_to_spark(schema)[0]["c"].dataType == LongType()


def test_ref_across_documents_in_a_registry():
    other = {"$schema": D7, "$id": "https://schemas.example/address.json",
             "type": "object", "properties": {"city": {"type": "string"}}}
    registry = Registry().with_resource(other["$id"], resource(other))
    schema = {"$schema": D7, "type": "object", "properties": {"home": {"$ref": "https://schemas.example/address.json"}}}
    dtype, _ = json_schema_to_spark(schema, registry)
    assert dtype["home"].dataType == StructType([StructField("city", StringType(), True)])


def test_recursion_is_cut_into_a_json_string():
    schema = {"$ref": "#/definitions/Node", "definitions": {"Node": {"type": "object", "properties": {
        "name": {"type": "string"}, "parent": {"$ref": "#/definitions/Node"},
        "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}}}
    dtype, _ = json_schema_to_spark(schema)
    assert dtype["name"].dataType == StringType()
    assert dtype["parent"].dataType == StringType() and dtype["parent"].metadata["catalake.recursion"]
    assert dtype["children"].dataType == ArrayType(StringType(), True)


def test_unresolvable_ref_is_a_clear_error():
    with pytest.raises(SchemaError, match="#/definitions/Missing"):
        json_schema_to_spark({"properties": {"a": {"$ref": "#/definitions/Missing"}}})


def test_network_refs_are_never_fetched():
    # a catalog error like a dataschemauri to the network, not a schema left untyped
    with pytest.raises(NeverFollowed, match="never followed"):
        json_schema_to_spark({"properties": {"a": {"$ref": "https://example.com/never-fetched.json"}}})


def test_every_json_schema_in_the_public_catalogs_maps(shared_data):
    mapped = 0
    for path in sorted(shared_data.rglob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        for group in (doc.get("schemagroups") or {}).values() if isinstance(doc, dict) else []:
            for schema in (group.get("schemas") or {}).values():
                for version in (schema.get("versions") or {}).values():
                    fmt = str(version.get("format") or schema.get("format") or "").lower()
                    if fmt.startswith("jsonschema") and isinstance(version.get("schema"), dict):
                        dtype, _ = json_schema_to_spark(version["schema"])
                        assert dtype is not None
                        mapped += 1
    assert mapped >= 50


def test_demo_payloads_read_into_the_derived_schema_without_loss(spark):
    import datetime as dt

    from pyspark.sql import functions as F

    from support.paths import DEMO_CATALOG, REPO

    registry = json.loads((DEMO_CATALOG / "schemas.xreg.json").read_text())
    schema = registry["schemagroups"]["bikeshare.rides.json"]["schemas"]["RideEnded"]["versions"]["1"]["schema"]
    dtype, _ = json_schema_to_spark(schema)
    lines = (REPO / "src/catalake/demo/landing/2026-11-20/rides-http.jsonl").read_text().splitlines()
    events = [json.loads(x) for x in lines if x.startswith("{") and '"bikeshare.rides.RideEnded"' in x]
    payloads = [json.dumps(e["data"]) for e in events if e["data"]["distance_m"] >= 0]
    df = spark.createDataFrame([(p,) for p in payloads], "raw string").select(F.from_json("raw", dtype).alias("d"))
    rows = [r["d"] for r in df.collect()]
    assert len(rows) == len(payloads) > 0
    for row, raw in zip(rows, payloads):
        src = json.loads(raw)
        assert row["ride_id"] == src["ride_id"] and row["distance_m"] == src["distance_m"]
        assert row["fare"]["amount"] == src["fare"]["amount"] and row["fare"]["currency"] == src["fare"]["currency"]
        assert row["ended_at"].replace(tzinfo=dt.timezone.utc) == dt.datetime.fromisoformat(src["ended_at"])
