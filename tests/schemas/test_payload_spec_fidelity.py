"""Spec fidelity, third pass:
one test per point, each through the real catalog reader, matcher, classifier and compiled checks
on real catalogs and records. Plain Python."""

import datetime as dt
import json

from hypothesis import HealthCheck, given, settings, strategies as st

from catalake.display import catalog_rows
from catalake.platform.catalog import load_catalog, read_catalog
from catalake.platform.records.record import normalize
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.catalog_table import catalog_row
from catalake.platform.warehouse.message_tables import message_tables
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)


def write(tmp_path, groups: dict):
    folder = tmp_path / "catalog"
    folder.mkdir(exist_ok=True)
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": groups}))
    return folder


def classifier(tmp_path, groups: dict) -> Classifier:
    folder = write(tmp_path, groups)
    tables, errors = message_tables(load_catalog([folder]), [folder])
    assert not errors
    return Classifier(plan_for(tables, tmp_path / "warehouse", DAY, run="test", ingested_at=dt.datetime(2026, 11, 21)))


def event(type_: str = "t.T", **more) -> dict:
    return {"specversion": "1.0", "id": "1", "source": "/s", "type": type_, **more}


def outcome(c: Classifier, record: dict):
    """(the matcher's status, the winner's xid, whether the typed row is kept, the rules it breaks)."""
    rec = normalize(record)
    m = c.matcher.match(rec)
    if m.status == "ambiguous":
        m = c.resolve(rec, m)
    if m.status != "matched":
        return m.status, None, False, m.detail
    checked = c.typed(rec, m, "f.jsonl", 1)
    failures = [rule for rule, _ in checked.type_errors] + [e.id for e, _ in checked.failed]
    return m.status, m.winner.xid, checked.kept, failures


# -- 34.1 xref aliases

XR = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.xr"}},
      "dataschemaformat": "JsonSchema/draft-07", "dataschema": {"type": "object"}}
ALIASED = {"g1": {"messages": {"xr": XR}},
           "g2": {"protocol": "MQTT/5.0", "messages": {"xr": {"xref": "/messagegroups/g1/messages/xr"}}}}


def test_an_xref_alias_is_its_target_one_table_one_candidate(tmp_path):
    catalog = load_catalog([write(tmp_path, ALIASED)])
    (target,) = catalog.messages
    (alias,) = catalog.aliases
    assert target.xid == "/messagegroups/g1/messages/xr" and target.aliases == ("/messagegroups/g2/messages/xr",)
    assert alias.alias_of == target and alias.table_name == target.table_name == "g1__xr"
    # the alias does not take its own group's protocol: it is the target
    assert alias.protocol is None and alias.attributes == target.attributes
    # one table; every t.xr event is the target's, not ambiguous
    c = classifier(tmp_path, ALIASED)
    assert [t.message.table_name for t in c.plan.tables] == ["g1__xr"]
    assert outcome(c, event("t.xr", data={"a": 1})) == ("matched", target.xid, True, [])
    # the alias is visible in the catalog table and the listing (Dagster's preview, `catalake catalog`)
    row = catalog_row(alias)
    assert (row["xid"], row["xref"], row["table_name"]) == ("/messagegroups/g2/messages/xr", target.xid, "g1__xr")
    headers, rows = catalog_rows(catalog)
    assert [r[1] for r in rows] == ["xr", "xr"] and rows[1][headers.index("alias of")] == target.xid
    # an alias of an alias is the same definition again
    chained = {**ALIASED, "g3": {"messages": {"again": {"xref": "/messagegroups/g2/messages/xr"}}}}
    catalog = load_catalog([write(tmp_path, chained)])
    assert len(catalog.messages) == 1 and {a.alias_of.xid for a in catalog.aliases} == {target.xid}
    # an alias whose target is refused reports nothing more and is left out
    broken = {"g1": {"messages": {"xr": {**XR, "envelope": 5}}}, "g2": ALIASED["g2"]}
    catalog, problems = read_catalog([write(tmp_path, broken)])
    assert not catalog.messages and not catalog.aliases and {p.pointer for p in problems} == {"/messagegroups/g1/messages/xr/envelope"}


# -- 34.2 no JSON Schema keyword silently skipped

def json_schema_message(schema: dict, ctype: str = "t.T") -> dict:
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": ctype}},
            "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema}


def test_a_required_property_not_under_properties_is_enforced(tmp_path):
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message(
        {"type": "object", "properties": {"z": {"type": "string"}}, "required": ["x"]})}}})
    status, _, kept, failures = outcome(c, event(data={"y": 1}))
    assert status == "matched" and not kept and failures == ["data.x:required"]
    assert outcome(c, event(data={"x": 1}))[2]
    # every other keyword compiled only in part is decided by jsonschema too
    for schema, bad, good in (
        ({"type": ["string", "integer"]}, True, "a"),  # a type list: the column is JSON text
        ({"minimum": 5}, 3, 7),  # no type: a keyword applies to its kind only
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
         {"a": 1, "b": 2}, {"a": 1, "b": "x"}),
        ({"type": "object", "patternProperties": {"^n": {"type": "integer"}}}, {"n1": "x"}, {"n1": 1}),
        ({"type": "array", "items": [{"type": "string"}]}, [1], ["a"]),
        ({"type": "object", "properties": {"a": {"enum": [1, "x", True]}}}, {"a": False}, {"a": True}),
        ({"type": "object", "properties": {"a": {"allOf": [{"type": "integer"}, {"minimum": 3}]}}}, {"a": 2}, {"a": 4}),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "date-time", "maxLength": 20}}},
         {"a": "2026-11-20T10:00:00.000001Z"}, {"a": "2026-11-20T10:00:00Z"}),
    ):
        c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message(schema)}}})
        assert not outcome(c, event(data=bad))[2], (schema, bad)
        assert outcome(c, event(data=good))[2], (schema, good)
    # a required property whose schema is an enum of one scalar kind (no `type`) is compiled exactly:
    # present it is never null, absent or null it is refused, without jsonschema on every record
    from catalake.platform.schemas.coverage import uncompiled

    schema = {"type": "object", "required": ["s"], "properties": {"s": {"enum": ["ok", "failed"]}}}
    assert uncompiled(schema) == set()
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message(schema)}}})
    assert outcome(c, event(data={"s": "ok"}))[2]
    assert not outcome(c, event(data={}))[2] and not outcome(c, event(data={"s": None}))[2]
    assert not outcome(c, event(data={"s": "other"}))[2]
    # a timestamp column's enum is text jsonschema checks (it is never compared with the parsed time)
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string", "format": "date-time", "enum": ["2026-11-20T10:00:00Z"]}}}})}}})
    assert outcome(c, event(data={"a": ["2026-11-20T10:00:00Z"]}))[2]
    assert not outcome(c, event(data={"a": ["2026-11-20T11:00:00Z"]}))[2]


KEY = st.sampled_from(["a", "b", "c"])
LEAVES = st.sampled_from([
    {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"},
    {"type": "string", "minLength": 2}, {"type": "string", "maxLength": 1}, {"type": "string", "pattern": "^x"},
    {"type": "integer", "minimum": 0}, {"type": "number", "exclusiveMaximum": 10}, {"type": "integer", "multipleOf": 3},
    {"enum": ["x", "y"]}, {"type": "string", "enum": ["x", "y"]}, {"const": 1}, {"const": True}, {"enum": [1, "x"]},
    {"type": ["string", "integer"]}, {"type": ["string", "null"]}, {"not": {"type": "string"}}, {"minimum": 5},
    {"type": "string", "const": "x"}, {}, {"type": "object"}, {"type": "array"},
])


def json_schemas(children):
    objects = st.builds(
        lambda props, required, closed, extra: {
            "type": "object", "properties": props, "required": sorted(set(required)),
            **({"additionalProperties": False} if closed else {}), **extra},
        st.dictionaries(KEY, children, max_size=3), st.lists(KEY, max_size=2), st.booleans(),
        st.sampled_from([{}, {}, {"minProperties": 2}, {"dependentRequired": {"a": ["b"]}},
                         {"additionalProperties": {"type": "integer"}}, {"patternProperties": {"^c": {"type": "string"}}}]))
    arrays = st.builds(lambda items, extra: {"type": "array", "items": items, **extra}, children,
                       st.sampled_from([{}, {"minItems": 1}, {"maxItems": 1}, {"uniqueItems": True}, {"contains": {"const": 1}}]))
    combined = st.builds(lambda kind, a, b: {kind: [a, b]}, st.sampled_from(["allOf", "anyOf", "oneOf"]), children, children)
    return objects | arrays | combined


SCHEMAS = st.recursive(LEAVES, json_schemas, max_leaves=6).map(
    lambda s: s if s.get("type") == "object" else {"type": "object", "properties": {"a": s}})
# any JSON but null (an explicit null reads as an absent property: README "Choices where the spec is open")
VALUES = st.recursive(
    st.booleans() | st.integers(-2**53, 2**53) | st.sampled_from([0.5, 1.0, 3.0, -2.0, 12.5]) | st.text("xy", max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3), max_leaves=6)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=SCHEMAS, instances=st.lists(st.dictionaries(KEY, VALUES, max_size=3), min_size=1, max_size=6))
def test_catalake_decides_as_jsonschema_over_generated_schemas_and_instances(tmp_path_factory, schema, instances):
    """Property: for any schema of these keywords, a payload jsonschema (the oracle, draft-07,
    no format assertion) finds invalid is refused, and one it finds valid is kept, unless its
    table's column cannot hold a value (rule `type`: a union's members merged into one struct,
    `patternProperties` read as a map of one value type)."""
    import jsonschema

    referee = jsonschema.Draft7Validator(schema)
    c = classifier(tmp_path_factory.mktemp("jsp"), {"g": {"messages": {"T": json_schema_message(schema)}}})
    for instance in instances:
        status, _, kept, failures = outcome(c, event(data=instance))
        assert status == "matched"
        valid = referee.is_valid(instance)
        why = (instance, failures, [e.message for e in referee.iter_errors(instance)])
        assert valid or not kept, why
        assert kept or not valid or all(f.endswith(":type") for f in failures), why


# -- 34.3 JSON Schema integers

def test_an_integral_number_is_an_integer_and_one_beyond_64_bits_is_refused_as_such(tmp_path):
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message(
        {"type": "object", "properties": {"n": {"type": "integer"}}})}}})
    rec = normalize(event(data={"n": 1.0}))
    checked = c.typed(rec, c.matcher.match(rec), "f.jsonl", 1)
    assert checked.kept and checked.row["data"]["n"] == 1 and type(checked.row["data"]["n"]) is int
    assert outcome(c, event(data={"n": 1e3}))[2]
    rec = normalize(event(data={"n": 2**63}))
    checked = c.typed(rec, c.matcher.match(rec), "f.jsonl", 1)
    assert not checked.kept and checked.type_errors == [("data.n:type", (
        f"data.n: {2**63} does not fit the column's 64-bit integer ({-2**63} to {2**63 - 1})"))]
    assert outcome(c, event(data={"n": 1.5}))[3] == ["data.n:type"]


# -- 34.7 Kafka binary mode content type

def test_kafka_binary_mode_content_type_header_is_datacontenttype_kafka_binding_3_2_1(tmp_path):
    c = classifier(tmp_path, {"g": {"messages": {
        "Json": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.J"}}, "datacontenttype": "application/json"},
        "Text": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.J"}}, "datacontenttype": "text/plain"}}}})
    record = {"topic": "t", "partition": 0, "offset": 1, "payload": {"a": 1}, "headers": {
        "content-type": "application/json", "ce_datacontenttype": "text/plain",
        "ce_specversion": "1.0", "ce_id": "1", "ce_source": "/s", "ce_type": "t.J"}}
    rec = normalize(record)
    assert rec.attrs["datacontenttype"] == rec.content_type == "application/json"
    m = c.matcher.match(rec)
    assert m.status == "matched" and m.winner.xid.endswith("/Json")
    checked = c.typed(rec, m, "f.jsonl", 1)
    assert checked.kept and checked.row["datacontenttype"] == "application/json"


# -- 34.6 data never changed silently

def structure(schema: dict) -> dict:
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
            "dataschemaformat": "JsonStructure/1.0", "dataschema": schema}


def test_decimals_are_never_rounded_and_instants_need_their_offset(tmp_path):
    c = classifier(tmp_path, {"g": {"messages": {"T": structure({"type": "object", "properties": {
        "d": {"type": "decimal", "precision": 10, "scale": 2}, "at": {"type": "datetime"}}})}}})
    assert outcome(c, event(data={"d": "1.005"}))[2:] == (False, ["data.d:scale"])
    assert outcome(c, event(data={"d": 1.005}))[2:] == (False, ["data.d:scale"])
    rec = normalize(event(data={"d": "1.50", "at": "2026-11-20T10:00:00+01:00"}))
    checked = c.typed(rec, c.matcher.match(rec), "f.jsonl", 1)
    assert checked.kept and str(checked.row["data"]["d"]) == "1.50"
    assert checked.row["data"]["at"] == dt.datetime(2026, 11, 20, 9, tzinfo=dt.timezone.utc)
    assert outcome(c, event(data={"at": "2026-11-20T10:00:00"}))[2:] == (False, ["data.at:type"])
    # JSON Schema `format: date-time`: the column is a timestamp, so a value that is not one (no
    # offset, or no date-time at all) cannot be stored: an ERROR, not the WARN of other formats
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message({"type": "object", "properties": {
        "at": {"type": "string", "format": "date-time"}, "mail": {"type": "string", "format": "email"}}})}}})
    assert outcome(c, event(data={"at": "2026-11-20T10:00:00"}))[2:] == (False, ["data.at:type"])
    assert outcome(c, event(data={"at": "yesterday"}))[2:] == (False, ["data.at:type"])
    assert outcome(c, event(data={"at": "2026-11-20T10:00:00Z", "mail": "not an address"}))[2]  # a WARN


# -- 30.7 `$ref`: one rule

def test_a_ref_to_the_network_or_a_file_is_the_error_a_dataschemauri_to_it_is(tmp_path):
    from catalake.platform.catalog import CatalogError

    folder = write(tmp_path, {"g": {"messages": {
        "uri": {**json_schema_message({}), "dataschema": None},
        "file": json_schema_message({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}),
        "http": json_schema_message({"$ref": "http://example.com/s.json"}),
        "id": json_schema_message({"$id": "https://example.com/own.json", "type": "object",
                                   "properties": {"a": {"$ref": "https://example.com/own.json#/definitions/A"}},
                                   "definitions": {"A": {"type": "string"}}})}}})
    document = json.loads((folder / "c.xreg.json").read_text())
    uri = document["messagegroups"]["g"]["messages"]["uri"]
    del uri["dataschema"]
    uri["dataschemauri"] = "file:///etc/passwd"
    (folder / "c.xreg.json").write_text(json.dumps(document))
    try:
        message_tables(load_catalog([folder]), [folder])
    except CatalogError as exc:
        refused = {p.pointer.split("/")[4]: (p.rule, p.severity) for p in exc.problems}
    assert refused == {m: ("schema-reference-forbidden", "error") for m in ("uri", "file", "http")}
    # a `$ref` the catalog's own schemas answer (by `$id`) is no network reference
    assert "id" not in refused


def test_a_ref_cycle_that_reads_no_data_is_refused_for_every_definition(tmp_path):
    from catalake.platform.catalog import CatalogError

    endless = ({"$ref": "#"}, {"allOf": [{"$ref": "#"}]}, {"$ref": "#/definitions/a", "definitions": {
        "a": {"anyOf": [{"$ref": "#/definitions/b"}]}, "b": {"not": {"$ref": "#/definitions/a"}}}},
               {"type": "object", "properties": {"x": {"$ref": "#/definitions/x"}}, "definitions": {"x": {"$ref": "#/definitions/x"}}})
    folder = write(tmp_path, {"g": {"messages": {f"M{i}": json_schema_message(s, f"t.{i}") for i, s in enumerate(endless)}}})
    try:
        message_tables(load_catalog([folder]), [folder])
        refused = []
    except CatalogError as exc:
        refused = sorted((p.pointer, p.rule) for p in exc.problems)
    assert refused == [(f"/messagegroups/g/messages/M{i}/dataschema", "schema-reference-endless") for i in range(len(endless))]
    # recursion through data is fine
    c = classifier(tmp_path, {"g": {"messages": {"T": json_schema_message(
        {"type": "object", "properties": {"next": {"$ref": "#"}, "n": {"type": "integer"}}})}}})
    assert outcome(c, event(data={"n": 1, "next": {"n": 2}}))[2]
    assert not outcome(c, event(data={"n": 1, "next": {"n": "2"}}))[2]
