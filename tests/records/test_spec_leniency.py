"""Leniencies the specs leave to decide: one test per decision, each a day of
real records through the executor's own classifier (records.py, matcher.py, the typed row and
its checks; plain Python, no Spark), read back from the Parquet files it writes. The decisions
are in README.md, "Choices where the spec is open"."""

import datetime as dt
import json

from support.onepass import run_day
from support.paths import SHARED_DATA

UTC = dt.timezone.utc
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def message(ctype: str = "t.T", schema: dict | None = None, **more) -> dict:
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": ctype}, **more.pop("attributes", {})},
            "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema or SCHEMA, **more}


def event(ctype: str = "t.T", **attrs) -> dict:
    return {"specversion": "1.0", "id": "1", "source": "/s", "type": ctype, "data": {"a": "x"}, **attrs}


def by_line(rows: dict) -> dict:
    """source line -> (reason, detail, candidates) of every dead letter, or the table name of a kept row."""
    out = {}
    for name, table_rows in rows.items():
        for row in table_rows:
            out[row["source_line"]] = ((row["reason"], row["detail"], row["candidates"]) if name == "deadletter" else name)
    return out


def kafka(headers: dict, payload, topic: str = "t", offset: int = 1) -> dict:
    return {"topic": topic, "partition": 0, "offset": offset, "headers": headers, "payload": json.dumps(payload)}


def test_a_json_number_id_or_specversion_is_an_invalid_attribute_ce_json_format(tmp_path):
    """CloudEvents JSON format, "Type System Mapping": String, URI, URI-reference and Timestamp
    attributes are JSON strings. A structured event sending `id`, `specversion` (or any other
    attribute CloudEvents defines as text) as another JSON value is a malformed envelope: an
    `invalid_attribute` dead letter naming it, not a row whose id is the number's text.
    Extension attributes may be JSON numbers and booleans (Integer, Boolean)."""
    result, rows = run_day(tmp_path, {"T": message()}, [
        event(id=5),
        event(specversion=1.0),
        event(source=True, subject=7),
        # a structured event carried by Kafka is the JSON event format too
        kafka({"content-type": "application/cloudevents+json"}, event(id=7)),
        event(seq=5, flag=True),  # extensions: Integer and Boolean as JSON values
        event(id="5"),
    ])
    got = by_line(rows)
    assert got[1][:2] == ("invalid_attribute",
                          "CloudEvents attribute(s) id is a JSON number (the JSON event format writes them as JSON strings)")
    assert got[2][0] == "invalid_attribute" and "specversion is a JSON number" in got[2][1]
    assert got[3][0] == "invalid_attribute" and "source is a JSON boolean, subject is a JSON number" in got[3][1]
    assert got[4][0] == "invalid_attribute" and "id is a JSON number" in got[4][1]
    assert got[5] == got[6] == "messages/g__t"
    assert result.deadletter == {"invalid_attribute": 4}
    kept = rows["messages/g__t"]
    assert [r["id"] for r in kept] == ["1", "5"] and dict(kept[0]["other_attributes"]) == {"seq": "5", "flag": "true"}


def test_an_extension_attribute_name_outside_a_z_0_9_is_kept_not_refused_ce_naming(tmp_path):
    """CloudEvents 1.0 "Attribute Naming Convention" says lower-case a-z and 0-9. catalake keeps
    an event whose extension attribute is named otherwise (real producers send `operationId`,
    `trace-id`): the event is stored, the name kept verbatim in `other_attributes`; nothing is
    renamed or lost. A mis-cased core attribute (`Type`) is not the attribute: that record lacks
    `type` and is a `missing_required_attribute` dead letter."""
    records = [
        {"specversion": "1.0", "id": "1", "source": "/s", "Type": "t.T", "data": {"a": "x"}},
        event(**{"my-ext": "1"}),
        event(**{"my_ext": "1", "myExt": "2"}),
        kafka({"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/s", "ce_type": "t.T", "ce_trace-id": "9"},
              {"a": "x"}),
    ]
    azure = (SHARED_DATA / "azure-rest-api-specs/specification/eventgrid/data-plane/EventGridSystemEvents/examples"
             / "2018-01-01/blob_created.json")
    if azure.is_file():  # a real event as the Azure API examples give it: `operationId` beside the attributes
        records.append(json.loads(azure.read_text()))
    result, rows = run_day(tmp_path, {"T": message(), "Blob": message("Microsoft.Storage.BlobCreated", {"type": "object"})}, records)
    got = by_line(rows)
    assert got[1][0] == "missing_required_attribute" and "type" in got[1][1]
    assert got[2] == got[3] == got[4] == "messages/g__t"
    kept = {row["source_line"]: dict(row["other_attributes"]) for row in rows["messages/g__t"]}
    assert "my-ext" in kept[2] and {"my_ext", "myExt"} <= set(kept[3]) and "trace-id" in kept[4]
    if azure.is_file():
        assert got[5] != "deadletter" and not isinstance(got[5], tuple)
    assert result.deadletter == {"missing_required_attribute": 1}


def test_an_empty_type_is_an_invalid_attribute_not_no_match_ce_context_attributes(tmp_path):
    """CloudEvents 1.0 "Context Attributes": `type` (like `id`, `source` and, when present,
    `subject`) MUST be a non-empty string. An empty one is a malformed envelope, an
    `invalid_attribute` dead letter, not an event type the catalog lacks (`no_match`, which the
    drift report would propose as a new definition); in binary mode too."""
    result, rows = run_day(tmp_path, {"T": message()}, [
        event(""),
        event(subject=""),
        kafka({"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/s", "ce_type": ""}, {"a": "x"}),
        event("t.unknown"),
        event(subject="s"),
    ])
    got = by_line(rows)
    assert got[1][:2] == got[3][:2] == ("invalid_attribute", "empty CloudEvents attribute(s): type (must be non-empty)")
    assert got[2][:2] == ("invalid_attribute", "empty CloudEvents attribute(s): subject (must be non-empty)")
    assert got[4][0] == "no_match" and got[5] == "messages/g__t"
    assert result.deadletter == {"invalid_attribute": 3, "no_match": 1}


def test_a_urireference_with_angle_brackets_matches_no_definition_rfc_3986(tmp_path):
    """A `urireference` (and `uri`) attribute holds none of the characters RFC 3986 leaves out of
    URIs: `<a>` is not of the declared type, so the definition does not take the record (it was
    accepted once; attributes.URI_CHARACTER refuses it now, for the matcher and the suite alike)."""
    T = message(attributes={"ref": {"type": "urireference", "required": True}, "link": {"type": "uri"}})
    result, rows = run_day(tmp_path, {"T": T}, [
        event(ref="<a>"),
        event(ref="/a/<b>"),
        event(ref="/a?b#c", link="https://x.example/<a>"),
        event(ref="/a?b#c", link="https://x.example/a"),
        event(ref=""),  # an empty reference is a same-document reference
    ])
    got = by_line(rows)
    assert [got[n][0] for n in (1, 2, 3)] == ["no_match"] * 3
    assert got[4] == got[5] == "messages/g__t"
    assert [(r["ref"], r["link"]) for r in rows["messages/g__t"]] == [("/a?b#c", "https://x.example/a"), ("", None)]
    assert result.deadletter == {"no_match": 3}


def test_a_plain_timestamp_value_is_a_constant_but_the_creation_time_placeholder_xregistry_value(tmp_path):
    """rc2 "value": setting a value makes it constant for every instance of the message, timestamps
    included, so a plain timestamp `value` filters, compared as an instant (`+01:00` is the same
    time). The creation-time placeholder is no filter: rc2's `0000-01-01T00:00:00Z`, which
    producers replace with the current time, and `0001-01-01T00:00:00+00:00`, which the xRegistry
    tools write for it (xregistry-codegen's Microsoft.Storage catalog)."""
    def timed(ctype: str, value: str) -> dict:
        return message(ctype, attributes={"time": {"type": "timestamp", "value": value}})

    result, rows = run_day(tmp_path, {
        "A": timed("t.A", "2026-11-20T10:00:00Z"), "B": timed("t.B", "0000-01-01T00:00:00Z"),
        "C": timed("t.C", "0001-01-01T00:00:00+00:00"),
    }, [
        event("t.A", time="2026-11-20T10:00:00Z"),
        event("t.A", time="2026-11-20T11:00:00+01:00"),
        event("t.A", time="2026-11-20T10:00:01Z"),
        event("t.A"),  # the constant is not sent: no match either
        event("t.B", time="2026-11-20T10:00:01Z"),
        event("t.C", time="2026-11-21T08:00:00Z"),
        event("t.C"),
    ])
    got = by_line(rows)
    assert got[1] == got[2] == "messages/g__a" and got[5] == "messages/g__b" and got[6] == got[7] == "messages/g__c"
    assert got[3][0] == got[4][0] == "no_match"
    assert {r["time"] for r in rows["messages/g__a"]} == {dt.datetime(2026, 11, 20, 10, tzinfo=UTC)}
    assert result.deadletter == {"no_match": 2}


def test_a_derived_message_keeps_the_record_its_schema_refuses_xregistry_basemessage(tmp_path):
    """rc2 "basemessage": the derived message shadows every aspect of its base. A record whose
    metadata both match is the derived message's, decided before its payload is looked at: when
    the derived schema refuses the payload and the base's would accept it, the record is the
    derived message's `schema_violation` (both candidates listed, replayed once the catalog is
    fixed), never filed under the base's table."""
    base = message("t.D", {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    derived = {"basemessage": "/messagegroups/g/messages/Base", "protocol": "KAFKA",
               "protocoloptions": {"topic": {"value": "orders"}},
               "dataschemaformat": "JsonSchema/draft-07",
               "dataschema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}
    headers = {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/s", "ce_type": "t.D", "content-type": "application/json"}
    result, rows = run_day(tmp_path, {"Base": base, "Derived": derived}, [
        kafka(headers, {"a": "x"}, "orders", 1),  # the base's schema would take it
        kafka(headers, {"a": 1}, "orders", 2),
        kafka(headers, {"a": "x"}, "other", 3),  # only the base's metadata match
    ])
    got = by_line(rows)
    reason, detail, candidates = got[1]
    assert reason == "schema_violation" and "data.a" in detail
    assert sorted(candidates) == ["/messagegroups/g/messages/Base", "/messagegroups/g/messages/Derived"]
    assert got[2] == "messages/g__derived" and got[3] == "messages/g__base"
    assert [r["source_line"] for r in rows["messages/g__base"]] == [3]
    assert result.deadletter == {"schema_violation": 1}
