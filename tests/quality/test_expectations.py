"""Expectation suites: one GX suite per definition from the catalog, each rule's exact
expectation, stable files, and real GX validation on Spark (seeded violations, clean partitions,
real events)."""

import json

import pytest
from pyspark.sql import functions as F

from catalake.platform.catalog import load_catalog
from catalake.platform.catalog.matcher import template_regex
from catalake.platform.config import catalog_roots
from catalake.platform.quality.expectations import (ERROR, WARN, rule_attribute_types, rule_attribute_values,
                                                    rule_payload_enum, rule_payload_format, rule_payload_items,
                                                    rule_payload_length, rule_payload_pattern, rule_payload_range,
                                                    rule_payload_required, rule_required_attributes, rule_uritemplates,
                                                    suite_expectations)
from catalake.platform.quality.validator import Validator
from catalake.platform.quality.suites import (_as_gx_writes, _gx_expectation, build_suite, document_json,
                                              expectation_summary, load_suite, plain_suite_document, suite_document,
                                              suite_json, sync_suites)
from catalake.platform.runs.day import classify_partition
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from support.classify import DAY, ce, classify_day, jsonl, land, land_azure
from support.orders import CATALOG, _order
from support.public_catalogs import VALID


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    base = tmp_path_factory.mktemp("shop")
    (base / "catalog").mkdir()
    (base / "catalog" / "shop.xreg.json").write_text(json.dumps(CATALOG))
    catalog = load_catalog([base / "catalog"])
    tables, errors = message_tables(catalog, catalog_roots([base / "catalog"]))
    assert not errors
    return base, catalog, {t.message.message_id: t for t in tables}


def _summaries(expectations):
    return [(s["type"], s["kwargs"], s["meta"]["severity"]) for s in map(expectation_summary, expectations)]


# -- one test per generation rule: exact expectation type and kwargs

def test_rule_required_attributes(shop):
    got = _summaries(rule_required_attributes(shop[2]["shop.Order"]))
    assert got == [("expect_column_values_to_not_be_null", {"column": c}, ERROR)
                   for c in ("specversion", "id", "source", "type", "subject")]


def test_rule_attribute_values(shop):
    got = _summaries(rule_attribute_values(shop[2]["shop.Order"]))
    assert ("expect_column_values_to_be_in_set", {"column": "type", "value_set": ["shop.Order"]}, ERROR) in got
    assert ("expect_column_values_to_be_in_set", {"column": "specversion", "value_set": ["1.0"]}, ERROR) in got  # implied
    assert all(kw["column"] != "source" for _, kw, _ in got)  # a template is not a constant


def test_rule_uritemplates_loose_and_strict(shop):
    order = shop[2]["shop.Order"]
    assert _summaries(rule_uritemplates(order)) == [
        ("expect_column_values_to_match_regex", {"column": "source", "regex": r"^/shops/(.+?)$"}, ERROR)]
    assert _summaries(rule_uritemplates(order, strict=True))[0][1]["regex"] == template_regex("/shops/{shop}", strict=True)[0]


def test_rule_attribute_types(shop):
    got = {kw["column"]: (kind, kw) for kind, kw, _ in _summaries(rule_attribute_types(shop[2]["shop.Order"]))}
    assert got["priority"] == ("expect_column_values_to_be_of_type", {"column": "priority", "type_": "IntegerType"})
    assert got["time"] == ("expect_column_values_to_be_of_type", {"column": "time", "type_": "TimestampType"})
    assert got["callback"][0] == "expect_column_values_to_match_regex" and got["callback"][1]["regex"].startswith("^[A-Za-z]")


def test_rule_payload_required_addresses_nested_paths(shop):
    got = _summaries(rule_payload_required(shop[2]["shop.Order"]))
    columns = [kw["column"] for _, kw, _ in got]
    assert columns == ["data", "data.order_id", "data.amount", "data.status", "data.placed_at", "data.customer.email"]
    # `customer` is optional: its required `email` is only expected where a customer is present
    email = got[-1][1]
    assert email == {"column": "data.customer.email", "condition_parser": "spark",
                     "row_condition": {"type": "pass_through", "pass_through_filter": "`data`.`customer` IS NOT NULL"}}
    assert got[1][1] == {"column": "data.order_id"}  # the payload itself is required: no condition


def test_rule_payload_enum_const_and_avro_enum(shop):
    got = _summaries(rule_payload_enum(shop[2]["shop.Order"]))
    assert got == [
        ("expect_column_values_to_be_in_set", {"column": "data.status", "value_set": ["new", "paid"]}, ERROR),
        ("expect_column_values_to_be_in_set", {"column": "data.channel", "value_set": ["web"]}, ERROR),
    ]
    assert _summaries(rule_payload_enum(shop[2]["shop.Tick"])) == [
        ("expect_column_values_to_be_in_set", {"column": "data.level", "value_set": ["LOW", "HIGH"]}, ERROR)]


def test_rule_payload_range_with_exclusive_bound(shop):
    assert _summaries(rule_payload_range(shop[2]["shop.Order"])) == [
        ("expect_column_values_to_be_between",
         {"column": "data.amount", "min_value": 0, "max_value": 10000, "strict_max": True}, ERROR)]  # GX drops strict_min=False


def test_rule_payload_length_and_pattern(shop):
    order = shop[2]["shop.Order"]
    assert _summaries(rule_payload_length(order)) == [
        ("expect_column_value_lengths_to_be_between", {"column": "data.order_id", "min_value": 3, "max_value": 12}, ERROR)]
    assert _summaries(rule_payload_pattern(order)) == [
        ("expect_column_values_to_match_regex", {"column": "data.order_id", "regex": "^O-[0-9]+$"}, ERROR)]


def test_rule_payload_format_is_a_warning(shop):
    got = {kw["column"]: (kind, kw, sev) for kind, kw, sev in _summaries(rule_payload_format(shop[2]["shop.Order"]))}
    assert got["data.placed_at"] == ("expect_column_values_to_be_of_type", {"column": "data.placed_at", "type_": "TimestampType"}, WARN)
    assert got["data.customer.email"][0] == "expect_column_values_to_match_regex" and got["data.customer.email"][2] == WARN
    assert got["data.customer.id"][1]["regex"].startswith("^[0-9a-fA-F]{8}-")


def test_rule_payload_items_on_a_derived_size_column(shop):
    order = shop[2]["shop.Order"]
    assert _summaries(rule_payload_items(order)) == [
        ("expect_column_values_to_be_between", {"column": "size(data.items)", "min_value": 1, "max_value": 50}, ERROR)]
    assert build_suite(order).meta["catalake.derived_columns"] == {
        "size(data.items)": "CASE WHEN `data`.`items` IS NULL THEN NULL ELSE size(`data`.`items`) END"}


def test_every_expectation_names_its_catalog_rule(shop):
    suite = build_suite(shop[2]["shop.Order"])
    for expectation in suite.expectations:
        meta = expectation_summary(expectation)["meta"]
        assert meta["rule"] and meta["source"] and meta["severity"] in (ERROR, WARN)
    assert suite.meta["catalake.xid"] == "/messagegroups/shop/messages/shop.Order"


def test_suite_files_are_stable_and_round_trip(shop, tmp_path):
    tables = list(shop[2].values())
    outcome, counts, written = sync_suites(tmp_path, tables)
    assert outcome == {"shop__order": "written", "shop__tick": "written"} and len(written) == 2
    assert counts["shop__order"] == len(build_suite(tables[0]).expectations)
    first = (tmp_path / "shop__order.json").read_bytes()
    # regenerated from the same catalog: nothing rebuilt or rewritten, byte-identical
    assert sync_suites(tmp_path, tables)[::2] == ({"shop__order": "unchanged", "shop__tick": "unchanged"}, [])
    assert (tmp_path / "shop__order.json").read_bytes() == first
    # GX's own serialization: the file loads back into an equal suite
    loaded = load_suite(tmp_path / "shop__order.json")
    assert suite_json(loaded) == first.decode()
    # a file edited by hand is rewritten; a definition gone from the catalog: its suite file goes too
    (tmp_path / "shop__order.json").write_text("{}")
    assert sync_suites(tmp_path, tables[:1])[0] == {"shop__order": "written", "shop__tick": "removed"}
    assert not (tmp_path / "shop__tick.json").exists() and (tmp_path / "shop__order.json").read_bytes() == first


# -- validation on Spark

def test_suite_files_are_gx_documents_built_without_gx(shop, shared_data):
    """The suite files are written from plain data: byte for byte what GX serializes for the
    same suite, for every expectation kind (the shop catalog) and the first definitions of every
    real public catalog."""
    tables = list(shop[2].values())
    for entry in VALID:
        catalog = load_catalog([shared_data / entry[0]])
        found, _ = message_tables(catalog, catalog_roots([shared_data / entry[0]]))
        tables += found[:3]
    kinds = set()
    for table in tables:
        expectations = suite_expectations(table)
        kinds |= {e.type for e in expectations}
        assert document_json(plain_suite_document(table, expectations)) == \
            document_json(suite_document(build_suite(table, expectations=expectations))), table.name
    assert len(tables) > 200 and len(kinds) == 6  # every kind catalake generates


def test_every_expectation_of_the_public_catalogs_is_written_as_gx_writes_it(shop, shared_data):
    """The serialization written without GX (`gx_expectation`) is GX's own, for every distinct
    expectation of every definition of the shop and public catalogs, both severities: what the
    catalog job writes without importing GX."""
    tables = list(shop[2].values())
    for entry in VALID:
        catalog = load_catalog([shared_data / entry[0]])
        tables += message_tables(catalog, catalog_roots([shared_data / entry[0]]))[0]
    distinct = {(e.type, json.dumps(e.gx_kwargs(), sort_keys=True)) for t in tables for e in suite_expectations(t)}
    assert len(distinct) > 300
    for type_, kwargs in sorted(distinct):
        for severity in ("ERROR", "WARN"):
            assert _as_gx_writes(type_, json.loads(kwargs), severity) == _gx_expectation(type_, kwargs, severity), kwargs


@pytest.fixture(scope="module")
def clean_partition(spark, shop):
    from catalake.platform.warehouse.store import DeltaStore

    base, catalog, tables = shop
    store = DeltaStore(spark, base / "warehouse")
    sync_message_tables(store, list(tables.values()))
    root = land(base / "landing", DAY, {"orders.jsonl": jsonl(*[_order(i) for i in range(1, 11)])})
    result = classify_partition(spark, store, list(tables.values()), root, DAY)
    assert result.tables["/messagegroups/shop/messages/shop.Order"] == 10
    return store, Validator(base / "warehouse")


def _failed(outcome):
    return {(o.type, o.column): o for o in outcome.outcomes if not o.success}


def test_clean_partition_passes_every_expectation(clean_partition, shop):
    store, validator = clean_partition
    order = shop[2]["shop.Order"]
    outcome = validator.validate(store.read(order.name), build_suite(order))
    assert outcome.rows == 10 and outcome.success, [o.as_json() for o in outcome.outcomes if not o.success]
    assert len(outcome.outcomes) == len(build_suite(order).expectations)
    assert validator.build_docs().exists()


def test_seeded_violations_fail_exactly_their_expectations(clean_partition, shop):
    store, validator = clean_partition
    order = shop[2]["shop.Order"]
    rows = store.read(order.name)
    line = F.col("source_line")
    # seeded into the stored partition: an out-of-range amount (2 rows), a status outside the
    # enum (1), a missing required order id (1)
    seeded = rows.withColumn("data", F.col("data")
                             .withField("amount", F.when(line.isin(2, 3), F.lit(-1.0)).otherwise(F.col("data.amount")))
                             .withField("status", F.when(line == 4, F.lit("lost")).otherwise(F.col("data.status")))
                             .withField("order_id", F.when(line == 5, F.lit(None)).otherwise(F.col("data.order_id"))))
    store.overwrite_partition(order.name, seeded, "event_date", DAY)
    outcome = validator.validate(store.read(order.name), build_suite(order))
    failed = _failed(outcome)
    assert set(failed) == {
        ("expect_column_values_to_be_between", "data.amount"),
        ("expect_column_values_to_be_in_set", "data.status"),
        ("expect_column_values_to_not_be_null", "data.order_id"),
    }
    assert failed["expect_column_values_to_be_between", "data.amount"].unexpected_count == 2
    assert failed["expect_column_values_to_be_between", "data.amount"].unexpected_percent == 20.0
    assert failed["expect_column_values_to_be_between", "data.amount"].examples == [-1.0, -1.0]
    assert failed["expect_column_values_to_be_in_set", "data.status"].examples == ["lost"]
    assert failed["expect_column_values_to_not_be_null", "data.order_id"].unexpected_count == 1
    assert len(outcome.errors) == 3 and not outcome.warnings

    # a malformed timestamp: a partition whose `time` was written as text by another writer
    # (Delta keeps a timestamp column typed, so that is how one reaches a table)
    text_time = store.read(order.name).withColumn(
        "time", F.when(F.col("source_line") == 6, F.lit("yesterday")).otherwise(F.col("time").cast("string")))
    failed = _failed(validator.validate(text_time, build_suite(order)))
    assert failed["expect_column_values_to_be_of_type", "time"].observed == "StringType"
    assert ("expect_column_values_to_be_between", "data.amount") in failed


def test_suites_for_every_public_definition(shared_data):
    count = expectations = 0
    for path, _, _ in VALID:
        catalog = load_catalog([shared_data / path])
        tables, _ = message_tables(catalog, [shared_data / path.split("/")[0]])
        for table in tables:
            suite = build_suite(table)
            if "specversion" in table.schema.fieldNames():  # CloudEvents: at least the required attributes
                assert len(suite.expectations) >= 4, table.name
            assert json.loads(suite_json(suite))["name"] == table.message.table_name
            count += 1
            expectations += len(suite.expectations)
    assert count == 621 and expectations > 621 * 4


def test_real_azure_events_meet_their_suites(spark, tmp_path, shared_data):
    landing, catalog_file = land_azure(shared_data, tmp_path)
    store, tables, _, result = classify_day(spark, tmp_path, [catalog_file], landing)
    validator = Validator(tmp_path / "warehouse")
    validated = 0
    for table in tables:
        if result.tables.get(table.message.xid):
            outcome = validator.validate(store.read(table.name), build_suite(table))
            assert outcome.rows == 1 and outcome.success, [o.as_json() for o in outcome.outcomes if not o.success]
            validated += 1
    assert validated == 2



def test_properties_named_with_dots_quotes_and_backticks_are_their_own_columns_in_the_suite_and_in_gx(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    schema = {"type": "object", "properties": {
        "geo.lat": {"type": "number", "minimum": -90, "maximum": 90},
        "geo": {"type": "object", "properties": {"lat": {"type": "number", "minimum": 0, "maximum": 1}}},
        "it's": {"type": "string", "enum": ["a'b", "c"]}, "back`tick": {"type": "integer", "minimum": 0}}}
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {"T": {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "t.T"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema}}}}}))
    catalog = load_catalog([folder])
    tables, _ = message_tables(catalog, [folder])
    (table,) = tables
    between = {e.column: e for e in suite_expectations(table) if e.type == "expect_column_values_to_be_between"}
    assert set(between) == {"data.`geo.lat`", "data.geo.lat", "data__back_tick"}  # the last a derived copy
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    events = [ce("t.T", id=str(i), data={"geo.lat": 45.0, "geo": {"lat": 0.5}, "it's": "a'b", "back`tick": i})
              for i in range(4)]
    root = land(tmp_path / "landing", DAY, {"e.jsonl": jsonl(*events)})
    result = classify_partition(spark, store, tables, root, DAY)
    assert result.tables[table.message.xid] == 4
    # GX on the stored rows: both columns resolve, each to its own field, and all pass
    outcome = Validator(tmp_path / "warehouse").validate(store.read(table.name), build_suite(table))
    assert outcome.success and {o.column for o in outcome.outcomes} >= set(between) | {"data.it's"}


def test_suites_stored_without_the_context_are_the_contexts_suites(shop, tmp_path):
    from catalake.platform.quality.suites import store_suite_documents

    tables = list(shop[2].values())
    _, _, written = sync_suites(tmp_path / "suites", tables)
    store_suite_documents(tmp_path, written)
    ids = {p.name: json.loads(p.read_text())["id"] for p in (tmp_path / "gx" / "expectations").glob("*.json")}
    context = Validator(tmp_path).context
    stored = {s.name: s for s in context.suites.all()}
    assert set(stored) == {"shop__order", "shop__tick"}
    assert suite_json(stored["shop__order"]) == (tmp_path / "suites" / "shop__order.json").read_text()
    # stored again (the catalog changed): the same suite keeps its id
    store_suite_documents(tmp_path, written)
    assert {p.name: json.loads(p.read_text())["id"] for p in (tmp_path / "gx" / "expectations").glob("*.json")} == ids
