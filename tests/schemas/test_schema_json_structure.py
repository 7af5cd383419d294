"""JSON Structure -> Spark: exact types per construct."""

import pytest
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DateType, DecimalType, DoubleType,
                               FloatType, IntegerType, LongType, MapType, ShortType, StringType, StructField,
                               StructType, TimestampType)

from catalake.platform.schemas.json_schema import SchemaError
from catalake.platform.schemas.json_structure import json_structure_to_spark

DEFS = {
    "Point": {"type": "object", "required": ["x"], "properties": {"x": {"type": "double"}, "y": {"type": "double"}}},
    "geo": {"Area": {"type": "object", "properties": {"name": {"type": "string"}}}},  # a namespace
}


def field(prop):
    schema = {"type": "object", "properties": {"v": prop}, "definitions": DEFS}
    dtype, _ = json_structure_to_spark(schema)
    return dtype["v"].dataType, dtype["v"].nullable


CASES = [
    ("string", {"type": "string"}, StringType(), True),
    ("int8", {"type": "int8"}, ByteType(), True),
    ("uint8", {"type": "uint8"}, ShortType(), True),
    ("int16", {"type": "int16"}, ShortType(), True),
    ("int32", {"type": "int32"}, IntegerType(), True),
    ("uint32", {"type": "uint32"}, LongType(), True),
    ("int64", {"type": "int64"}, LongType(), True),
    ("uint64", {"type": "uint64"}, DecimalType(20, 0), True),
    ("int128", {"type": "int128"}, DecimalType(38, 0), True),
    ("float", {"type": "float"}, FloatType(), True),
    ("double", {"type": "double"}, DoubleType(), True),
    ("decimal", {"type": "decimal", "precision": 12, "scale": 4}, DecimalType(12, 4), True),
    ("boolean", {"type": "boolean"}, BooleanType(), True),
    ("date", {"type": "date"}, DateType(), True),
    ("datetime", {"type": "datetime"}, TimestampType(), True),
    ("timestamp", {"type": "timestamp"}, TimestampType(), True),
    ("time-as-string", {"type": "time"}, StringType(), True),
    ("uuid", {"type": "uuid"}, StringType(), True),
    ("uri", {"type": "uri"}, StringType(), True),
    ("binary", {"type": "binary"}, BinaryType(), True),
    ("any", {"type": "any"}, StringType(), True),
    ("array", {"type": "array", "items": {"type": "int32"}}, ArrayType(IntegerType(), True), True),
    ("set", {"type": "set", "items": {"type": "string"}}, ArrayType(StringType(), True), True),
    ("map", {"type": "map", "values": {"type": "double"}}, MapType(StringType(), DoubleType(), True), True),
    ("tuple", {"type": "tuple", "properties": {"a": {"type": "string"}}, "tuple": ["a"]}, StringType(), True),
    ("nullable-union", {"type": ["datetime", "null"]}, TimestampType(), True),
    ("union-numbers", {"type": ["int32", "double"]}, DoubleType(), True),
    ("union-incompatible", {"type": ["int32", "string"]}, StringType(), True),
    ("ref", {"type": {"$ref": "#/definitions/Point"}},
     StructType([StructField("x", DoubleType(), False), StructField("y", DoubleType(), True)]), True),
    ("ref-into-namespace", {"type": {"$ref": "#/definitions/geo/Area"}}, StructType([StructField("name", StringType(), True)]), True),
    ("nullable-ref-union", {"type": ["null", {"$ref": "#/definitions/Point"}]},
     StructType([StructField("x", DoubleType(), False), StructField("y", DoubleType(), True)]), True),
    ("tagged-choice", {"type": "choice", "choices": {"circle": {"type": "object", "properties": {"r": {"type": "double"}}},
                                                     "label": {"type": "string"}}},
     StructType([StructField("circle", StructType([StructField("r", DoubleType(), True)]), True), StructField("label", StringType(), True)]), True),
    ("inline-choice", {"type": "choice", "selector": "kind", "choices": {
        "a": {"type": "object", "properties": {"p": {"type": "int32"}}}, "b": {"type": "object", "properties": {"q": {"type": "string"}}}}},
     StructType([StructField("kind", StringType(), True), StructField("p", IntegerType(), True), StructField("q", StringType(), True)]), True),
]


@pytest.mark.parametrize("name,prop,expected,nullable", CASES, ids=[c[0] for c in CASES])
def test_construct(name, prop, expected, nullable):
    assert field(prop) == (expected, nullable)


def test_required_makes_non_nullable_and_descriptions_are_comments():
    dtype, _ = json_structure_to_spark({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "description": "the a"}, "b": {"type": "string"}}})
    assert [(f.name, f.nullable) for f in dtype.fields] == [("a", False), ("b", True)]
    assert dtype["a"].metadata["comment"] == "the a"


def test_extends_puts_base_properties_first():
    schema = {"definitions": {"Base": {"type": "abstract", "abstract": True, "required": ["id"], "properties": {"id": {"type": "uuid"}}},
                              "Car": {"type": "object", "$extends": "#/definitions/Base", "properties": {"wheels": {"type": "int8"}}}},
              "$root": "#/definitions/Car"}
    dtype, _ = json_structure_to_spark(schema)
    assert [(f.name, f.dataType, f.nullable) for f in dtype.fields] == [("id", StringType(), False), ("wheels", ByteType(), True)]
    assert dtype["id"].metadata == {"catalake.format": "uuid"}


def test_type_name_picks_a_definition():
    dtype, _ = json_structure_to_spark({"definitions": DEFS}, type_name="Area")
    assert dtype == StructType([StructField("name", StringType(), True)])


def test_recursion_is_cut():
    schema = {"definitions": {"Node": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"type": {"$ref": "#/definitions/Node"}}}}}}, "$root": "#/definitions/Node"}
    dtype, _ = json_structure_to_spark(schema)
    assert dtype["kids"].dataType == ArrayType(StringType(), True)


def test_dangling_ref_is_a_clear_error():
    with pytest.raises(SchemaError, match="#/definitions/Nope"):
        json_structure_to_spark({"type": "object", "properties": {"a": {"type": {"$ref": "#/definitions/Nope"}}}})


def test_real_autobahn_road_event(shared_data):
    from catalake.platform.catalog import load_catalog
    from catalake.platform.schemas.references import resolve_data_schema

    path = shared_data / "real-time-sources/feeders/autobahn/xreg/autobahn.xreg.json"
    catalog = load_catalog([path])
    schema = resolve_data_schema(catalog.find("DE.Autobahn.RoadworkAppeared"), catalog.schemagroups, [path.parent])
    dtype, _ = json_structure_to_spark(schema.content, schema.document, schema.type_name)
    assert dtype["event_time"].dataType == TimestampType()
    assert dtype["road_ids"].dataType == ArrayType(StringType(), True)  # via $ref to a definition
    assert dtype["coordinate_lat"].dataType == DoubleType()
