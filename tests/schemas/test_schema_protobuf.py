"""Protobuf (.proto text, compiled by protoc) -> Spark: exact types per construct."""

import pytest
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DecimalType, DoubleType, FloatType, IntegerType,
                               LongType, MapType, StringType, StructField, StructType, TimestampType)

from catalake.platform.schemas.json_schema import SchemaError
from catalake.platform.schemas.protobuf import protobuf_to_spark


def field(declaration: str, extra: str = "", syntax: str = "proto3"):
    text = f'syntax = "{syntax}";\n{extra}\nmessage M {{\n  {declaration} = 1;\n}}\n'
    dtype, _ = protobuf_to_spark(text, "M")
    return dtype.fields[0].dataType, dtype.fields[0].nullable


WKT = 'import "google/protobuf/timestamp.proto"; import "google/protobuf/wrappers.proto";' \
      'import "google/protobuf/struct.proto"; import "google/protobuf/any.proto"; import "google/protobuf/duration.proto";'

CASES = [
    ("double", "double x", DoubleType()),
    ("float", "float x", FloatType()),
    ("int32", "int32 x", IntegerType()),
    ("sint32", "sint32 x", IntegerType()),
    ("sfixed32", "sfixed32 x", IntegerType()),
    ("uint32", "uint32 x", LongType()),
    ("fixed32", "fixed32 x", LongType()),
    ("int64", "int64 x", LongType()),
    ("sint64", "sint64 x", LongType()),
    ("uint64", "uint64 x", DecimalType(20, 0)),
    ("fixed64", "fixed64 x", DecimalType(20, 0)),
    ("bool", "bool x", BooleanType()),
    ("string", "string x", StringType()),
    ("bytes", "bytes x", BinaryType()),
    ("optional", "optional string x", StringType()),
    ("repeated", "repeated int64 x", ArrayType(LongType(), False)),
    ("map", "map<string, double> x", MapType(StringType(), DoubleType(), True)),
    ("map-int-key", "map<int32, string> x", MapType(IntegerType(), StringType(), True)),
    ("timestamp", "google.protobuf.Timestamp x", TimestampType()),
    ("duration", "google.protobuf.Duration x", StringType()),
    ("wrapper", "google.protobuf.Int64Value x", LongType()),
    ("struct", "google.protobuf.Struct x", StringType()),
    ("any", "google.protobuf.Any x", StructType([StructField("type_url", StringType()), StructField("value", BinaryType())])),
    ("repeated-timestamp", "repeated google.protobuf.Timestamp x", ArrayType(TimestampType(), False)),
]


@pytest.mark.parametrize("declaration,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_field_types(declaration, expected):
    dtype, nullable = field(declaration, WKT)
    assert dtype == expected
    assert nullable  # proto3 JSON omits default values: a missing field reads as null


def test_enum_nested_message_and_package():
    text = """
    syntax = "proto3";
    package shop.v1;
    // An order as placed.
    message Order {
      // Where it goes.
      Address ship_to = 1;
      Status status = 2;
      repeated Line lines = 3;
      enum Status { NEW = 0; PAID = 1; }
      message Line { string sku = 1; uint32 qty = 2; }
    }
    message Address { string city = 1; }
    """
    dtype, _ = protobuf_to_spark(text)  # no type name: the first message declared
    assert dtype == StructType([
        StructField("ship_to", StructType([StructField("city", StringType())]), True, {"comment": "Where it goes."}),
        StructField("status", StringType()),
        StructField("lines", ArrayType(StructType([StructField("sku", StringType()), StructField("qty", LongType())]), False)),
    ])
    # fully qualified, package-relative and nested names all find a type
    assert protobuf_to_spark(text, "shop.v1.Address")[0] == protobuf_to_spark(text, "Address")[0]
    assert protobuf_to_spark(text, "Order.Line")[0].fieldNames() == ["sku", "qty"]


def test_oneof_members_are_nullable_fields():
    dtype, _ = protobuf_to_spark('syntax = "proto3"; message M { oneof v { string s = 1; int32 i = 2; } }')
    assert dtype == StructType([StructField("s", StringType()), StructField("i", IntegerType())])


def test_proto2_required_is_not_nullable():
    dtype, _ = protobuf_to_spark('syntax = "proto2"; message M { required string id = 1; optional int32 n = 2; }')
    assert [(f.name, f.nullable) for f in dtype.fields] == [("id", False), ("n", True)]


def test_recursion_becomes_json_text():
    dtype, _ = protobuf_to_spark('syntax = "proto3"; message Node { string name = 1; repeated Node children = 2; }')
    children = dtype["children"].dataType
    assert children.elementType == StringType()
    assert children.containsNull
    assert dtype["children"].metadata == {"catalake.json": True, "catalake.recursion": True}


def test_syntax_error_names_line_and_column():
    with pytest.raises(SchemaError, match=r"(?s)does not compile: line 1:49: .*Unmatched"):
        protobuf_to_spark('syntax = "proto3"; message x1 { string a = 1; } }')


def test_imports_outside_well_known_types_are_refused():
    with pytest.raises(SchemaError, match="other.proto"):
        protobuf_to_spark('syntax = "proto3"; import "other.proto"; message M { string a = 1; }')


def test_unknown_type_name():
    with pytest.raises(SchemaError, match=r"'Nope' not found \(declared: \.M\)"):
        protobuf_to_spark('syntax = "proto3"; message M { string a = 1; }', "Nope")
