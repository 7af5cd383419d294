"""Every JSON Structure definition of the public catalogs: an instance generated from its schema
(the wire form real producers send) classifies into its table with every value preserved. Plain Python: the executor's own code matches, types, checks and
writes the Parquet file, which is read back here."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import compile_definition
from catalake.platform.landing.planning import Piece
from catalake.platform.runs.classifier import Classifier
from catalake.platform.schemas.references import SchemaReferenceError, resolve_data_schema
from catalake.platform.warehouse.arrowschemas import arrow_schema
from catalake.platform.warehouse.message_tables import message_tables
from support.onepass import DAY, record_for
from support.public_catalogs import VALID
from support.runs import plan_for
from support.structure_instances import instances

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def structure_definitions() -> list[tuple[str, str]]:
    """(catalog path, message xid) of every JSON Structure definition of the valid public catalogs."""
    out = []
    for path, _, _ in VALID if SHARED.is_dir() else []:
        catalog = load_catalog([SHARED / path])
        for message in catalog:
            try:
                schema = resolve_data_schema(message, catalog.schemagroups, [SHARED / path.split("/")[0]])
            except SchemaReferenceError:
                continue
            if schema is not None and schema.family == "jsonstructure":
                out.append((path, message.xid))
    return out


DEFINITIONS = structure_definitions()


def test_the_sweep_covers_every_json_structure_definition(shared_data):
    assert len(DEFINITIONS) == 259


class CompiledCatalogs:
    """One classifier per public catalog, compiled once for the whole sweep (and each definition's
    instance strategy, built once)."""

    def __init__(self, base: Path):
        self.base = base
        self.compiled: dict = {}
        self.instances: dict = {}
        self.count = 0

    def get(self, path: str):
        if path not in self.compiled:
            catalog = load_catalog([SHARED / path])
            roots = [SHARED / path.split("/")[0]]
            tables, _ = message_tables(catalog, roots)
            warehouse = self.base / str(len(self.compiled))
            plan = plan_for(tables, warehouse, DAY, run="sweep")
            self.compiled[path] = (catalog, roots, {t.message.xid: t for t in tables}, Classifier(plan), warehouse)
        return self.compiled[path]


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory):
    return CompiledCatalogs(tmp_path_factory.mktemp("sweep"))


def stored_form(value, arrow_type):
    """What a value reads back as from a Parquet column of that type (maps as pairs, 32-bit
    floats rounded): the expected value passed through Arrow itself."""
    return pa.array([value], type=arrow_type).to_pylist()[0]


# no shrinking: a failure names its definition and values, and these schemas are wide
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
@given(data=st.data())
@pytest.mark.parametrize("path, xid", DEFINITIONS, ids=[xid.rsplit("/", 1)[1] for _, xid in DEFINITIONS])
def test_a_generated_instance_lands_in_its_table_with_every_value(catalogs, path, xid, data):
    catalog, roots, tables, classifier, warehouse = catalogs.get(path)
    message = next(m for m in catalog if m.xid == xid)
    schema = resolve_data_schema(message, catalog.schemagroups, roots)
    if xid not in catalogs.instances:  # built once, drawn from for each example
        catalogs.instances[xid] = instances(schema.content, schema.document, schema.type_name)
    wire, typed = data.draw(catalogs.instances[xid], label="instance")
    catalogs.count += 1
    landed = warehouse / f"{catalogs.count}.jsonl"
    landed.parent.mkdir(parents=True, exist_ok=True)
    landed.write_text(json.dumps(record_for(message, wire, 1)) + "\n")
    result = classifier.run(str(catalogs.count), [Piece(str(landed))])
    table = tables[xid]
    if result.deadletter == {"ambiguous": 1}:
        ((rel, *_),) = result.files["deadletter"]
        (dead,) = pq.read_table(warehouse / "deadletter" / rel).to_pylist()
        assert same_filters(catalog, xid, dead["candidates"]), dead["detail"]
        return
    assert result.deadletter == {}, [pq.read_table(warehouse / "deadletter" / rel).to_pylist()[0]["detail"]
                                     for rel, *_ in result.files.get("deadletter", [])]
    assert list(result.files) == [table.name]
    ((rel, *_),) = result.files[table.name]
    (row,) = pq.read_table(warehouse / table.name / rel).to_pylist()
    assert row["data"] == stored_form(typed, arrow_schema(table.schema).field("data").type)


def same_filters(catalog, xid: str, candidates: list[str]) -> bool:
    """Whether the catalog itself cannot tell `xid` from the other candidates (its bases aside):
    they declare the very same checks (tfl-road-traffic's six AMQP disruption definitions do),
    so `ambiguous` is the right answer for their records."""
    messages = {m.xid: m for m in catalog}
    mine = compile_definition(0, messages[xid])
    others = [c for c in candidates if c != xid and c not in mine.base_chain]
    return xid in candidates and bool(others) and all(
        (compile_definition(0, messages[c]).checks, messages[c].protocol) == (mine.checks, messages[xid].protocol) for c in others)
