"""What real producers send, against catalogs shaped like production ones: one test
per case, on small inputs written here. Plain Python: the executor's own code classifies the
day and writes its Parquet files, read back here."""

import datetime as dt
import decimal

import pytest

from catalake.platform.catalog import load_catalog
from catalake.platform.quality.expectations import suite_expectations
from catalake.platform.warehouse.message_tables import message_tables
from support.onepass import event, run_day, structure_message

UTC = dt.timezone.utc


def only_rows(rows: dict) -> list:
    (name, table_rows), = ((n, r) for n, r in rows.items() if n != "deadletter")
    return table_rows


def test_a_null_small_integer_lands_as_null(tmp_path):
    schema = {"type": "object", "properties": {"a": {"type": ["int8", "null"]}, "b": {"type": ["null", "int16"]},
                                               "c": {"type": "uint8"}}}
    result, rows = run_day(tmp_path, {"T": structure_message(schema)}, [
        event({"a": None, "b": None, "c": None}), event({"a": -128, "b": 32767, "c": 255}, n=2), event({"c": 256}, n=3)])
    assert [r["data"] for r in only_rows(rows)] == [{"a": None, "b": None, "c": None}, {"a": -128, "b": 32767, "c": 255}]
    # uint8 is stored as a short: 256 fits the column but not the type
    assert result.deadletter == {"schema_violation": 1}
    assert "data.c: 256 is not an integer in [0, 255]" in rows["deadletter"][0]["detail"]


def test_wide_integers_and_decimals_sent_as_strings_are_typed(tmp_path):
    schema = {"type": "object", "properties": {
        "i64": {"type": "int64"}, "u64": {"type": "uint64"}, "i128": {"type": "int128"},
        "d": {"type": "decimal", "precision": 10, "scale": 2}, "dd": {"type": "decimal"}}}
    sent = {"i64": "-9223372036854775808", "u64": "18446744073709551615", "i128": "-170141183460469231731687303715884105",
            "d": "12.34", "dd": "1.5"}
    result, rows = run_day(tmp_path, {"T": structure_message(schema)}, [
        event(sent), event({"i64": 42, "u64": 7}, n=2),  # a JSON number is taken too
        event({"i64": "1.5"}, n=3), event({"u64": "-1"}, n=4), event({"i64": "9223372036854775808"}, n=5)])
    data = [r["data"] for r in only_rows(rows)]
    assert data[0] == {"i64": -2**63, "u64": decimal.Decimal(2**64 - 1), "i128": decimal.Decimal(sent["i128"]),
                       "d": decimal.Decimal("12.34"), "dd": decimal.Decimal("1.5000000")}
    assert data[1]["i64"] == 42 and data[1]["u64"] == 7
    assert result.deadletter == {"schema_violation": 3}
    details = sorted(r["detail"] for r in rows["deadletter"])
    assert details == ["data.i64: 1.5 is not of type 'integer'", "data.i64: 9223372036854775808 does not fit the column's 64-bit integer (-9223372036854775808 to 9223372036854775807)",
                       "data.u64: -1 is not an integer in [0, 18446744073709551615]"]


CONSTRAINED = {"type": "object", "required": ["e"], "properties": {
    "e": {"type": "string", "enum": ["x", "y"]}, "k": {"type": "string", "const": "K"},
    "p": {"type": "string", "pattern": "^[a-z]+$"}, "n": {"type": "int32", "minimum": 0, "maximum": 10},
    "x": {"type": "double", "exclusiveMinimum": 0}, "big": {"type": "int64", "maximum": "100"},
    "s": {"type": ["string", "null"], "minLength": 2, "maxLength": 3},
    "l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": True}}}


@pytest.mark.parametrize("value, rule", [
    ({"e": "z"}, "data.e:enum"), ({"e": "x", "k": "L"}, "data.k:enum"), ({"e": "x", "p": "A1"}, "data.p:pattern"),
    ({"e": "x", "n": 11}, "data.n:range"), ({"e": "x", "n": -1}, "data.n:range"), ({"e": "x", "x": 0}, "data.x:range"),
    ({"e": "x", "big": "101"}, "data.big:range"), ({"e": "x", "s": "long"}, "data.s:length"), ({"e": "x", "s": "a"}, "data.s:length"),
    ({"e": "x", "l": []}, "data.l:items"), ({"e": "x", "l": ["a", "b", "c"]}, "data.l:items"),
    ({"e": "x", "l": ["a", "a"]}, "data.l:unique"), ({}, "data.e:required"),
])
def test_json_structure_constraints_are_enforced(tmp_path, value, rule):
    ok = {"e": "y", "k": "K", "p": "abc", "n": 10, "x": 0.5, "big": "100", "s": "ab", "l": ["a", "b"]}
    result, rows = run_day(tmp_path, {"T": structure_message(CONSTRAINED)}, [event(ok), event(value, n=2)])
    assert len(only_rows(rows)) == 1 and result.deadletter == {"schema_violation": 1}
    assert rows["deadletter"][0]["expectations"] == [rule]


def test_the_suite_carries_the_json_structure_constraints(tmp_path):
    (tmp_path / "c.xreg.json").write_text(__import__("json").dumps(
        {"messagegroups": {"g": {"messages": {"T": structure_message(CONSTRAINED)}}}}))
    (table,), _ = message_tables(load_catalog([tmp_path]), [tmp_path])
    kinds = {(e.column, e.type) for e in suite_expectations(table)}
    assert {("data.e", "expect_column_values_to_not_be_null"), ("data.e", "expect_column_values_to_be_in_set"),
            ("data.k", "expect_column_values_to_be_in_set"), ("data.p", "expect_column_values_to_match_regex"),
            ("data.n", "expect_column_values_to_be_between"), ("data.x", "expect_column_values_to_be_between"),
            ("data.big", "expect_column_values_to_be_between"), ("data.s", "expect_column_value_lengths_to_be_between"),
            ("size(data.l)", "expect_column_values_to_be_between")} <= kinds


def test_altnames_name_the_wire_key_and_the_column_keeps_the_schema_name(tmp_path):
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "dr_type": {"type": "string", "altnames": {"json": "dr-type", "lang:de": "Art"}},
        "plain": {"type": "int32"}}}
    result, rows = run_day(tmp_path, {"T": structure_message(schema)}, [
        event({"dr-type": "x", "plain": 1}), event({"dr_type": "y"}, n=2)])
    assert [r["data"] for r in only_rows(rows)] == [{"dr_type": "x", "plain": 1}]
    # the schema name is not the wire name: with additionalProperties false it is an extra key
    assert result.deadletter == {"schema_violation": 1} and rows["deadletter"][0]["expectations"] == ["data:closed"]


MQTT_PROPS = [{"name": "specversion", "value": "1.0"}, {"name": "id", "value": "1"},
              {"name": "source", "value": "/s"}, {"name": "type", "value": "t.T"}]


def test_mqtt_delivery_settings_do_not_decide_a_match(tmp_path):
    base = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}}}
    variant = {**base, "basemessage": "/messagegroups/g/messages/T", "protocol": "MQTT/5.0", "protocoloptions": {
        "topic_name": {"value": "a/b"}, "message_expiry_interval": {"value": 3600}, "qos": {"value": 1},
        "retain": {"value": True}}}
    record = {"protocol": "MQTT/5.0", "topic_name": "a/b", "user_properties": MQTT_PROPS,
              "content_type": "application/json", "payload": {"x": 1}}
    result, rows = run_day(tmp_path, {"T": base, "TM": variant}, [
        record,  # no expiry, qos nor retain recorded
        {**record, "qos": 0, "retain": False, "message_expiry_interval": 3540},  # downgraded and counted down in transit
        {**record, "topic_name": "c/d"}])  # the topic does decide
    assert result.deadletter == {}
    assert len(rows["messages/g__tm"]) == 2 and len(rows["messages/g__t"]) == 1


def test_a_time_template_fills_its_placeholders_and_checks_the_text(tmp_path):
    definition = {"envelope": "CloudEvents/1.0", "envelopemetadata": {
        "type": {"value": "t.T"}, "time": {"type": "timestamp", "value": "{view_date}T00:00:00Z"}}}
    sent = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t.T", "data": {}}
    result, rows = run_day(tmp_path, {"T": definition}, [
        {**sent, "time": "2026-11-20T00:00:00Z"}, {**sent, "id": "2", "time": "2026-11-20T10:30:00Z"}])
    (row,) = only_rows(rows)
    assert row["view_date"] == "2026-11-20" and row["time"] == dt.datetime(2026, 11, 20, tzinfo=UTC)
    assert result.deadletter == {"no_match": 1}  # the template decides, on the text as sent
    (tmp_path / "c2").mkdir()
    (tmp_path / "c2" / "c.xreg.json").write_text((tmp_path / "catalog" / "c.xreg.json").read_text())
    (table,), _ = message_tables(load_catalog([tmp_path / "c2"]), [tmp_path / "c2"])
    assert not [e for e in suite_expectations(table) if e.column == "time" and "regex" in e.kwargs]


def test_a_kafka_payload_cut_off_mid_json_is_a_malformed_payload(tmp_path):
    definition = {"protocol": "KAFKA", "protocoloptions": {"topic": {"value": "k"}},
                  "dataschemaformat": "JsonStructure/1.0", "dataschema": {"type": "object", "properties": {"a": {"type": "string"}}}}
    record = {"topic": "k", "partition": 0, "offset": 1, "headers": {"content-type": "application/json"}}
    result, rows = run_day(tmp_path, {"T": definition}, [
        {**record, "payload": '{"a": "x", "b'}, {**record, "offset": 2, "payload": '{"a": "x"}'},
        {**record, "offset": 3, "headers": {"content-type": "text/plain"}, "payload": "{not json, and not said to be"}])
    assert result.deadletter == {"malformed_payload": 1, "schema_violation": 1}
    cut = next(r for r in rows["deadletter"] if r["reason"] == "malformed_payload")
    assert cut["source_line"] == 1 and cut["detail"].startswith("the payload is not JSON: unexpected end of data")
    assert [r["data"] for r in only_rows(rows)] == [{"a": "x"}]


def test_the_cases_through_a_spark_partition_run_into_delta_tables(spark, tmp_path):
    """The same records through the real partition run: Spark tasks, Delta commits, the tables
    read back with delta-rs (case 1 failed the whole day there: a null cast to TINYINT)."""
    import json

    from deltalake import DeltaTable

    from catalake.platform.config import catalog_roots
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.warehouse.message_tables import sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore
    from support.onepass import DAY

    schema = {"type": "object", "properties": {
        "a": {"type": ["int8", "null"]}, "b": {"type": ["int16", "null"]}, "big": {"type": "int64"},
        "dr_type": {"type": ["string", "null"], "altnames": {"json": "dr-type"}}, "e": {"type": ["string", "null"], "enum": ["x"]}}}
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "c.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {"T": structure_message(schema)}}}}))
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    records = [event({"a": None, "b": None, "big": "9007199254740993", "dr-type": "v"}),
               event({"a": 1, "b": 2, "big": "1"}, n=2), event({"big": "2", "e": "not x"}, n=3)]
    (day / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load_catalog([catalog])
    tables, _ = message_tables(loaded, catalog_roots([catalog]))
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    classify_partition(spark, store, tables, tmp_path / "landing", DAY)
    rows = sorted(DeltaTable(str(tmp_path / "warehouse" / tables[0].name)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert [r["data"] for r in rows] == [{"a": None, "b": None, "big": 9007199254740993, "dr_type": "v", "e": None},
                                         {"a": 1, "b": 2, "big": 1, "dr_type": None, "e": None}]
    dead = DeltaTable(str(tmp_path / "warehouse" / "deadletter")).to_pyarrow_table().to_pylist()
    assert [(d["event_id"], d["reason"], d["expectations"]) for d in dead] == [("3", "schema_violation", ["data.e:enum"])]


def test_json_structure_string_types_have_their_syntax_and_abstract_types_are_no_payload(tmp_path):
    from catalake.platform.schemas.json_schema import SchemaError
    from catalake.platform.schemas.json_structure import json_structure_to_spark

    schema = {"type": "object", "properties": {k: {"type": k} for k in ("uuid", "uri", "jsonpointer", "time", "duration", "date", "binary")}}
    good = {"uuid": "0b7e6c1e-5d1f-4f0e-9d2a-3c4b5a697887", "uri": "../a/b?c", "jsonpointer": "/a/~1b", "time": "10:30:00Z",
            "duration": "P1DT2H", "date": "2026-11-20", "binary": "AAE="}
    bad = {"uuid": "not-a-uuid", "uri": "a b", "jsonpointer": "a/b", "time": "25:00:00", "duration": "1 day",
           "date": "20.11.2026", "binary": "%%"}
    result, rows = run_day(tmp_path, {"T": structure_message(schema)}, [event(good)] + [event({k: v}, n=i) for i, (k, v) in enumerate(bad.items(), 2)])
    (row,) = only_rows(rows)
    assert row["data"] == {**good, "date": dt.date(2026, 11, 20), "binary": b"\x00\x01"}
    assert result.deadletter == {"schema_violation": len(bad)}
    assert sorted(r["expectations"][0] for r in rows["deadletter"]) == sorted(f"data.{k}:type" for k in bad)
    with pytest.raises(SchemaError, match="abstract"):
        json_structure_to_spark({"type": "object", "abstract": True, "properties": {"a": {"type": "string"}}})


def test_amqp_transport_headers_do_not_decide_a_match(tmp_path):
    definition = {"protocol": "AMQP/1.0", "protocoloptions": {
        "properties": {"to": {"value": "orders"}}, "header": {"priority": {"value": 4}, "durable": {"value": True}}}}
    record = {"protocol": "AMQP/1.0", "properties": {"to": "orders"}, "body": {"n": 1}}
    result, rows = run_day(tmp_path, {"T": definition}, [
        record, {**record, "header": {"priority": 9, "durable": False, "delivery-count": 3}},
        {**record, "properties": {"to": "refunds"}}])
    assert len(only_rows(rows)) == 2 and result.deadletter == {"no_match": 1}
