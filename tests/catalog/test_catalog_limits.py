"""Catalogs that are valid, or nearly, but would hang or break a run."""

import datetime as dt
import json

import pytest

from catalake.platform.catalog import CatalogError, load_catalog
from catalake.platform.catalog.documents import read_file
from catalake.platform.landing.listing import partition_files
from catalake.platform.landing.planning import plan_tasks
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.message_tables import message_tables
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, 9):  # 9**9 strings once expanded
        laughs.append(f"{chr(97 + n)}: &{chr(97 + n)} [" + ", ".join([f"*{chr(96 + n)}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("messagegroups:\n  g:\n    messages:\n" + "".join(f"      {line}\n" for line in laughs))
    document, problems = read_file(path)
    assert document is None
    assert [(p.file, p.rule) for p in problems] == [(str(path), "yaml-syntax")]
    assert "aliases" in problems[0].message and problems[0].pointer == "line 5, column 14"  # the first `*a`


def test_a_schema_that_refers_to_itself_without_end_is_a_catalog_error_not_a_failing_run(tmp_path):
    """Issue 30 point 7: `{"$ref": "#"}` is refused when the catalog is read (it was a dead letter
    for one definition and a pass for another); a recursion that reads data still classifies."""
    recursive = {"type": "object", "properties": {"n": {"type": "integer"}, "child": {"$ref": "#"}}}
    endless = {"$ref": "#"}

    def message(schema):
        return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.A"}},
                "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema}

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "c.xreg.json").write_text(json.dumps(
        {"messagegroups": {"g": {"messages": {"A": message(recursive), "B": message(endless)}}}}))
    with pytest.raises(CatalogError) as refused:
        message_tables(load_catalog([catalog]), [catalog])
    assert [(p.pointer, p.rule) for p in refused.value.problems] == [
        ("/messagegroups/g/messages/B/dataschema", "schema-reference-endless")]
    (catalog / "c.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {"A": message(recursive)}}}}))
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    event = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t.A", "datacontenttype": "application/json"}
    lines = [{**event, "data": {"n": 1, "child": {"n": 2, "child": {"n": "3"}}}}, {**event, "data": {"n": "x"}},
             {**event, "data": {"n": 1, "child": {"n": 2}}}]
    (day / "a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    tables, _ = message_tables(load_catalog([catalog]), [catalog])
    plan = plan_for(tables, tmp_path / "warehouse", DAY)
    pieces = [p for task in plan_tasks(None, partition_files(tmp_path / "landing", DAY), 1) for p in task]
    result = Classifier(plan).run("0", pieces)
    # the recursion (kept as JSON text) is checked by jsonschema at every depth
    assert result.records == 3 and result.deadletter == {"schema_violation": 2}
    assert {name: len(files) for name, files in result.files.items()} == {"messages/g__a": 1, "deadletter": 1}
