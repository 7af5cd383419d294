"""`catalog/messages` written with Spark to Delta, from the demo catalog and from real catalogs."""

import json
import shutil

from deltalake import DeltaTable

from catalake.platform.catalog import load_catalog
from catalake.platform.warehouse.catalog_table import CATALOG_TABLE, SCHEMA, catalog_row, write_catalog_table
from support.paths import DEMO_CATALOG


def test_demo_catalog_table(store):
    catalog = load_catalog([DEMO_CATALOG])
    result = write_catalog_table(store, catalog)
    assert result["committed"] and len(result["added"]) == 9
    df = store.read(CATALOG_TABLE)
    assert df.columns == SCHEMA.fieldNames()
    assert df.count() == 9
    row = df.where("message_id = 'bikeshare.docks.mqtt.DockStatus'").first()
    assert row["protocol"] == "MQTT/5.0"
    assert row["base_message"] == "/messagegroups/bikeshare.docks/messages/bikeshare.docks.DockStatus"
    assert row["protocol_address"] == "bikeshare/{city}/stations/{station_id}/status"
    assert row["ce_type"] == "bikeshare.docks.DockStatus"
    assert row["placeholders"] == ["city", "station_id"]
    assert row["schema_format"] == "Avro/1.11.3"
    assert row["table_name"] == "bikeshare_docks_mqtt__dockstatus"
    assert {o["name"]: o["value"] for o in row["protocol_options"]} == {
        "qos": "1",
        "retain": "true",
        "topic_name": "bikeshare/{city}/stations/{station_id}/status",
    }
    attrs = {a["name"]: a for a in row["attributes"]}
    assert attrs["firmware"]["type"] == "string" and attrs["firmware"]["required"] is False
    assert attrs["id"]["implied"] and attrs["id"]["required"]
    assert json.loads(row["envelope_metadata_json"])["time"]["required"] is True
    # queryable with Spark SQL
    store.read(CATALOG_TABLE).createOrReplaceTempView("catalog_messages")
    kafka = store.spark.sql(
        "SELECT message_id FROM catalog_messages WHERE protocol = 'KAFKA' AND protocol_address = 'rides' ORDER BY 1"
    ).collect()
    assert [r[0] for r in kafka] == ["bikeshare.rides.kafka.RideEnded", "bikeshare.rides.kafka.RideStarted"]


def test_rematerializing_an_unchanged_catalog_commits_nothing(store):
    catalog = load_catalog([DEMO_CATALOG])
    write_catalog_table(store, catalog)
    version = store.version(CATALOG_TABLE)
    again = write_catalog_table(store, catalog)
    assert not again["committed"] and store.version(CATALOG_TABLE) == version


def test_a_changed_definition_is_one_new_commit(store, tmp_path):
    catalog_dir = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog_dir)
    write_catalog_table(store, load_catalog([catalog_dir]))
    doc = json.loads((catalog_dir / "bikeshare.xreg.json").read_text())
    started = doc["messagegroups"]["bikeshare.rides"]["messages"]["bikeshare.rides.RideStarted"]
    started["envelopemetadata"]["subject"]["value"] = "trips/{ride_id}"
    (catalog_dir / "bikeshare.xreg.json").write_text(json.dumps(doc))
    result = write_catalog_table(store, load_catalog([catalog_dir]))
    # the Kafka variant inherits the subject declaration, so its fingerprint changes too
    assert result["changed"] == [
        "/messagegroups/bikeshare.rides.kafka/messages/bikeshare.rides.kafka.RideStarted",
        "/messagegroups/bikeshare.rides/messages/bikeshare.rides.RideStarted",
    ]
    history = DeltaTable(store.path(CATALOG_TABLE)).history()
    assert [h["operation"] for h in history] == ["WRITE", "WRITE", "CREATE TABLE"]
    assert store.read(CATALOG_TABLE).where("ce_subject = 'trips/{ride_id}'").count() == 2


def test_an_xref_alias_is_a_row_naming_its_targets_table(store, tmp_path):
    catalog_dir = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog_dir)
    write_catalog_table(store, load_catalog([catalog_dir]))
    target = "/messagegroups/bikeshare.rides/messages/bikeshare.rides.RideStarted"
    (catalog_dir / "alias.xreg.json").write_text(json.dumps({"messagegroups": {"partners": {"messages": {
        "RideStarted": {"xref": target}}}}}))
    catalog = load_catalog([catalog_dir])
    assert len(catalog.messages) == 9 and len(catalog.aliases) == 1
    result = write_catalog_table(store, catalog)
    # the alias is added, and the target (which now names its alias) changes
    assert result["added"] == ["/messagegroups/partners/messages/RideStarted"] and result["changed"] == [target]
    row = store.read(CATALOG_TABLE).where("group_id = 'partners'").first()
    assert (row["xref"], row["table_name"], row["ce_type"]) == (target, "bikeshare_rides__ridestarted", "bikeshare.rides.RideStarted")


def test_real_feeders_catalog_table(store, shared_data):
    catalog = load_catalog([shared_data / "real-time-sources/feeders"])
    write_catalog_table(store, catalog)
    table = DeltaTable(store.path(CATALOG_TABLE)).to_pyarrow_table()
    assert table.num_rows == len(catalog) == 244
    rows = {r["xid"]: r for r in table.select(["xid", "protocol", "protocol_address", "base_message"]).to_pylist()}
    seattle = [r for x, r in rows.items() if r["protocol"] == "MQTT/5.0" and "seattle" in (r["protocol_address"] or "")]
    assert seattle and all(r["base_message"] for r in seattle)


def test_fingerprint_is_stable_and_sensitive():
    first = {m.xid: catalog_row(m)["fingerprint"] for m in load_catalog([DEMO_CATALOG])}
    second = {m.xid: catalog_row(m)["fingerprint"] for m in load_catalog([DEMO_CATALOG])}
    assert first == second and len(set(first.values())) == 9
