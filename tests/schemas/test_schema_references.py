"""Data schema references: every form, and never the network or a path outside the roots."""

import json

import pytest

from catalake.platform.catalog import load_catalog
from catalake.platform.schemas.references import SchemaReferenceError, resolve_data_schema
from support.paths import DEMO_CATALOG

REGISTRY = {
    "g": {"schemas": {
        "s": {"format": "Avro/1.11.3", "defaultversionid": "1", "versions": {
            "1": {"schema": {"type": "record", "name": "One", "fields": []}},
            "2": {"schema": {"type": "record", "name": "Two", "fields": []}}}},
        "nodefault": {"format": "JsonSchema/draft-07", "versions": {
            "1": {"schema": {"title": "v1"}},
            "10": {"schema": {"title": "v10", "definitions": {"X": {"type": "integer"}}}},
            "9": {"schema": {"title": "v9"}}}},
    }}
}


def catalog_with(tmp_path, registry=REGISTRY, **schema_fields):
    doc = {"messagegroups": {"grp": {"messages": {"m": {"envelope": "CloudEvents/1.0", **schema_fields}}}},
           "schemagroups": registry}
    path = tmp_path / "cat" / "catalog.xreg.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    catalog = load_catalog([path])
    return catalog.messages[0], catalog.schemagroups, [path.parent]


def resolve(tmp_path, registry=REGISTRY, **fields):
    message, registry, roots = catalog_with(tmp_path, registry, **fields)
    return resolve_data_schema(message, registry, roots)


def test_inline(tmp_path):
    s = resolve(tmp_path, dataschemaformat="JsonSchema/draft-07", dataschema={"type": "string"})
    assert (s.family, s.content, s.reference) == ("jsonschema", {"type": "string"}, None)


def test_no_schema(tmp_path):
    assert resolve(tmp_path) is None


def test_registry_pointer_uses_default_version(tmp_path):
    s = resolve(tmp_path, dataschemauri="#/schemagroups/g/schemas/s")
    assert s.content["name"] == "One" and s.family == "avro" and s.format == "Avro/1.11.3"


def test_registry_explicit_version(tmp_path):
    assert resolve(tmp_path, dataschemauri="/schemagroups/g/schemas/s/versions/2").content["name"] == "Two"


def test_xid_and_highest_version_without_default(tmp_path):
    s = resolve(tmp_path, dataschemaxid="/schemagroups/g/schemas/nodefault")
    assert s.content["title"] == "v10"  # numeric order, not text order


def test_type_name_suffix(tmp_path):
    s = resolve(tmp_path, dataschemauri="#/schemagroups/g/schemas/s/versions/1:One")
    assert s.type_name == "One" and s.content["name"] == "One"


def test_definitions_suffix_and_second_hash(tmp_path):
    a = resolve(tmp_path, dataschemauri="#/schemagroups/g/schemas/nodefault/versions/10:definitions/X")
    b = resolve(tmp_path, dataschemauri="#/schemagroups/g/schemas/nodefault/versions/10#/definitions/X")
    assert a.content == b.content == {"type": "integer"}


def test_relative_file_inside_the_roots(tmp_path):
    (tmp_path / "cat" / "schemas").mkdir(parents=True)
    (tmp_path / "cat" / "schemas" / "order.avsc").write_text(json.dumps({"type": "record", "name": "Order", "fields": []}))
    s = resolve(tmp_path, dataschemaformat="Avro/1.11.3", dataschemauri="schemas/order.avsc")
    assert s.content["name"] == "Order"


def test_file_uri_inside_the_roots(tmp_path):
    (tmp_path / "cat").mkdir(parents=True)
    target = tmp_path / "cat" / "x.proto"
    target.write_text('syntax = "proto3"; message X {}')
    s = resolve(tmp_path, dataschemaformat="Protobuf/3", dataschemauri=target.as_uri())
    assert s.family == "protobuf" and "message X" in s.content


def test_path_traversal_is_refused(tmp_path):
    with pytest.raises(SchemaReferenceError, match="outside the configured roots") as err:
        resolve(tmp_path, dataschemaformat="JsonSchema/draft-07", dataschemauri="../../etc/passwd")
    assert "/messagegroups/grp/messages/m" in str(err.value) and "../../etc/passwd" in str(err.value)


def test_file_uri_outside_the_roots_is_refused(tmp_path):
    with pytest.raises(SchemaReferenceError, match="outside the configured roots"):
        resolve(tmp_path, dataschemaformat="JsonSchema/draft-07", dataschemauri="file:///etc/passwd")


def test_http_is_never_fetched(tmp_path):
    with pytest.raises(SchemaReferenceError, match="never fetched"):
        resolve(tmp_path, dataschemaformat="JsonSchema/draft-07", dataschemauri="http://example.com/schema.json")


def test_missing_registry_entry_names_message_and_reference(tmp_path):
    with pytest.raises(SchemaReferenceError) as err:
        resolve(tmp_path, dataschemaformat="Avro", dataschemauri="#/schemagroups/g/schemas/nope")
    assert "/messagegroups/grp/messages/m" in str(err.value) and "#/schemagroups/g/schemas/nope" in str(err.value)


def test_demo_catalog_schemas_resolve():
    catalog = load_catalog([DEMO_CATALOG])
    families = {m.message_id: resolve_data_schema(m, catalog.schemagroups, [DEMO_CATALOG]).family for m in catalog}
    assert families["bikeshare.docks.mqtt.DockStatus"] == "avro"
    assert families["bikeshare.rides.kafka.RideEnded"] == "jsonschema"


def test_real_catalog_references(shared_data):
    base = shared_data / "xregistry-codegen/samples/message-definitions"
    catalog = load_catalog([base / "mqtt-sparkplugB.xreg.json"])
    with pytest.raises(SchemaReferenceError, match="not in the catalog's schema registry"):
        resolve_data_schema(catalog.find("NBIRTH"), catalog.schemagroups, [base])
    storage = load_catalog([shared_data / "xregistry-cli@b7e0b0a/samples/message-definitions/contoso-erp.cereg"])
    resolved = [resolve_data_schema(m, storage.schemagroups, [base]) for m in storage]
    assert all(r is None or r.family == "jsonschema" for r in resolved)


def test_part_of_a_document_keeps_document_relative_refs(tmp_path):
    from catalake.platform.schemas.json_schema import json_schema_to_spark

    registry = {"g": {"schemas": {"doc": {"format": "JsonSchema/draft-07", "versions": {"1": {"schema": {
        "definitions": {"A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}}, "B": {"type": "integer"}}}}}}}}}
    s = resolve(tmp_path, registry, dataschemauri="#/schemagroups/g/schemas/doc/versions/1:definitions/A")
    dtype, _ = json_schema_to_spark(s.content, document=s.document)
    assert dtype["b"].dataType.simpleString() == "bigint"


def test_forbidden_references_are_catalog_errors_that_refuse_the_tables(tmp_path):
    from catalake.platform.catalog import CatalogError
    from catalake.platform.warehouse.message_tables import message_tables

    def message(ref):
        return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": ref}},
                "dataschemaformat": "JsonSchema/draft-07", "dataschemauri": ref}

    folder = tmp_path / "cat"
    folder.mkdir()
    (tmp_path / "outside.json").write_text('{"type": "object"}')
    path = folder / "catalog.xreg.json"
    path.write_text(json.dumps({"messagegroups": {"g": {"messages": {
        "a": message("file:///etc/passwd"), "b": message("https://example.com/s.json"),
        "c": message("../outside.json"), "d": message("missing.json")}}}}))
    with pytest.raises(CatalogError) as refused:
        message_tables(load_catalog([path]), [folder])
    assert [(p.file, p.pointer, p.rule) for p in refused.value.problems] == [
        (str(path), f"/messagegroups/g/messages/{m}/dataschemauri", "schema-reference-forbidden") for m in "abc"]
    # a reference that only fails to resolve stays a warning: the table keeps the payload as JSON text
    path.write_text(json.dumps({"messagegroups": {"g": {"messages": {"d": message("missing.json")}}}}))
    tables, warnings = message_tables(load_catalog([path]), [folder])
    assert len(tables) == 1 and len(warnings) == 1 and "no such file" in warnings[0]
