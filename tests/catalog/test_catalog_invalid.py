"""Invalid catalogs: each case gives exactly one clear error naming file, JSON pointer and rule."""

import copy
import json

import pytest

from catalake.platform.catalog import CatalogError, load_catalog, read_catalog

G = "/messagegroups/shop"
M = f"{G}/messages/shop.OrderPlaced"


def base_doc() -> dict:
    return {
        "messagegroups": {
            "shop": {
                "envelope": "CloudEvents/1.0",
                "messages": {
                    "shop.OrderPlaced": {
                        "envelope": "CloudEvents/1.0",
                        "envelopemetadata": {
                            "type": {"value": "shop.OrderPlaced"},
                            "source": {"type": "uritemplate", "value": "/shops/{shop}"},
                        },
                        "dataschemaformat": "JsonSchema/draft-07",
                        "dataschema": {"type": "object"},
                    },
                    "shop.OrderShipped": {
                        "envelope": "CloudEvents/1.0",
                        "envelopemetadata": {"type": {"value": "shop.OrderShipped"}},
                    },
                },
            },
            "shop.kafka": {
                "protocol": "KAFKA",
                "messages": {
                    "shop.kafka.OrderPlaced": {
                        "basemessage": "/messagegroups/shop/messages/shop.OrderPlaced",
                        "protocol": "KAFKA",
                        "protocoloptions": {"topic": "orders", "key": "{shop}"},
                    }
                },
            },
        }
    }


def msg(doc, group="shop", message="shop.OrderPlaced"):
    return doc["messagegroups"][group]["messages"][message]


CASES = {
    "envelope-format": (lambda d: msg(d).update(envelope="CloudEvents"), "envelope-format", f"{M}/envelope"),
    "protocol-format": (
        lambda d: msg(d, "shop.kafka", "shop.kafka.OrderPlaced").update(protocol="MQTT"),
        "protocol-format",
        "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced/protocol",
    ),
    "group-envelope-mismatch": (
        lambda d: msg(d, "shop", "shop.OrderShipped").update(envelope="Custom/2.0"),
        "group-envelope-mismatch",
        f"{G}/messages/shop.OrderShipped/envelope",
    ),
    "group-protocol-mismatch": (
        lambda d: msg(d, "shop.kafka", "shop.kafka.OrderPlaced").update(protocol="AMQP/1.0", protocoloptions={}),
        "group-protocol-mismatch",
        "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced/protocol",
    ),
    "dataschema-exclusive": (
        lambda d: msg(d).update(dataschemauri="#/schemagroups/s/schemas/x"),
        "dataschema-exclusive",
        f"{M}/dataschemauri",
    ),
    "dataschemaformat-required": (lambda d: msg(d).pop("dataschemaformat"), "dataschemaformat-required", f"{M}/dataschema"),
    "type-required-false": (
        lambda d: msg(d)["envelopemetadata"]["type"].update(required=False),
        "cloudevents-required-attribute",
        f"{M}/envelopemetadata/type/required",
    ),
    "id-required-false": (
        lambda d: msg(d)["envelopemetadata"].update(id={"required": False}),
        "cloudevents-required-attribute",
        f"{M}/envelopemetadata/id/required",
    ),
    "source-required-false": (
        lambda d: msg(d)["envelopemetadata"]["source"].update(required=False),
        "cloudevents-required-attribute",
        f"{M}/envelopemetadata/source/required",
    ),
    "specversion-value": (
        lambda d: msg(d)["envelopemetadata"].update(specversion={"value": "0.3"}),
        "specversion",
        f"{M}/envelopemetadata/specversion/value",
    ),
    "specversion-envelope": (
        lambda d: [d["messagegroups"]["shop"].pop("envelope"), msg(d).update(envelope="CloudEvents/0.3")],
        "specversion",
        f"{M}/envelope",
    ),
    "kafka-key-exclusive": (
        lambda d: msg(d, "shop.kafka", "shop.kafka.OrderPlaced")["protocoloptions"].update(key_base64="AAE="),
        "kafka-key-exclusive",
        "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced/protocoloptions/key_base64",
    ),
    "http-status-method-exclusive": (
        lambda d: msg(d, "shop", "shop.OrderShipped").update(protocol="HTTP", protocoloptions={"method": "POST", "status": "200"}),
        "http-status-method-exclusive",
        f"{G}/messages/shop.OrderShipped/protocoloptions/status",
    ),
    "basemessage-cycle": (
        lambda d: msg(d).update(basemessage="/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced"),
        "basemessage-cycle",
        None,
    ),
    "basemessage-dangling": (
        lambda d: msg(d, "shop.kafka", "shop.kafka.OrderPlaced").update(basemessage="/messagegroups/shop/messages/nope"),
        "basemessage-dangling",
        "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced/basemessage",
    ),
    "basemessage-absolute-url": (
        lambda d: msg(d, "shop.kafka", "shop.kafka.OrderPlaced").update(basemessage="https://example.com/catalog#/x"),
        "basemessage-dangling",
        "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced/basemessage",
    ),
    "xref-dangling": (
        lambda d: d["messagegroups"]["shop.kafka"]["messages"].update(alias={"xref": "/messagegroups/other/messages/x"}),
        "xref-dangling",
        "/messagegroups/shop.kafka/messages/alias/xref",
    ),
    "attribute-name": (
        lambda d: msg(d)["envelopemetadata"].update(OrderId={"type": "string"}),
        "structure:pattern",
        f"{M}/envelopemetadata",
    ),
    "required-not-boolean": (
        lambda d: msg(d)["envelopemetadata"]["source"].update(required="yes"),
        "structure:type",
        f"{M}/envelopemetadata/source/required",
    ),
    "mqtt-qos": (
        lambda d: msg(d, "shop", "shop.OrderShipped").update(protocol="MQTT/5.0", protocoloptions={"qos": 3}),
        "structure:enum",
        f"{G}/messages/shop.OrderShipped/protocoloptions/qos/value",
    ),
    "attribute-type": (
        lambda d: msg(d)["envelopemetadata"]["source"].update(type="url"),
        "structure:enum",
        f"{M}/envelopemetadata/source/type",
    ),
}


def write(tmp_path, doc, name="catalog.xreg.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_base_doc_is_valid(tmp_path):
    catalog = load_catalog([write(tmp_path, base_doc())])
    assert len(catalog) == 3


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_invalid_case_gives_one_clear_error(tmp_path, case):
    mutate, rule, pointer = CASES[case]
    doc = copy.deepcopy(base_doc())
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    (problem,) = err.value.problems
    assert problem.rule == rule
    assert problem.file == str(path)
    if pointer is not None:
        assert problem.pointer == pointer
    assert str(path) in str(err.value) and rule in str(err.value)


def test_cycle_names_the_whole_cycle(tmp_path):
    doc = base_doc()
    msg(doc).update(basemessage="/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced")
    with pytest.raises(CatalogError) as err:
        load_catalog([write(tmp_path, doc)])
    (problem,) = err.value.problems
    assert "/messagegroups/shop/messages/shop.OrderPlaced" in problem.message
    assert "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced" in problem.message


def test_malformed_json(tmp_path):
    path = tmp_path / "bad.xreg.json"
    path.write_text('{"messagegroups": {\n  "g": {,}\n}}')
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    (problem,) = err.value.problems
    assert (problem.rule, problem.pointer) == ("json-syntax", "line 2, column 9")


def test_malformed_yaml(tmp_path):
    path = tmp_path / "bad.cereg.yaml"
    path.write_text("messagegroups:\n  g: [unclosed\n")
    (problem,) = read_catalog([path])[1]
    assert problem.rule == "yaml-syntax" and problem.pointer.startswith("line ")


def test_not_a_catalog(tmp_path):
    path = write(tmp_path, {"hello": "world"}, "other.json")
    (problem,) = read_catalog([path])[1]
    assert problem.rule == "not-a-catalog"


def test_missing_file(tmp_path):
    (problem,) = read_catalog([tmp_path / "nope.json"])[1]
    assert problem.rule == "missing-file"


def test_conflicting_definitions_across_files(tmp_path):
    write(tmp_path, base_doc(), "a.xreg.json")
    other = base_doc()
    msg(other)["description"] = "changed"
    write(tmp_path, other, "b.xreg.json")
    with pytest.raises(CatalogError) as err:
        load_catalog([tmp_path])
    (problem,) = err.value.problems
    assert problem.rule == "duplicate-message" and problem.file.endswith("b.xreg.json")
    assert problem.pointer == M


def test_identical_definitions_across_files_merge(tmp_path):
    write(tmp_path, base_doc(), "a.xreg.json")
    write(tmp_path, base_doc(), "b.xreg.json")
    assert len(load_catalog([tmp_path])) == 3


def test_xref_alias_resolves_to_its_target(tmp_path):
    doc = base_doc()
    doc["messagegroups"]["shop.kafka"]["messages"]["alias"] = {"meta": {"xref": "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced"}}
    catalog = load_catalog([write(tmp_path, doc)])
    alias = catalog.find("alias")
    assert alias.get("xref") == "/messagegroups/shop.kafka/messages/shop.kafka.OrderPlaced"
    assert alias.protocol_options["topic"]["value"] == "orders"
    assert alias.attributes["type"]["value"] == "shop.OrderPlaced"


def test_schema_references_split_across_documents(tmp_path):
    doc = base_doc()
    msg(doc).pop("dataschema")
    msg(doc).pop("dataschemaformat")
    msg(doc)["dataschemauri"] = "#/schemagroups/shop/schemas/Order"
    write(tmp_path, doc, "messages.xreg.json")
    write(tmp_path, {"schemagroups": {"shop": {"schemas": {"Order": {"format": "Avro/1.11.3", "versions": {"1": {"schema": {"type": "record", "name": "Order", "fields": []}}}}}}}}, "schemas.xreg.json")
    catalog = load_catalog([tmp_path])
    assert catalog.find("shop.OrderPlaced").get("dataschemaformat") == "Avro/1.11.3"


def test_a_catalog_is_read_once_a_process_until_a_file_of_it_changes(tmp_path):
    """load_catalog and message_tables remember the last catalog while its files hold the same
    bytes; an edit (even one of the same size within the same clock tick) is read anew."""
    import json

    from catalake.platform.catalog import load_catalog
    from catalake.platform.config import DEMO_DIR
    from catalake.platform.warehouse.message_tables import message_tables

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    for f in (DEMO_DIR / "catalog").iterdir():
        (catalog / f.name).write_bytes(f.read_bytes())
    first = load_catalog([catalog])
    tables, _ = message_tables(first, [catalog])
    assert load_catalog([catalog]) is first and message_tables(first, [catalog])[0] == tables
    path = catalog / "bikeshare.xreg.json"
    document = json.loads(path.read_text())
    group = document["messagegroups"]["bikeshare.payments"]
    message = next(iter(group["messages"].values()))
    text = path.read_text()
    old = message.get("description", "")
    assert old, "the demo's message has a description to edit"
    path.write_text(text.replace(json.dumps(old)[1:-1], json.dumps(old)[1:-1][::-1], 1))  # same size
    second = load_catalog([catalog])
    assert second is not first
    assert {m.get("description") for m in second} != {m.get("description") for m in first}
