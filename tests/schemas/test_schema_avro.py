"""Avro -> Spark: exact types per construct."""

import json

import pytest
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DateType, DecimalType, DoubleType, FloatType,
                               IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampNTZType,
                               TimestampType)

from catalake.platform.schemas.avro import avro_to_spark
from catalake.platform.schemas.json_schema import SchemaError


def field(avro_type):
    dtype, _ = avro_to_spark({"type": "record", "name": "R", "fields": [{"name": "x", "type": avro_type}]})
    return dtype["x"].dataType, dtype["x"].nullable


CASES = [
    ("string", "string", StringType(), False),
    ("int", "int", IntegerType(), False),
    ("long", "long", LongType(), False),
    ("float", "float", FloatType(), False),
    ("double", "double", DoubleType(), False),
    ("boolean", "boolean", BooleanType(), False),
    ("bytes", "bytes", BinaryType(), False),
    ("fixed", {"type": "fixed", "name": "F", "size": 16}, BinaryType(), False),
    ("enum", {"type": "enum", "name": "E", "symbols": ["A", "B"]}, StringType(), False),
    ("array", {"type": "array", "items": "long"}, ArrayType(LongType(), True), False),
    ("map", {"type": "map", "values": "string"}, MapType(StringType(), StringType(), True), False),
    ("nullable-union", ["null", "double"], DoubleType(), True),
    ("single-member-union", ["int"], IntegerType(), False),
    ("decimal-bytes", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}, DecimalType(12, 3), False),
    ("decimal-fixed", {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 9, "scale": 2}, DecimalType(9, 2), False),
    ("date", {"type": "int", "logicalType": "date"}, DateType(), False),
    ("time-millis", {"type": "int", "logicalType": "time-millis"}, IntegerType(), False),
    ("time-micros", {"type": "long", "logicalType": "time-micros"}, LongType(), False),
    ("timestamp-millis", {"type": "long", "logicalType": "timestamp-millis"}, TimestampType(), False),
    ("timestamp-micros", {"type": "long", "logicalType": "timestamp-micros"}, TimestampType(), False),
    ("local-timestamp-millis", {"type": "long", "logicalType": "local-timestamp-millis"}, TimestampNTZType(), False),
    ("uuid", {"type": "string", "logicalType": "uuid"}, StringType(), False),
    ("nested-record", {"type": "record", "name": "In", "fields": [{"name": "a", "type": ["null", "int"]}]},
     StructType([StructField("a", IntegerType(), True)]), False),
    ("other-union", ["null", "int", {"type": "record", "name": "P", "fields": [{"name": "b", "type": "string"}]}],
     StructType([StructField("int", IntegerType(), True), StructField("P", StructType([StructField("b", StringType(), False)]), True)]), True),
]


@pytest.mark.parametrize("name,avro_type,expected,nullable", CASES, ids=[c[0] for c in CASES])
def test_construct(name, avro_type, expected, nullable):
    assert field(avro_type) == (expected, nullable)


def test_named_type_reuse_and_docs():
    dtype, _ = avro_to_spark({"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["X"]}, "doc": "first"},
        {"name": "b", "type": "n.E"}]})
    assert dtype["b"].dataType == StringType() and dtype["a"].metadata["comment"] == "first"


def test_recursive_record_is_cut():
    dtype, _ = avro_to_spark({"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]})
    assert dtype["next"].dataType == StringType() and dtype["next"].metadata["catalake.recursion"]


def test_invalid_avro_is_a_clear_error():
    with pytest.raises(SchemaError, match="invalid Avro schema"):
        avro_to_spark({"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]})


def test_every_avro_schema_in_the_public_catalogs_maps(shared_data):
    mapped = 0
    for path in sorted(shared_data.rglob("*")):
        if path.suffix not in (".json", ".avsc") or not path.is_file():
            continue
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if path.suffix == ".avsc":
            assert avro_to_spark(doc)[0] is not None
            mapped += 1
            continue
        for group in (doc.get("schemagroups") or {}).values() if isinstance(doc, dict) else []:
            for schema in (group.get("schemas") or {}).values():
                for version in (schema.get("versions") or {}).values():
                    fmt = str(version.get("format") or schema.get("format") or "").lower()
                    if fmt.startswith("avro") and isinstance(version.get("schema"), (dict, list)):
                        assert avro_to_spark(version["schema"])[0] is not None
                        mapped += 1
    assert mapped >= 50
