"""Per-message Delta tables: columns from the catalog, creation, and evolution rules."""

import json
from datetime import date, datetime, timezone

import pytest
from deltalake import DeltaTable
from pyspark.sql.types import (BooleanType, IntegerType, LongType, MapType, StringType, StructField, StructType,
                               TimestampType)

from catalake.platform.catalog import load_catalog
from catalake.platform.config import catalog_roots
from catalake.platform.warehouse.evolution import EvolutionError, plan_evolution
from catalake.platform.warehouse.message_tables import message_table, message_tables, sync_message_tables
from support.paths import DEMO_CATALOG


def demo_table(message_id):
    catalog = load_catalog([DEMO_CATALOG])
    return message_table(catalog.find(message_id), catalog, [DEMO_CATALOG])


def test_kafka_definition_columns():
    table = demo_table("bikeshare.rides.kafka.RideStarted")
    assert table.name == "messages/bikeshare_rides_kafka__ridestarted"
    schema = table.schema
    assert schema.fieldNames() == [
        "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema",
        "other_attributes", "city", "station_id", "ride_id", "protocol",
        "kafka_topic", "kafka_partition", "kafka_offset", "kafka_key", "kafka_timestamp", "kafka_headers",
        "data", "source_file", "source_line", "source_fields", "ingested_at", "event_date",
    ]
    assert schema["time"].dataType == TimestampType() and schema["time"].metadata["catalake.required"] is True
    assert not schema["id"].nullable and schema["subject"].nullable
    assert schema["kafka_offset"].dataType == LongType() and schema["kafka_partition"].dataType == IntegerType()
    assert schema["city"].metadata["comment"] == "Value of the uritemplate placeholder {city}."
    data = schema["data"].dataType
    assert data["started_at"].dataType == TimestampType()
    assert data["ride_id"].nullable and data["ride_id"].metadata["catalake.required"] is True
    assert "catalake.required" not in data["battery_pct"].metadata  # optional in the JSON Schema
    assert table.description.startswith("RideStarted on the 'rides' topic.")


def test_mqtt_definition_with_declared_extension_attribute():
    schema = demo_table("bikeshare.docks.mqtt.DockStatus").schema
    assert schema["firmware"].dataType == StringType()
    assert schema["mqtt_qos"].dataType == IntegerType() and schema["mqtt_retain"].dataType == BooleanType()
    assert schema["mqtt_user_properties"].dataType == MapType(StringType(), StringType(), True)
    assert "protocol_metadata" not in schema.fieldNames() and "kafka_topic" not in schema.fieldNames()


def test_envelope_only_definition_keeps_protocol_metadata():
    schema = demo_table("bikeshare.rides.RideStarted").schema
    assert schema["protocol_metadata"].dataType == MapType(StringType(), StringType(), True)


def write_catalog(path, data_schema, versionid=None, envelope="CloudEvents/1.0", attributes=None):
    message = {
        "dataschemaformat": "JsonSchema/draft-07",
        "dataschema": data_schema,
    }
    if envelope:
        message["envelope"] = envelope
        message["envelopemetadata"] = attributes or {
            "type": {"value": "acme.Thing"}, "source": {"value": "/things/{type}/{hub}", "type": "uritemplate"},
        }
    if versionid:
        message["versionid"] = versionid
    doc = {"specversion": "1.0-rc2", "messagegroups": {"acme": {"messages": {"acme.Thing": message}}}}
    path = path / "catalog"  # beside, not above, the test's warehouse
    path.mkdir(parents=True, exist_ok=True)
    (path / "acme.xreg.json").write_text(json.dumps(doc))
    catalog = load_catalog([path])
    return message_tables(catalog, catalog_roots([path]))


THING = {"type": "object", "properties": {"n": {"type": "integer"}, "label": {"type": "string"}}, "required": ["n"]}


def test_placeholder_named_like_an_attribute_gets_a_prefix(tmp_path):
    (table,), errors = write_catalog(tmp_path, THING)
    assert not errors
    assert "placeholder_type" in table.schema.fieldNames() and "hub" in table.schema.fieldNames()


def test_envelope_none_has_no_cloudevents_columns(tmp_path):
    (table,), _ = write_catalog(tmp_path, THING, envelope=None)
    assert table.schema.fieldNames()[:3] == ["protocol", "protocol_metadata", "data"]


def test_versionid_gets_its_own_table(tmp_path):
    (v1,), _ = write_catalog(tmp_path / "a", THING)
    (v2,), _ = write_catalog(tmp_path / "b", THING, versionid="2")
    assert v1.name == "messages/acme__thing" and v2.name == "messages/acme__thing__v2"


def _row(spark, table, n):
    values = {f.name: None for f in table.schema.fields}
    values.update(
        specversion="1.0", id="e1", source="/things/a/b", type="acme.Thing", data={"n": n, "label": "x"},
        source_file="f.jsonl", source_line=1, ingested_at=datetime(2026, 11, 21, tzinfo=timezone.utc),
        event_date=date(2026, 11, 21),
    )
    return spark.createDataFrame([values], table.schema)


def test_tables_are_created_with_comments_and_partitioning(store, tmp_path):
    tables, _ = write_catalog(tmp_path, THING)
    assert sync_message_tables(store, tables) == {"messages/acme__thing": "created"}
    delta = DeltaTable(store.path("messages/acme__thing"))
    assert delta.metadata().partition_columns == ["event_date"]
    assert delta.metadata().description.startswith("acme.Thing")
    fields = {f.name: f for f in delta.schema().fields}
    assert fields["source"].metadata["comment"] == "Context in which the event happened."
    nested = {f.name: f for f in fields["data"].type.fields}
    assert nested["n"].metadata["catalake.required"] == "true"
    # the schema read back keeps the metadata the evolution rules compare
    assert store.spark_schema("messages/acme__thing")["data"].dataType["n"].metadata["catalake.required"] is True
    assert sync_message_tables(store, tables) == {"messages/acme__thing": "unchanged"}


def test_adding_an_optional_field_evolves_the_table_in_place(store, spark, tmp_path):
    tables, _ = write_catalog(tmp_path, THING)
    sync_message_tables(store, tables)
    name = tables[0].name
    store.append(name, _row(spark, tables[0], 7))
    version = store.version(name)
    wider = json.loads(json.dumps(THING))
    wider["properties"]["weight"] = {"type": "number", "description": "kg"}
    tables, _ = write_catalog(tmp_path, wider)
    assert sync_message_tables(store, tables) == {name: ["data.weight"]}
    # metadata-only commits: the schema, then the stats columns with the new leaf (delta-rs sets
    # table properties in a commit of their own)
    assert store.version(name) == version + 2
    assert "data.weight" in DeltaTable(store.path(name)).metadata().configuration["delta.dataSkippingStatsColumns"]
    rows = store.read(name).select("data.n", "data.weight").collect()
    assert [tuple(r) for r in rows] == [(7, None)]  # old rows read with the new column as null
    assert store.spark_schema(name)["data"].dataType["weight"].metadata["comment"] == "kg"


@pytest.mark.parametrize(
    "change,expected",
    [
        (lambda s: s["properties"].__setitem__("n", {"type": "string"}),
         "table messages/acme__thing: column data.n: bigint -> string: a column cannot change its type"),
        (lambda s: s["properties"].pop("label"),
         "table messages/acme__thing: column data.label: string -> (absent): a column cannot be removed"),
        (lambda s: s["required"].append("label"),
         "table messages/acme__thing: column data.label: string -> string required: a nullable column cannot become required"),
        (lambda s: (s["properties"].__setitem__("extra", {"type": "boolean"}), s["required"].append("extra")),
         "table messages/acme__thing: column data.extra: (absent) -> boolean required: a new column must be nullable"),
    ],
    ids=["retype", "remove", "nullable-to-required", "new-required"],
)
def test_incompatible_changes_are_refused_and_nothing_changes(store, tmp_path, change, expected):
    tables, _ = write_catalog(tmp_path, THING)
    sync_message_tables(store, tables)
    version = store.version(tables[0].name)
    changed = json.loads(json.dumps(THING))
    change(changed)
    tables, _ = write_catalog(tmp_path, changed)
    with pytest.raises(EvolutionError) as info:
        sync_message_tables(store, tables)
    assert str(info.value).startswith(expected)
    assert "declare a new versionid" in str(info.value)
    assert store.version(tables[0].name) == version


def test_a_new_version_gets_a_new_table_and_the_old_one_stays(store, tmp_path):
    tables, _ = write_catalog(tmp_path, THING)
    sync_message_tables(store, tables)
    retyped = json.loads(json.dumps(THING))
    retyped["properties"]["n"] = {"type": "string"}
    tables, _ = write_catalog(tmp_path, retyped, versionid="2")
    assert sync_message_tables(store, tables) == {"messages/acme__thing__v2": "created"}
    assert store.spark_schema("messages/acme__thing")["data"].dataType["n"].dataType == LongType()
    assert store.spark_schema("messages/acme__thing__v2")["data"].dataType["n"].dataType == StringType()


def test_plan_evolution_inside_arrays_and_maps():
    old = StructType([StructField("xs", MapType(StringType(), StructType([StructField("a", LongType())])))])
    new = StructType([StructField("xs", MapType(StringType(), StructType([StructField("a", LongType()), StructField("b", StringType())])))])
    assert plan_evolution("t", old, new) == ["xs[].b"]
    with pytest.raises(EvolutionError, match=r"column xs\[\]\.a: bigint -> string"):
        plan_evolution("t", old, StructType([StructField("xs", MapType(StringType(), StructType([StructField("a", StringType())])))]))


def test_every_public_definition_gets_a_table_and_clear_warnings(shared_data):
    from support.public_catalogs import VALID

    created = warned = 0
    for path, _, _ in VALID:
        catalog = load_catalog([shared_data / path])
        tables, warnings = message_tables(catalog, [shared_data / path.split("/")[0]])
        assert len(tables) == len(catalog)
        for table in tables:
            assert table.schema.fieldNames()[-5:] == ["source_file", "source_line", "source_fields", "ingested_at", "event_date"]
        for warning in warnings:
            assert warning.startswith("/messagegroups/")  # names the message (and the reference)
        created += len(tables)
        warned += len(warnings)
    # 40 references broken in the samples and 6 Protobuf texts that do not compile: payload as JSON text
    assert warned == 46
    assert created == 621
