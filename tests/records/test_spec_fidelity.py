"""Rules of the CloudEvents spec and its bindings that a rule-by-rule audit found broken
, one test per rule, named by the rule and its spec section. Plain Python."""

import json

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import CompiledCatalog
from catalake.platform.records.attributes import media_type_matches
from catalake.platform.records.record import normalize
from support.runs import plan_for


def compiled(tmp_path, messages: dict) -> CompiledCatalog:
    path = tmp_path / "catalog.xreg.json"
    path.write_text(json.dumps({"messagegroups": {"g": {"messages": messages}}}))
    return CompiledCatalog(load_catalog([path]).messages)


def ce_definition(ctype: str, **more) -> dict:
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, "datacontenttype": {"value": ctype}}, **more}


def event(ctype: str | None) -> dict:
    out = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t.T", "data": "x"}
    return {**out, "datacontenttype": ctype} if ctype is not None else out


def test_datacontenttype_is_a_media_type_compared_case_insensitively_rfc9110_8_3_1():
    assert media_type_matches("text/plain; charset=utf-8", "TEXT/Plain; CharSet=UTF-8")
    assert media_type_matches("text/plain; charset=utf-8", 'text/plain;charset="utf-8"')
    assert not media_type_matches("text/plain; charset=utf-8", "text/plain; charset=latin-1")


def test_datacontenttype_parameters_the_definition_does_not_declare_do_not_matter_rfc2046(tmp_path):
    catalog = compiled(tmp_path, {"T": ce_definition("application/json")})
    for ctype in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        assert catalog.match(normalize(event(ctype))).status == "matched", ctype
    for ctype in ("application/xml", "application/jsonx"):
        assert catalog.match(normalize(event(ctype))).status == "no_match", ctype


def test_mqtt_3_1_1_carries_structured_events_without_a_content_type_mqtt_binding_3_1(tmp_path):
    catalog = compiled(tmp_path, {
        "T": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
              "protocol": "MQTT/3.1.1", "protocoloptions": {"topic_name": {"value": "a/b"}}},
        "Plain": {"protocol": "MQTT/3.1.1", "protocoloptions": {"topic_name": {"value": "plain"}}}})
    structured = normalize({"protocol": "MQTT/3.1.1", "topic_name": "a/b", "qos": 1,
                            "payload": json.dumps(event(None) | {"data": {"n": 1}})})
    assert structured.is_structured and structured.attrs["type"] == "t.T" and structured.data == {"n": 1}
    assert catalog.match(structured).status == "matched"
    # a payload that is no event stays a plain MQTT record, for definitions without an envelope
    plain = normalize({"protocol": "MQTT/3.1.1", "topic_name": "plain", "payload": {"n": 1}})
    assert not plain.is_structured and plain.attrs is None
    assert catalog.match(plain).winner.xid.endswith("/Plain")
    # MQTT 5 has properties: without a content type its payload is the data (binary mode)
    binary = normalize({"protocol": "MQTT/5.0", "topic_name": "a/b", "payload": json.dumps(event(None))})
    assert not binary.is_structured


def test_http_and_nats_attribute_headers_are_unquoted_then_percent_decoded_http_binding_3_1_3_2(tmp_path):
    catalog = compiled(tmp_path, {"T": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, "subject": {"value": "hello world"}}}})
    for sent in ("hello%20world", '"hello world"', '"hello%20world"'):
        http = normalize({"protocol": "HTTP", "method": "POST", "path": "/", "body": {}, "headers": {
            "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t.T", "ce-subject": sent}})
        nats = normalize({"protocol": "NATS", "subject": "x", "payload": {}, "headers": {
            "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t.T", "ce-subject": sent}})
        assert http.attrs["subject"] == nats.attrs["subject"] == "hello world", sent
        assert catalog.match(http).status == catalog.match(nats).status == "matched"
    http = normalize({"protocol": "HTTP", "method": "POST", "path": "/", "body": {}, "headers": {
        "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t.T", "ce-subject": "caf%C3%A9 %FF"}})
    assert http.attrs["subject"] == "caf%C3%A9 %FF"  # not UTF-8 once decoded: kept as sent


def test_uritemplate_operators_match_their_expansion_rfc6570_3_2(tmp_path):
    catalog = compiled(tmp_path, {"T": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, "source": {"value": "https://x{/site}/items{?page}", "type": "uritemplate"}}}})
    cases = {"https://x/items": {"site": None, "page": None},
             "https://x/s1/items?page=2": {"site": "s1", "page": "2"},
             "https://x/items?page=": {"site": None, "page": ""}}
    for source, placeholders in cases.items():
        m = catalog.match(normalize({**event(None), "source": source}))
        assert m.status == "matched" and m.placeholders == placeholders, source
    for source in ("https://x/items?size=2", "https://x/a/b/items"):
        assert catalog.match(normalize({**event(None), "source": source})).status == "no_match", source


def read(tmp_path, message: dict):
    from catalake.platform.catalog import read_catalog

    path = tmp_path / "catalog.xreg.json"
    path.write_text(json.dumps({"messagegroups": {"g": {"messages": {"T": message}}},
                                "schemagroups": {"s": {"schemas": {"x": {"format": "JsonSchema/draft-07", "versions": {
                                    "1": {"schema": {"type": "object"}}}}}}}}))
    return read_catalog([path])


def test_dataschemauri_goes_with_dataschemaxid_xregistry_message_1_0_rc2(tmp_path):
    base = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}}, "dataschemaformat": "JsonSchema/draft-07"}
    catalog, problems = read(tmp_path, {**base, "dataschemauri": "#/schemagroups/s/schemas/x",
                                        "dataschemaxid": "/schemagroups/s/schemas/x"})
    assert problems == [] and len(catalog.messages) == 1
    catalog, problems = read(tmp_path, {**base, "dataschemaxid": "/schemagroups/s/schemas/x"})
    assert [(p.rule, p.severity) for p in problems] == [("dataschemaxid-without-uri", "warning")] and len(catalog.messages) == 1
    catalog, problems = read(tmp_path, {**base, "dataschema": {}, "dataschemaxid": "/schemagroups/s/schemas/x"})
    assert [(p.rule, p.severity) for p in problems] == [("dataschema-exclusive", "error")] and not catalog.messages


def test_attribute_names_over_20_characters_are_a_warning_cloudevents_naming_convention(tmp_path):
    long_name = "averyveryverylongattributename"
    catalog, problems = read(tmp_path, {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, long_name: {"required": True}}})
    assert [(p.rule, p.severity, p.pointer) for p in problems] == [
        ("attribute-name-length", "warning", f"/messagegroups/g/messages/T/envelopemetadata/{long_name}")]
    assert len(catalog.messages) == 1
    # names are still lower-case letters and digits (a MUST)
    catalog, problems = read(tmp_path, {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, "Upper_Case": {}}})
    assert [p.severity for p in problems] == ["error"] and not catalog.messages


def test_constraint_values_are_checked_when_the_catalog_is_read_json_schema_validation_6(tmp_path):
    import pytest

    from catalake.platform.catalog import CatalogError, load_catalog
    from catalake.platform.warehouse.message_tables import message_tables

    def tables(schema_text: str):
        path = tmp_path / "catalog.xreg.json"
        path.write_text('{"messagegroups": {"g": {"messages": {"T": {"envelope": "CloudEvents/1.0", '
                        '"envelopemetadata": {"type": {"value": "t.T"}}, "dataschemaformat": "JsonSchema/draft-07", '
                        f'"dataschema": {schema_text}}}}}}}}}}}')
        return message_tables(load_catalog([path]), [tmp_path])

    for schema, said in [('{"type": "string", "minLength": true}', "minLength True is not a non-negative integer"),
                         ('{"type": "string", "maxLength": -1}', "maxLength -1 is not a non-negative integer"),
                         ('{"type": "object", "properties": {"n": {"type": "number", "maximum": 1e999}}}',
                          "maximum inf is not a finite number")]:
        with pytest.raises(CatalogError) as refused:
            tables(schema)
        (problem,) = refused.value.problems
        assert problem.rule == "schema-constraint-invalid" and said in problem.message
        assert problem.pointer == "/messagegroups/g/messages/T/dataschema"
    # draft-04's boolean exclusiveMinimum is still a valid form
    found, warnings = tables('{"type": "number", "minimum": 0, "exclusiveMinimum": true}')
    assert len(found) == 1 and not warnings


def test_placeholders_are_valid_names_xregistry_message_value_rfc6570_level_1(tmp_path):
    def problems(source: str):
        _, found = read(tmp_path, {"envelope": "CloudEvents/1.0", "envelopemetadata": {
            "type": {"value": "t.T"}, "source": {"value": source, "type": "uritemplate"}}})
        return [(p.rule, p.severity) for p in found]

    assert problems("/sites/{site}/docks/{dock.id}") == []
    assert problems("/sites/{site name}") == [("placeholder", "error")]
    assert problems("/sites/{site") == [("placeholder", "error")]
    assert problems("/sites/{}") == [("placeholder", "error")]
    assert problems("/items{?page}") == [("placeholder-level", "warning")]  # matched per RFC 6570 all the same


def test_the_content_type_is_declared_alike_everywhere_xregistry_message_datacontenttype(tmp_path):
    def problems(**sections):
        _, found = read(tmp_path, {"envelope": "CloudEvents/1.0", "protocol": "MQTT/5.0", **sections})
        return [(p.rule, p.pointer.rsplit("/T/", 1)[1]) for p in found]

    meta = {"type": {"value": "t.T"}, "datacontenttype": {"value": "application/json"}}
    assert problems(envelopemetadata=meta, datacontenttype="Application/JSON",
                    protocoloptions={"content_type": {"value": "application/json"}}) == []
    assert problems(envelopemetadata=meta, protocoloptions={"content_type": {"value": "text/plain"}}) == [
        ("datacontenttype-consistent", "protocoloptions/content_type/value")]


def test_http_methods_and_field_names_are_tokens_and_amqp_keys_symbols_rfc9110_5_6_2(tmp_path):
    def rules(protocol, options):
        _, found = read(tmp_path, {"protocol": protocol, "protocoloptions": options})
        return [(p.rule, p.pointer.rsplit("/T/", 1)[1]) for p in found]

    assert rules("HTTP/1.1", {"method": {"value": "POST"}, "headers": [{"name": "X-Tenant", "value": "a"}]}) == []
    assert rules("HTTP/1.1", {"method": {"value": "PO ST"}}) == [("structure:pattern", "protocoloptions/method/value")]
    assert rules("HTTP/1.1", {"headers": [{"name": "X Tenant"}]}) == [("structure:pattern", "protocoloptions/headers/0/name")]
    assert rules("AMQP/1.0", {"application_properties": {"tenant": {"value": "a"}}}) == []
    assert [r for r, _ in rules("AMQP/1.0", {"application_properties": {"ténant": {"value": "a"}}})] == ["structure:pattern"]


def test_an_http_batch_is_one_record_per_event_http_binding_3_3(tmp_path):
    import datetime as dt

    from catalake.platform.landing.listing import partition_files
    from catalake.platform.landing.planning import plan_tasks
    from catalake.platform.runs.classifier import Classifier
    from catalake.platform.warehouse.message_tables import message_tables

    catalog_path = tmp_path / "catalog.xreg.json"
    catalog_path.write_text(json.dumps({"messagegroups": {"g": {"messages": {
        "T": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}}}}}}}))
    day = tmp_path / "landing" / "2026-11-20"
    day.mkdir(parents=True)
    events = [event(None) | {"id": str(i)} for i in range(3)] + [{**event(None), "type": "t.Other"}]
    records = [
        {"protocol": "HTTP", "method": "POST", "path": "/", "headers": {"Content-Type": "application/cloudevents-batch+json"},
         "body": events},
        {"protocol": "HTTP", "method": "POST", "path": "/", "headers": {"Content-Type": "application/cloudevents-batch+json"},
         "body": json.dumps(events[:1])},  # the body as JSON text
        {"protocol": "HTTP", "method": "POST", "path": "/", "headers": {"content-type": "application/cloudevents-batch+json"},
         "body": []},
    ]
    (day / "http.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    tables, _ = message_tables(load_catalog([catalog_path]), [tmp_path])
    plan = plan_for(tables, tmp_path / "warehouse", dt.date(2026, 11, 20))
    pieces = [p for task in plan_tasks(None, partition_files(tmp_path / "landing", dt.date(2026, 11, 20)), 1) for p in task]
    result = Classifier(plan).run("0", pieces)
    # 5 events and an empty batch: every one in exactly one place
    assert result.records == 6 and result.rows == {"messages/g__t": 4, "deadletter": 2}
    assert result.deadletter == {"no_match": 1, "not_an_event": 1}


def test_patterns_are_read_as_ecma_262_reads_them_json_schema_validation_6_3_3(tmp_path):
    import pytest

    from catalake.platform.catalog import CatalogError
    from catalake.platform.patterns import PatternError, compile_pattern
    from catalake.platform.warehouse.message_tables import message_tables

    assert compile_pattern(r"^\d+$").search("١٢٣") is None  # Arabic-Indic digits: not \d in ECMA 262
    assert compile_pattern(r"^\d+$").search("123")
    assert compile_pattern(r"^(?<year>\d{4})-").search("2026-11")  # a named group, as ECMA 262 writes it
    assert compile_pattern(r"^(?<year>\d{4})-").search("20261-") is None
    for pattern in ("[^]", r"\u{1F600}", r"\cJ", "(unclosed"):
        with pytest.raises(PatternError):
            compile_pattern(pattern)

    path = tmp_path / "catalog.xreg.json"
    path.write_text(json.dumps({"messagegroups": {"g": {"messages": {"T": {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschema": {"type": "string", "pattern": "a[^]b"}}}}}}))
    with pytest.raises(CatalogError) as refused:
        message_tables(load_catalog([path]), [tmp_path])
    assert refused.value.problems[0].rule == "schema-constraint-invalid" and "[^]" in refused.value.problems[0].message


def test_the_dataschema_attribute_names_the_referenced_schema_and_options_come_with_their_selector(tmp_path):
    base = {"envelope": "CloudEvents/1.0", "dataschemaformat": "JsonSchema/draft-07",
            "dataschemauri": "#/schemagroups/s/schemas/x"}
    _, problems = read(tmp_path, {**base, "envelopemetadata": {"type": {"value": "t.T"}, "dataschema": {
        "value": "https://example.com/other.json"}}})
    assert [(p.rule, p.severity) for p in problems] == [("dataschema-attribute", "error")]
    _, problems = read(tmp_path, {**base, "envelopemetadata": {"type": {"value": "t.T"}, "dataschema": {
        "value": "#/schemagroups/s/schemas/x"}}})
    assert problems == []
    _, problems = read(tmp_path, {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
                                  "protocol": "MQTT/5.0"})
    assert [(p.rule, p.severity) for p in problems] == [("protocoloptions-missing", "warning")]


def test_a_structured_events_string_data_is_not_deserialized_again_json_format_3_1_2(tmp_path):
    catalog = compiled(tmp_path, {"T": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
                                        "dataschemaformat": "JsonSchema/draft-07", "dataschema": {"type": "string"}}})
    rec = normalize({**event("application/json"), "data": '{"a":1}'})
    assert rec.data == '{"a":1}' and catalog.match(rec).status == "matched"
    # a protocol record's payload given as JSON text is the payload's bytes: decoded once
    kafka = normalize({"topic": "t", "partition": 0, "offset": 1, "payload": '{"a":1}',
                       "headers": ["ce_specversion", "1.0", "ce_id", "1", "ce_source", "/s", "ce_type", "t.T"]})
    assert kafka.data == {"a": 1}
