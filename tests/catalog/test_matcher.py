"""The matcher's candidates told apart by their data schemas: one accepts (matched), several
accept (ambiguous), none accepts (a schema violation naming each candidate's first violation,
never `ambiguous`). Plain Python, through the real catalog reader and classifier."""

import datetime as dt
import json

import pyarrow.parquet as pq

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import MatchStatus
from catalake.platform.landing.planning import Piece
from catalake.platform.records.record import normalize
from catalake.platform.runs.classifier import Classifier
from catalake.platform.runs.plan import new_plan
from catalake.platform.uris import Location
from catalake.platform.warehouse.message_tables import message_tables

DAY = dt.date(2026, 11, 20)


def twin(required: str) -> dict:
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "acme.Twin"}},
            "dataschemaformat": "JsonSchema/draft-07",
            "dataschema": {"type": "object", "required": [required], "properties": {required: {"type": "integer"}}}}


def classifier(tmp_path) -> Classifier:
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": {"acme": {"messages": {
        "acme.TwinA": twin("a"), "acme.TwinB": twin("b")}}}}))
    tables, errors = message_tables(load_catalog([folder]), [folder])
    assert not errors
    return Classifier(new_plan(tables, Location.of(tmp_path / "warehouse"), DAY, ingested_at=None, write=None, strict=False,
                               landing=None))


def event(n: int, data: dict) -> dict:
    return {"specversion": "1.0", "id": f"e{n}", "source": "/s", "type": "acme.Twin", "data": data}


def test_candidates_are_told_apart_by_their_data_schemas(tmp_path):
    c = classifier(tmp_path)
    resolved = {}
    for name, data in {"one": {"a": 1}, "both": {"a": 1, "b": 2}, "none": {"c": 1}}.items():
        rec = normalize(event(0, data))
        m = c.matcher.match(rec)
        assert m.status == MatchStatus.AMBIGUOUS and len(m.candidates) == 2  # the envelope alone cannot tell
        resolved[name] = c.resolve(rec, m)
    assert resolved["one"].status == MatchStatus.MATCHED and resolved["one"].winner.xid.endswith("acme.TwinA")
    assert resolved["both"].status == MatchStatus.AMBIGUOUS
    assert resolved["both"].detail.startswith("2 of 2 candidates accept the payload")
    assert resolved["none"].status == MatchStatus.REJECTED


def test_a_payload_no_candidate_accepts_is_a_schema_violation_naming_each_candidates_violations(tmp_path):
    c = classifier(tmp_path)
    landed = tmp_path / "day.jsonl"
    landed.write_text("\n".join(json.dumps(event(n, data)) for n, data in enumerate([{"c": 1}, {"a": 1, "b": 2}])) + "\n")
    result = c.run("0", [Piece(str(landed))])
    assert result.deadletter == {"schema_violation": 1, "ambiguous": 1}
    ((rel, *_),) = result.files["deadletter"]
    rows = {r["event_id"]: r for r in pq.read_table(tmp_path / "warehouse" / "deadletter" / rel).to_pylist()}
    violation = rows["e0"]
    assert violation["reason"] == "schema_violation"
    assert violation["detail"].startswith("none of 2 candidates accepts the payload: ")
    assert "acme.TwinA: data: 'a' is a required property" in violation["detail"]
    assert "acme.TwinB: data: 'b' is a required property" in violation["detail"]
    assert len(violation["candidates"]) == 2
    # each candidate's broken expectations, as a single candidate's row names its own
    assert violation["expectations"] == [f"{xid}#data.{key}:required" for xid, key in zip(violation["candidates"], "ab")]
    assert rows["e1"]["reason"] == "ambiguous"


def test_a_candidate_without_a_data_schema_takes_what_the_others_refuse(tmp_path):
    """A definition without a data schema refuses no payload: beside one whose schema refuses the
    payload it is the match; beside one whose schema accepts it, two accept: ambiguous."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    untyped = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "acme.Twin"}}}
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": {"acme": {"messages": {
        "acme.TwinA": twin("a"), "acme.Untyped": untyped}}}}))
    tables, _ = message_tables(load_catalog([folder]), [folder])
    c = Classifier(new_plan(tables, Location.of(tmp_path / "warehouse"), DAY, ingested_at=None, write=None, strict=False,
                            landing=None))
    refused = normalize(event(0, {"c": 1}))
    m = c.resolve(refused, c.matcher.match(refused))
    assert m.status == MatchStatus.MATCHED and m.winner.xid.endswith("acme.Untyped")
    both = normalize(event(1, {"a": 1}))
    m = c.resolve(both, c.matcher.match(both))
    assert m.status == MatchStatus.AMBIGUOUS and m.detail.startswith("2 of 2 candidates accept the payload")
    assert "acme.Untyped: no schema to decide with, takes any payload" in m.detail
