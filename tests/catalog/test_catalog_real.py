"""Every catalog in ../shared/data: counts as INDEX.md lists them, and specific resolved fields."""

import pytest

from catalake.platform.catalog import CatalogError, load_catalog, read_catalog
from support.public_catalogs import BROKEN, VALID


@pytest.mark.parametrize("path,groups,messages", VALID, ids=[r[0] for r in VALID])
def test_valid_catalog_yields_the_index_counts(shared_data, path, groups, messages):
    catalog = load_catalog([shared_data / path])
    assert len(catalog) == messages
    assert len(catalog.groups) == groups


def test_index_lists_every_valid_catalog(shared_data):
    assert len(VALID) == 99  # 101 catalogs with counts, minus the two that break a rule


@pytest.mark.parametrize("path,rule", sorted(BROKEN.items()), ids=sorted(BROKEN))
def test_broken_catalog_gives_a_clear_error(shared_data, path, rule):
    with pytest.raises(CatalogError) as err:
        load_catalog([shared_data / path])
    problems = err.value.problems
    assert {p.rule for p in problems} == {rule}
    assert all(p.file.endswith(path.rsplit("/", 1)[-1]) for p in problems)
    assert all(p.pointer for p in problems)  # a JSON pointer or a line/column, never nothing


def test_json_syntax_error_names_line_and_column(shared_data):
    _, problems = read_catalog([shared_data / "xregistry-cli@b7e0b0a/samples/protocols/nats-consumer-endpoint.cereg"])
    assert [p.pointer for p in problems] == ["line 17, column 17"]
    assert "double quotes" in problems[0].message


def test_required_false_error_points_at_the_original_attribute(shared_data):
    path = shared_data / "xregistry-cli@b7e0b0a/samples/message-definitions/Microsoft.Storage.cereg"
    _, problems = read_catalog([path])
    assert (
        "/definitionGroups/Microsoft.Storage/definitions/microsoft.Storage.BlobCreated/metadata/attributes/source/required"
        in {p.pointer for p in problems}
    )


def test_basemessage_merge_autobahn_mqtt(shared_data):
    catalog = load_catalog([shared_data / "real-time-sources/feeders/autobahn/xreg/autobahn.xreg.json"])
    mqtt = catalog.find("DE.Autobahn.RoadworkAppeared.mqtt", "DE.Autobahn.mqtt")
    # inherited from the CloudEvents base through basemessageuri
    assert mqtt.envelope == "CloudEvents/1.0"
    assert mqtt.attributes["type"]["value"] == "DE.Autobahn.RoadworkAppeared"
    assert mqtt.attributes["subject"] == {"value": "{identifier}", "type": "uritemplate", "required": False}
    assert mqtt.get("dataschemauri") == "#/schemagroups/DE.Autobahn.jstruct/schemas/DE.Autobahn.RoadEvent"
    # its own protocol binding, bare option values read as property definitions
    assert mqtt.protocol == "MQTT/5.0"
    assert mqtt.protocol_options["topic_name"]["value"] == (
        "traffic/de/autobahn/autobahn/{road}/roadwork/{identifier}/appeared"
    )
    assert mqtt.protocol_options["qos"] == {"value": 1, "type": "integer", "required": False}
    assert mqtt.base_chain == ("/messagegroups/DE.Autobahn/messages/DE.Autobahn.RoadworkAppeared",)
    assert mqtt.placeholders == ["identifier", "event_time", "road"]


def test_derived_definition_shadows_its_base(shared_data):
    catalog = load_catalog([shared_data / "xregistry-codegen/test/xreg/inkjet-kafka-basemessageuri.xreg.json"])
    kafka = catalog.find("Fabrikam.InkJetPrinter.Kafka.PrintJobStarted")
    assert kafka.get("description") == "Kafka variant of PrintJobStarted using basemessageuri"
    assert kafka.protocol == "KAFKA"
    assert kafka.protocol_options["key"]["value"] == "{tenantid}-{deviceid}"
    assert kafka.attributes["source"]["value"] == "{tenantid}/{deviceid}"
    assert kafka.get("dataschemaformat") == "JSONSchema/draft-07"


def test_group_protocol_is_inherited(shared_data):
    catalog = load_catalog([shared_data / "xregistry-codegen/test/xreg/test-filters.xreg.json"])
    for message in catalog:
        assert message.protocol == "AMQP/1.0"
        assert message.envelope == "CloudEvents/1.0"


def test_implied_cloudevents_attributes_are_filled_in(shared_data):
    catalog = load_catalog([shared_data / "real-time-sources@80e43be79-2025-11/pegelonline/xreg/pegelonline.xreg.json"])
    station = catalog.find("de.wsv.pegelonline.Station")
    assert station.attributes["id"] == {"implied": True, "type": "string", "required": True}
    assert station.attributes["specversion"] == {"implied": True, "type": "string", "required": True, "value": "1.0"}
    # declared without type or required: the spec's defaults (source is a uritemplate, required)
    assert station.attributes["type"] == {"value": "de.wsv.pegelonline.Station", "type": "string", "required": True}
    assert station.attributes["source"]["required"] is True
    assert station.attributes["subject"]["required"] is False
    assert station.get("datacontenttype") == "avro/binary" and station.datacontenttype_inferred


def test_2023_camelcase_shape(shared_data):
    catalog = load_catalog([shared_data / "xregistry-cli@b7e0b0a/samples/message-definitions/minimal-avro.cereg"])
    (message,) = catalog.messages
    assert message.envelope == "CloudEvents/1.0"  # from 'format'
    assert "attributes" not in message.attributes  # the 'attributes' wrapper is gone
    assert message.attributes["time"]["type"] == "timestamp" or "time" not in message.attributes
    assert message.get("dataschemauri", "").startswith("#/schemaGroups/")
    notes = catalog.files[0].notes
    assert notes["'definitionGroups' read as 'messagegroups'"] == 1
    assert notes["envelopemetadata: 'attributes' wrapper removed"] == 1


def test_2023_datetime_type_reads_as_timestamp(shared_data):
    catalog = load_catalog([shared_data / "xregistry-cli@b7e0b0a/samples/message-definitions/contoso-erp.cereg"])
    times = {m.attributes.get("time", {}).get("type") for m in catalog}
    assert times == {"timestamp"}
    assert any("read as 'timestamp'" in note for note in catalog.files[0].notes)


def test_2023_mqtt_properties_wrapper_and_topic(shared_data):
    catalog = load_catalog([shared_data / "xregistry-cli@b7e0b0a/samples/message-definitions/mqtt-sparkplugB.cereg"])
    nbirth = catalog.find("NBIRTH")
    assert nbirth.protocol == "MQTT/3.1.1"
    assert nbirth.protocol_options["topic_name"]["value"] == "spBv1.0/{group_id}/NBIRTH/{edge_node_id}"
    assert nbirth.protocol_options["retain"] == {"type": "boolean", "value": False, "required": False}
    assert catalog.warnings and all(w.rule == "dataschemaformat-required" for w in catalog.warnings)


def test_05_early_shape_with_binding_none(shared_data):
    catalog = load_catalog([shared_data / "real-time-sources@5cc5c112d-2024-09/gtfs/xreg/gtfs.xreg.json"])
    vp = catalog.find("GeneralTransitFeed.RealTime.VehiclePosition")
    assert vp.protocol is None  # "binding": "None"
    assert vp.envelope == "CloudEvents/1.0"
    assert vp.get("dataschemaformat") == "Avro"
    assert vp.get("dataschemauri") == "#/schemagroups/GeneralTransitFeed.RealTime/schemas/GeneralTransitFeed.RealTime.VehiclePosition"
    assert vp.attributes["source"]["value"] == "{feedurl}"


def test_05_late_shape_schemauri(shared_data):
    catalog = load_catalog([shared_data / "real-time-sources@d127a5b4a-2024-10/pegelonline/xreg/pegelonline.xreg.json"])
    station = catalog.find("de.wsv.pegelonline.Station")
    assert station.get("dataschemaformat") == "Avro"
    assert station.get("dataschemauri") == "#/schemagroups/de.wsv.pegelonline/schemas/de.wsv.pegelonline.Station"
    assert station.protocol is None


def test_value_wrapped_protocol_options_and_basemessageurl(shared_data):
    catalog = load_catalog([shared_data / "xregistry-codegen/test/xreg/inkjet-protocol-variants.xreg.json"])
    mqtt = catalog.find("Fabrikam.InkJetPrinter.MQTT.PrintJobStarted")
    assert mqtt.protocol_options["topic_name"]["value"] == "fabrikam/inkjet/{tenantid}/{deviceid}/printjob/started"
    assert mqtt.protocol_options["qos"]["value"] == 1
    kafka = catalog.find("Fabrikam.InkJetPrinter.Kafka.PrintJobStarted")
    assert kafka.protocol == "KAFKA"  # "Kafka"
    assert kafka.protocol_options["headers"] == {"correlationId": {"type": "string", "description": "Correlation identifier for tracing"}}
    assert kafka.get("dataschemaformat") == "Avro/1.11.1"  # inherited from the base via basemessageurl


def test_amqp_hyphen_and_underscore_sections_are_one(shared_data):
    hyphen = load_catalog([shared_data / "xregistry-codegen/samples/protocols/amqp-consumer-endpoint-2grp.xreg.json"])
    underscore = load_catalog([shared_data / "xregistry-codegen/samples/protocols/amqp-consumer-endpoint-2grp-ce.xreg.json"])
    for catalog in (hyphen, underscore):
        opts = catalog.messages[0].protocol_options
        assert set(opts["application_properties"]) == {"myProperty1", "myProperty2", "myProperty3"}
        assert opts["properties"]["subject"]["value"] == "myvalue"
        assert opts["header"]["ttl"]["type"] == "integer"


def test_split_file_catalog_reads_schemas_from_the_tree(shared_data):
    catalog = load_catalog([shared_data / "xregistry-codegen/samples/split-files/index.json"])
    schema = catalog.schemagroups["Fabrikam.Lumen"]["schemas"]["Fabrikam.Lumen.TurnedOnEventData"]
    assert schema["versions"]["1"]["schema"]["name"] == "TurnedOnEventData"
    assert catalog.files[0].notes["split-file schema read from schemagroups/ folder"] == 1
    assert catalog.find("Fabrikam.Lumen.TurnedOn").get("dataschemaformat") == "Avro/1.11.1"


def test_format_taken_from_the_referenced_registry_schema(shared_data):
    catalog = load_catalog([shared_data / "xregistry-codegen/samples/message-definitions/minimal.xreg.json"])
    assert {m.get("dataschemaformat") for m in catalog} == {"JsonSchema/draft-07"}
    assert catalog.files[0].notes["dataschemaformat taken from the referenced schema's format"] == 3


def test_whole_feeders_directory_merges_into_one_catalog(shared_data):
    catalog = load_catalog([shared_data / "real-time-sources/feeders"])
    assert len(catalog) == sum(m for p, _, m in VALID if p.startswith("real-time-sources/feeders/"))
    assert len({m.table_name for m in catalog}) == len(catalog)
