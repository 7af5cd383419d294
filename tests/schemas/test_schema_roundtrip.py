"""Property: a record valid against its source schema reads into the derived Spark type losslessly.

Hypothesis generates schemas (JSON Schema, Avro) and instances of them; each instance is checked
with the schema's own validator (jsonschema with format checking / fastavro), then read by Spark
into the derived type, and what Spark gives back must equal the instance.
"""

import datetime as dt
import json
import uuid
from decimal import Decimal
from io import BytesIO

import fastavro
import jsonschema
from hypothesis import HealthCheck, given, settings, strategies as st
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from catalake.platform.schemas.avro import avro_to_spark
from catalake.platform.schemas.json_schema import json_schema_to_spark

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
UTC_TIMES = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.timezone.utc))
PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# -- JSON Schema: (schema, strategy of instances)

JSON_LEAVES = [
    ({"type": "string"}, TEXT),
    ({"type": "integer"}, st.integers(-(2**63), 2**63 - 1)),
    ({"type": "number"}, st.floats(allow_nan=False, allow_infinity=False)),
    ({"type": "boolean"}, st.booleans()),
    ({"type": "string", "format": "date-time"}, UTC_TIMES.map(lambda t: t.isoformat())),
    ({"type": "string", "format": "date"}, st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)).map(str)),
    ({"enum": ["red", "green", "blue"]}, st.sampled_from(["red", "green", "blue"])),
    ({"const": "fixed"}, st.just("fixed")),
    ({"type": ["integer", "null"]}, st.one_of(st.none(), st.integers(-1000, 1000))),
]


def json_object(children):
    @st.composite
    def build(draw):
        names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
        parts = {n: draw(children) for n in names}
        required = [n for n in names if draw(st.booleans())]
        schema = {"type": "object", "properties": {n: s for n, (s, _) in parts.items()}, "required": required}

        @st.composite
        def instance(draw2):
            out = {}
            for n, (_, values) in parts.items():
                if n in required or draw2(st.booleans()):
                    out[n] = draw2(values)
            return out

        return schema, instance()

    return build()


def json_array(children):
    return children.map(lambda c: ({"type": "array", "items": c[0]}, st.lists(c[1], max_size=3)))


def json_map(children):
    return children.map(lambda c: ({"type": "object", "additionalProperties": c[0]}, st.dictionaries(NAMES, c[1], max_size=3)))


JSON_SCHEMAS = st.recursive(
    st.sampled_from(JSON_LEAVES),
    lambda children: st.one_of(json_object(children), json_array(children), json_map(children)),
    max_leaves=8,
)


@st.composite
def json_cases(draw):
    root, instances = draw(json_object(JSON_SCHEMAS))
    if draw(st.booleans()):  # the same schema behind a $ref into $defs
        root = {"$defs": {"Root": root}, "$ref": "#/$defs/Root"}
    return root, draw(st.lists(instances, min_size=1, max_size=4))


def _normal_json(value, dtype):
    """Both sides in comparable form: nulls dropped, timestamps as instants, dates as dates."""
    from pyspark.sql.types import ArrayType, DateType, MapType, TimestampType

    if value is None:
        return None
    if isinstance(dtype, StructType):
        return {f.name: _normal_json(value.get(f.name), f.dataType) for f in dtype.fields if value.get(f.name) is not None}
    if isinstance(dtype, ArrayType):
        return [_normal_json(v, dtype.elementType) for v in value]
    if isinstance(dtype, MapType):
        return {k: _normal_json(v, dtype.valueType) for k, v in value.items()}
    if isinstance(dtype, TimestampType):
        return dt.datetime.fromisoformat(value).timestamp()
    if isinstance(dtype, DateType):
        return dt.date.fromisoformat(value)
    return value


@PROPERTY
@given(json_cases())
def test_json_schema_instances_round_trip_through_spark(spark, case):
    schema, instances = case
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for instance in instances:
        validator.validate(instance)
    dtype, _ = json_schema_to_spark(schema)
    texts = [(json.dumps(i),) for i in instances]
    # from_json is how landed payloads are parsed; to_json gives them back for comparison
    rows = (
        spark.createDataFrame(texts, "text string")
        .select(F.to_json(F.from_json("text", dtype, {"mode": "FAILFAST"}), {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}).alias("back"))
        .collect()
    )
    assert [_normal_json(json.loads(r.back), dtype) for r in rows] == [_normal_json(i, dtype) for i in instances]


# -- Avro: (schema, strategy of records)

AVRO_LEAVES = [
    ("string", TEXT),
    ("int", st.integers(-(2**31), 2**31 - 1)),
    ("long", st.integers(-(2**63), 2**63 - 1)),
    ("double", st.floats(allow_nan=False, allow_infinity=False)),
    ("float", st.floats(width=32, allow_nan=False, allow_infinity=False)),
    ("boolean", st.booleans()),
    ("bytes", st.binary(max_size=8)),
    ({"type": "int", "logicalType": "date"}, st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))),
    ({"type": "long", "logicalType": "timestamp-micros"}, UTC_TIMES),
    ({"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
     st.decimals(min_value=-(10**8), max_value=10**8, places=3, allow_nan=False)),
    ({"type": "string", "logicalType": "uuid"}, st.uuids().map(str)),
    (["null", "long"], st.one_of(st.none(), st.integers(-1000, 1000))),
]


@st.composite
def avro_named(draw, kind):
    return f"{kind}_{draw(st.uuids()).hex}"  # Avro names must be unique in one schema


def avro_record(children):
    @st.composite
    def build(draw):
        names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
        parts = [(n, draw(children)) for n in names]
        schema = {"type": "record", "name": draw(avro_named("R")), "fields": [{"name": n, "type": s} for n, (s, _) in parts]}
        return schema, st.fixed_dictionaries({n: values for n, (_, values) in parts})

    return build()


@st.composite
def avro_enum(draw):
    return {"type": "enum", "name": draw(avro_named("E")), "symbols": ["A", "B", "C"]}, st.sampled_from(["A", "B", "C"])


@st.composite
def avro_fixed(draw):
    return {"type": "fixed", "name": draw(avro_named("F")), "size": 4}, st.binary(min_size=4, max_size=4)


AVRO_SCHEMAS = st.recursive(
    st.one_of(st.sampled_from(AVRO_LEAVES), avro_enum(), avro_fixed()),
    lambda children: st.one_of(
        avro_record(children),
        children.map(lambda c: ({"type": "array", "items": c[0]}, st.lists(c[1], max_size=3))),
        children.map(lambda c: ({"type": "map", "values": c[0]}, st.dictionaries(NAMES, c[1], max_size=3))),
    ),
    max_leaves=8,
)


def _normal_avro(value, dtype):
    from pyspark.sql.types import ArrayType, MapType, TimestampType

    if value is None:
        return None
    if isinstance(dtype, StructType):
        get = value.asDict() if hasattr(value, "asDict") else value
        return {f.name: _normal_avro(get[f.name], f.dataType) for f in dtype.fields}
    if isinstance(dtype, ArrayType):
        return [_normal_avro(v, dtype.elementType) for v in value]
    if isinstance(dtype, MapType):
        return {k: _normal_avro(v, dtype.valueType) for k, v in value.items()}
    if isinstance(dtype, TimestampType):
        return value.timestamp()  # aware (fastavro) and naive local (Spark) both give the instant
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


@PROPERTY
@given(avro_record(AVRO_SCHEMAS).flatmap(lambda c: st.tuples(st.just(c[0]), st.lists(c[1], min_size=1, max_size=4))))
def test_avro_records_round_trip_through_spark(spark, case):
    schema, records = case
    parsed = fastavro.parse_schema(schema)
    decoded = []
    for record in records:
        assert fastavro.validation.validate(record, parsed, raise_errors=True)
        buffer = BytesIO()
        fastavro.schemaless_writer(buffer, parsed, record)
        buffer.seek(0)
        decoded.append(fastavro.schemaless_reader(buffer, parsed, parsed))  # as a payload decoder gives it
    dtype, _ = avro_to_spark(schema)
    wrapper = StructType([StructField("data", dtype, True)])
    rows = spark.createDataFrame([(d,) for d in decoded], wrapper, verifySchema=True).collect()
    assert [_normal_avro(r.data, dtype) for r in rows] == [_normal_avro(d, dtype) for d in decoded]
