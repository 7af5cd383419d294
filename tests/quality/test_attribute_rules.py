"""CloudEvents attribute rules applied alike by the matcher, the classifier's compiled checks and
Great Expectations: a record the matcher takes is
never dead-lettered by its own table's suite, and what the matcher refuses the suite refuses too.

Each case goes through the real classifier (its matcher, its row and its compiled checks) and
through GX itself: on pandas here, on Spark (the engine `catalake validate` runs) in the last test."""

import datetime as dt
import json

import pytest

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import Match
from catalake.platform.jsonvalues import as_text
from catalake.platform.quality.expectations import IN_SET, MATCH_REGEX, OF_TYPE, import_gx, suite_expectations
from catalake.platform.quality.suites import build_suite
from catalake.platform.records.attributes import column_value
from catalake.platform.records.record import normalize
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.message_tables import message_tables
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)
TYPED = {
    "seq": {"type": "integer", "value": "5"},
    "flag": {"type": "boolean", "value": "true"},
    "n": {"type": "integer"},
    "b": {"type": "boolean"},
    "link": {"type": "uri"},
    "ref": {"type": "urireference"},
    "blob": {"type": "binary"},
    "at": {"type": "timestamp"},
    "name": {"type": "string", "value": "a"},
    "datacontenttype": {"value": "text/plain; charset=utf-8"},
}
# an event every attribute of which is accepted
BASE = {"seq": 5, "flag": True, "n": "7", "b": "false", "link": "https://x.example/a", "ref": "/a", "blob": "QUJD",
        "at": "2026-11-20T10:00:00Z", "name": "a", "datacontenttype": "text/plain; charset=utf-8"}
# attribute -> (values the matcher takes, values it refuses); a refused value is either not of the
# attribute's type (its typed column cannot hold it: the parse is the matcher's) or a value the
# suite refuses
CASES = {
    "seq": (["5", 5, "+5", "05"], ["6", 6, "5.0", "x", "2147483648"]),
    "flag": (["true", True], ["false", False, "True", "1"]),
    "n": (["0", "-2147483648", "2147483647", 12], ["1.5", "2147483648", " 5", "x", ""]),
    "b": (["true", "false", False], ["TRUE", "yes", "0"]),
    "link": (["https://x.example/a?b=c#d", "urn:isbn:0451450523", "mailto:a@b.example"],
             ["https://x.example/a\tb", "https://x.example/a b", "/relative", "https://x.example/<a>", "1http://x",
              "https://x.example/a\r"]),
    "ref": (["/a?b#c", "https://x.example/a", ""], ["/a\tb", "a b", "<a>", "a\nb"]),
    "blob": (["QUJD", "", "AAEC"], ["A", "AAA", "QUJD!", "QU JD"]),
    "at": (["2026-11-20T10:00:00Z", "2026-11-20T10:00:00.5+01:00"], ["2026-11-20T10:00:00", "yesterday"]),
    "name": (["a"], ["A", "a ", "b"]),
    "datacontenttype": (["text/plain; charset=utf-8", "TEXT/Plain; CharSet=utf-8", 'text/plain;charset="UTF-8"',
                         "text/plain; format=flowed; charset=utf-8"],
                        ["text/plain", "text/plain; charset=latin-1", "application/json", "text/plainx; charset=utf-8",
                         "text/plain; charset=utf-8\r"]),
}


def load(tmp_path, messages: dict):
    folder = tmp_path / "catalog"
    folder.mkdir(exist_ok=True)
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": messages}}}))
    catalog = load_catalog([folder])
    tables, errors = message_tables(catalog, [folder])
    assert not errors
    return tables


def classifier(tables, tmp_path) -> Classifier:
    return Classifier(plan_for(tables, tmp_path / "warehouse", DAY, run="test", ingested_at=dt.datetime(2026, 11, 21)))


def event(**attributes) -> dict:
    return {"specversion": "1.0", "id": "1", "source": "/s", "type": "t.T", "data": "hello", **attributes}


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    """The classifier of one definition declaring an attribute of every type."""
    tmp_path = tmp_path_factory.mktemp("typed")
    (table,) = load(tmp_path, {"T": {"envelope": "CloudEvents/1.0",
                                     "envelopemetadata": {"type": {"value": "t.T"}, **TYPED}}})
    return table, classifier([table], tmp_path)


def through_the_classifier(c: Classifier, name: str, value):
    """(the matcher's status, the column's value, the ids of the ERROR expectations failed) of the
    base event with `name` set to `value`; a record the matcher refuses is typed as if it had
    matched, to ask the compiled checks too."""
    rec = normalize(event(**{**BASE, name: value}))
    match = c.matcher.match(rec)
    forced = match if match.status == "matched" else Match("matched", c.matcher.definitions[0])
    checked = c.typed(rec, forced, "f.jsonl", 1)
    return match.status, checked.row[name], [e.id for e, _ in checked.failed], checked


@pytest.fixture(scope="module")
def gx_pandas():
    """GX's own engine on a pandas frame of one column: the values an expectation finds unexpected."""
    gx = import_gx()
    import pandas as pd
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batches = context.data_sources.add_pandas("p").add_dataframe_asset("a").add_batch_definition_whole_dataframe("b")

    def unexpected(expectation, values: list) -> list:
        frame = pd.DataFrame({expectation.column: pd.Series(values, dtype=object)})
        result = batches.get_batch(batch_parameters={"dataframe": frame}).validate(expectation.to_gx(), result_format="COMPLETE")
        return result.result["unexpected_list"]

    return unexpected


def test_every_attribute_type_and_value_rule_agrees_in_matcher_compiled_checks_and_gx(typed, gx_pandas):
    table, c = typed
    suite = {e.key: [] for e in suite_expectations(table)}
    for e in suite_expectations(table):
        suite[e.key].append(e)
    assert c.matcher.match(normalize(event(**BASE))).status == "matched"
    for name, (accepted, refused) in CASES.items():
        kind = TYPED[name].get("type", "string")
        columns = []
        for value in accepted:
            status, column, failed, checked = through_the_classifier(c, name, value)
            assert status == "matched" and checked.kept, (name, value, failed)
            assert column is not None, (name, value)
            columns.append(column)
        refused_by_the_suite = []
        for value in refused:
            status, column, failed, _ = through_the_classifier(c, name, value)
            assert status == "no_match", (name, value)
            if column_value(kind, as_text(value)) is None:
                assert column is None, (name, value)  # not of the type: the column cannot hold it
            else:
                assert [f for f in failed if f.startswith(f"{name}:")], (name, value, column)
                refused_by_the_suite.append(column)
        # GX: the column's value expectations find exactly the values refused by the suite unexpected
        checks = [e for e in suite.get(name, []) if e.type in (IN_SET, MATCH_REGEX)]
        assert checks or not refused_by_the_suite, name
        found = [v for e in checks for v in gx_pandas(e, columns + refused_by_the_suite)]
        assert sorted(map(repr, found)) == sorted(map(repr, refused_by_the_suite)), (name, found)


def test_typed_attribute_values_are_expected_as_their_column_holds_them(typed):
    table, _ = typed
    by_id = {e.id: e for e in suite_expectations(table)}
    assert by_id["seq:value"].type == IN_SET and by_id["seq:value"].kwargs == {"value_set": [5]}
    assert by_id["flag:value"].kwargs == {"value_set": [True]}
    assert by_id["name:value"].kwargs == {"value_set": ["a"]}
    assert by_id["link:type"].type == by_id["ref:type"].type == MATCH_REGEX
    assert by_id["n:type"].type == by_id["b:type"].type == by_id["blob:type"].type == by_id["at:type"].type == OF_TYPE


def test_a_content_type_matched_as_a_media_type_passes_its_suite(tmp_path):
    tables = load(tmp_path, {
        "Text": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
            "type": {"value": "t.T"}, "datacontenttype": {"value": "text/plain; charset=utf-8"}}},
        "Json": {"envelope": "CloudEvents/1.0", "envelopemetadata": {
            "type": {"value": "t.J"}, "datacontenttype": {"value": "application/json"}}}})
    c = classifier(tables, tmp_path)
    for type_, ctype in (("t.T", "TEXT/Plain; CharSet=utf-8"), ("t.J", "application/json; charset=utf-8"),
                         ("t.J", "Application/JSON"), ("t.J", "application/json; charset=UTF-8")):
        rec = normalize(event(type=type_, datacontenttype=ctype))
        match = c.matcher.match(rec)
        assert match.status == "matched", ctype
        checked = c.typed(rec, match, "f.jsonl", 1)
        assert checked.kept, (ctype, [e.id for e, _ in checked.failed])
        assert checked.row["datacontenttype"] == ctype  # stored as sent


def test_the_definitions_own_datacontenttype_filters(tmp_path):
    tables = load(tmp_path, {
        "Json": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.J"}},
                 "datacontenttype": "application/json"},
        # inferred from the schema format (avro/binary): a guess, no filter
        "Avro": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.A"}},
                 "dataschemaformat": "Avro/1.11.1", "dataschema": {"type": "record", "name": "A", "fields": []}},
        "Plain": {"protocol": "KAFKA", "protocoloptions": {"topic": {"value": "plain"}}, "datacontenttype": "text/csv"}})
    c = classifier(tables, tmp_path)
    catalog = c.matcher

    def status(record) -> str:
        return catalog.match(normalize(record)).status

    assert status(event(type="t.J", datacontenttype="text/plain")) == "no_match"
    assert status(event(type="t.J", datacontenttype="application/json; charset=utf-8")) == "matched"
    # without a content type: JSON (CloudEvents JSON format), but for a base64 payload
    assert status(event(type="t.J")) == "matched"
    assert status({k: v for k, v in event(type="t.J", data_base64="AAEC").items() if k != "data"}) == "no_match"
    binary = {"topic": "t", "partition": 0, "offset": 1, "payload": {"a": 1},
              "headers": {"ce_specversion": "1.0", "ce_id": "1", "ce_source": "/s", "ce_type": "t.J"}}
    assert status(binary) == "matched"
    assert status({**binary, "headers": {**binary["headers"], "content-type": "text/plain"}}) == "no_match"
    assert status(event(type="t.A", datacontenttype="application/json")) == "matched"
    # a definition without an envelope: the record's own content type
    plain = {"topic": "plain", "partition": 0, "offset": 2, "payload": "a,b"}
    assert status({**plain, "headers": {"content-type": "text/csv; charset=utf-8"}}) == "matched"
    assert status({**plain, "headers": {"content-type": "application/json"}}) == "no_match"
    # the suite expects of the stored column what the matcher asked of the record
    json_table = tables[[t.message.message_id for t in tables].index("Json")]
    (expected,) = [e for e in suite_expectations(json_table) if e.key == "datacontenttype"]
    assert (expected.id, expected.type, expected.source) == ("datacontenttype:value", MATCH_REGEX, "datacontenttype")
    rec = normalize(event(type="t.J", datacontenttype="Application/JSON; charset=utf-8"))
    assert c.typed(rec, catalog.match(rec), "f.jsonl", 1).kept


def test_gx_on_spark_refuses_what_the_matcher_refuses(typed, spark, tmp_path):
    """GX's own engine on Spark (Java regexes), on the typed rows of every accepted and refused value."""
    from catalake.platform.quality.validator import Validator

    table, c = typed
    rows, refused = [], {}
    for name, (accepted, refusals) in CASES.items():
        for value in accepted + refusals:
            status, column, failed, checked = through_the_classifier(c, name, value)
            rows.append([*checked.values, DAY])
            if status != "matched" and column is not None:
                refused[name] = refused.get(name, 0) + 1
    frame = spark.createDataFrame(rows, table.schema)
    outcome = Validator(tmp_path / "gx").validate(frame, build_suite(table))
    failed = {o.id: o.unexpected_count for o in outcome.outcomes if not o.success}
    expected = {f"{name}:{'type' if name in ('link', 'ref') else 'value'}": n for name, n in refused.items()}
    assert set(expected) == {"seq:value", "flag:value", "link:type", "ref:type", "name:value", "datacontenttype:value"}
    assert failed == expected
