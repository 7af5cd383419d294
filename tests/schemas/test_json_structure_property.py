"""Property: any JSON Structure schema of objects, arrays, maps and every primitive type (nullable
or not, with alternate names), and any instance of it as a producer sends it (wide integers
and decimals as strings), round-trips through classification into the table without loss. Plain Python: the executor's own code classifies and writes the Parquet file."""

import copy
import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings, strategies as st
from json_structure import InstanceValidator

from catalake.platform.catalog import load_catalog
from catalake.platform.landing.planning import Piece
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.arrowschemas import arrow_schema
from catalake.platform.warehouse.message_tables import message_tables
from support.onepass import DAY, event, structure_message
from support.runs import plan_for
from support.structure_instances import NAME, instances

PRIMITIVES = ["string", "boolean", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "int128", "uint128", "float", "double", "decimal", "date", "datetime", "time", "duration", "uuid",
              "uri", "jsonpointer", "binary"]


def primitive():
    base = st.sampled_from(PRIMITIVES).map(lambda t: {"type": t})
    return base | base.map(lambda s: {"type": [s["type"], "null"]})


def with_altname(prop: dict, name: str, renamed: bool) -> dict:
    return {**prop, "altnames": {"json": f"w-{name}"}} if renamed else prop


def objects(children):
    props = st.dictionaries(NAME, st.tuples(children, st.booleans(), st.booleans()), min_size=1, max_size=5)
    return props.map(lambda ps: {
        "type": "object",
        "properties": {n: with_altname(s, n, renamed) for n, (s, _, renamed) in ps.items()},
        "required": [n for n, (_, required, _) in ps.items() if required]})


SCHEMAS = objects(st.recursive(
    primitive(),
    lambda inner: objects(inner) | inner.map(lambda s: {"type": "array", "items": s})
    | inner.map(lambda s: {"type": "map", "values": s}),
    max_leaves=8))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), schema=SCHEMAS)
def test_any_schema_and_instance_round_trip_without_loss(tmp_path_factory, data, schema):
    wire, typed = data.draw(instances(schema), label="instance")
    if "altnames" not in json.dumps(schema):  # the SDK does not know alternate names
        # the instance is one the spec's own SDK accepts (it checks the generator, not catalake)
        assert InstanceValidator(copy.deepcopy(schema), extended=True).validate(wire) == []
    base = tmp_path_factory.mktemp("prop")
    (base / "c.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {"T": structure_message(schema)}}}}))
    (table,), _ = message_tables(load_catalog([base]), [base])
    plan = plan_for([table], base / "warehouse", DAY, run="prop")
    landed = base / "day.jsonl"
    landed.write_text(json.dumps(event(wire)) + "\n")
    result = Classifier(plan).run("0", [Piece(str(landed))])
    assert result.deadletter == {} and list(result.files) == [table.name], result.deadletter
    ((rel, *_),) = result.files[table.name]
    (row,) = pq.read_table(base / "warehouse" / table.name / rel).to_pylist()
    data_type = arrow_schema(table.schema).field("data").type
    assert row["data"] == pa.array([typed], type=data_type).to_pylist()[0]
