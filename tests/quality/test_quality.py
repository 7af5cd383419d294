"""Data quality from the classification pass: every expectation evaluated on every
matched record, with GX's semantics; GX's own engine is the second opinion."""

import datetime as dt
import json
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, DagsterInstance

from catalake.platform.quality.evaluation import Counts, SuiteCheck, failure_detail, merge_tallies, results
from catalake.platform.quality.expectations import (BETWEEN, ERROR, IN_SET, LENGTHS_BETWEEN, MATCH_REGEX, NOT_NULL,
                                                    WARN, Expectation)
from support.paths import DEMO_CATALOG
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)


def expectation(kind, column, severity=ERROR, guard=(), measure=None, **kwargs):
    path = tuple(column.split("."))
    rule = {NOT_NULL: "payload required", IN_SET: "payload enum", BETWEEN: "payload range", MATCH_REGEX: "payload pattern",
            LENGTHS_BETWEEN: "payload length"}[kind]
    return Expectation(kind, column, kwargs, rule, "test", severity, column, path, guard, measure)


# -- the compiled checks, with GX's semantics (pure Python)

def test_compiled_checks_count_like_great_expectations():
    suite = SuiteCheck([
        expectation(NOT_NULL, "data.id"),
        expectation(IN_SET, "data.status", value_set=["new", "paid"]),
        expectation(BETWEEN, "data.amount", min_value=0, max_value=100, strict_max=True),
        expectation(MATCH_REGEX, "data.id", regex="^O-"),
        expectation(LENGTHS_BETWEEN, "data.id", min_value=3),
        # an optional parent: rows without it are not evaluated (GX's row condition)
        expectation(NOT_NULL, "data.customer.email", guard=(("data", "customer"),)),
        expectation(MATCH_REGEX, "data.customer.email", severity=WARN, regex="@"),
    ])
    rows = [
        {"id": "O-1", "status": "new", "amount": 5.0, "customer": {"email": "a@b"}},
        {"id": "X-22", "status": "lost", "amount": 100, "customer": None},  # enum, strict max, pattern
        {"id": None, "status": None, "amount": -1, "customer": {"email": None}},  # required x2, min
        {"id": "O", "status": "paid", "amount": None, "customer": {"email": "nope"}},  # length; WARN regex
    ]
    failed = [[e.id for e, _ in suite.check({"data": r}, [], "f.jsonl", n)] for n, r in enumerate(rows, 1)]
    assert failed == [[], ["data.status:enum", "data.amount:range", "data.id:pattern"],
                      ["data.id:required", "data.amount:range", "data.customer.email:required"],
                      ["data.id:pattern", "data.id:length"]]
    for n, r in enumerate(rows, 1):
        suite.kept({"data": r}, "f.jsonl", n)  # WARN: evaluated on the rows that were kept (all of them here)
    counts = {e.id: c for e, c in zip(suite.expectations, suite.counts)}
    assert counts["data.id:required"] == [4, 0, 1]
    assert counts["data.status:enum"] == [4, 1, 1]  # a null is missing, not unexpected
    assert counts["data.amount:range"] == [4, 1, 2]
    assert counts["data.customer.email:required"] == [3, 0, 1]  # the row without a customer is not evaluated
    assert counts["data.customer.email:pattern"] == [4, 2, 1]  # the WARN one: no row condition, nulls are missing
    assert suite.tally()["expectations"][2][3] == [[100, "f.jsonl", 2], [-1, "f.jsonl", 3]]
    out = {r.expectation.id: r for r in results(suite.expectations, [Counts(*c) for c in suite.counts])}
    assert (out["data.id:required"].unexpected_percent, out["data.id:required"].missing_count) == (25.0, None)
    assert out["data.amount:range"].unexpected_percent == pytest.approx(200 / 3)  # of the non-null values, as GX


def test_failure_detail_names_every_rule_and_does_not_repeat_a_type_error():
    suite = SuiteCheck([expectation(NOT_NULL, "data.id"), expectation(BETWEEN, "data.n", min_value=0)])
    type_errors = [("data.id:type", "data.id: 5 is not of type 'string'")]
    failed = suite.check({"data": {"id": None, "n": -2}}, type_errors, "f", 1)
    detail, broken = failure_detail(type_errors, failed, limit=3)
    assert detail == "data.id: 5 is not of type 'string'; data.n: -2 is less than the minimum of 0"
    assert broken == ["data.id:type", "data.id:required", "data.n:range"]
    assert suite.types.unexpected == 1 and suite.tally()["type"][2] == 1


def test_tallies_of_tasks_merge():
    suite = SuiteCheck([expectation(NOT_NULL, "data.id")])
    suite.check({"data": {"id": None}}, [], "a", 1)
    first = suite.tally()
    suite.reset()
    suite.check({"data": {"id": None}}, [], "b", 7)
    counts, types, rejected = merge_tallies([first, suite.tally()], 1)
    assert (counts[0].evaluated, counts[0].unexpected, counts[0].examples) == (2, 2, [[None, "a", 1], [None, "b", 7]])
    assert types.evaluated == 2 and rejected == 0


# -- a seeded demo day, through Dagster, against GX's own validation

RIDE_STARTED = "messages/bikeshare.rides/bikeshare.rides.RideStarted"
SEEDS = [  # (changes to a valid RideStarted payload, the rules it breaks)
    ({"bike_type": "tandem"}, ["data.bike_type:enum"]),
    ({"bike_type": "unicycle", "battery_pct": 140}, ["data.bike_type:enum", "data.battery_pct:range"]),
    ({"battery_pct": -3}, ["data.battery_pct:range"]),
    ({"ride_id": "X-1"}, ["data.ride_id:pattern"]),
    ({"station_id": None}, ["data.station_id:required"]),
    ({"rider_id": "not-a-uuid"}, []),  # format: a WARN expectation, the record is kept
    ({"rider_id": "also-not"}, []),
]


ORDER = "messages/shop/shop.Order"
ORDER_SEEDS = [  # payloads of shop.Order (support.orders.ORDER_SCHEMA): lengths and item counts
    ({"order_id": "O-1234567890123"}, ["data.order_id:length"]),
    ({"items": []}, ["data.items:items"]),
    ({"items": ["x"] * 51, "order_id": "O-1"}, ["data.items:items"]),
]


@pytest.fixture(scope="module")
def seeded(spark, tmp_path_factory):
    from catalake.component import build_definitions
    from catalake.platform.config import DEMO_DIR, Settings

    base = tmp_path_factory.mktemp("seeded")
    landing = base / "landing"
    shutil.copytree(DEMO_DIR / "landing" / DAY.isoformat(), landing / DAY.isoformat())
    template = next(json.loads(line) for line in (landing / DAY.isoformat() / "rides-http.jsonl").read_text().splitlines()
                    if '"bikeshare.rides.RideStarted"' in line)
    lines = []
    for n, (changes, _) in enumerate(SEEDS):
        event = {**template, "id": f"seed-{n}", "data": {**template["data"], **changes}}
        event["data"] = {k: v for k, v in event["data"].items() if v is not None}
        lines.append(json.dumps(event))
    from support.orders import CATALOG, _order

    for n, (changes, _) in enumerate(ORDER_SEEDS):
        order = _order(100 + n)
        order["data"].update(changes)
        lines.append(json.dumps(order))
    lines += [json.dumps(_order(n)) for n in range(1, 6)]
    (landing / DAY.isoformat() / "seeded.jsonl").write_text("\n".join(lines) + "\n")
    shop = base / "shop"
    shop.mkdir()
    (shop / "shop.xreg.json").write_text(json.dumps(CATALOG))
    warehouse = base / "warehouse"
    definitions = build_definitions(Settings(catalog=(DEMO_CATALOG, shop), landing=landing, warehouse=warehouse,
                                             spark_master="local[2]"))
    instance = DagsterInstance.ephemeral()
    definitions.resolve_job_def("catalake_job").execute_in_process(instance=instance)
    run = definitions.resolve_job_def("events_job").execute_in_process(instance=instance, partition_key=DAY.isoformat())
    docs = definitions.resolve_job_def("analytics_job").execute_in_process(
        instance=instance, partition_key=DAY.isoformat(), asset_selection=[AssetKey("data_docs")])
    assert run.success and docs.success
    return base, landing, warehouse, run


def _pass_results(run, asset: str = RIDE_STARTED) -> dict:
    evaluation = next(e for e in run.get_asset_check_evaluations()
                      if e.asset_key.to_user_string() == asset and e.check_name == "expectations")
    assert evaluation.partition == DAY.isoformat()
    return evaluation, {d["id"]: d for d in evaluation.metadata["details"].value}


def test_check_metadata_shows_the_seeded_numbers(seeded):
    _, _, _, run = seeded
    evaluation, details = _pass_results(run)
    broken = {}
    for _, rules in SEEDS:
        for rule in rules:
            broken[rule] = broken.get(rule, 0) + 1
    failed = {i: d["unexpected_count"] for i, d in details.items() if d.get("unexpected_count")}
    assert failed == {**broken, "data.rider_id:format": 2}
    matched = 6 + len(SEEDS)  # the demo's RideStarted records over HTTP that day, and the seeds
    # ERROR expectations: evaluated on every matched record; WARN ones on the records kept
    assert {d["evaluated"] for d in details.values() if d["severity"] == ERROR} == {matched}
    assert {d["evaluated"] for d in details.values() if d["severity"] == WARN} == {matched - 5}
    assert details["data.bike_type:enum"]["examples"][0]["value"] == "tandem"
    assert details["data.bike_type:enum"]["examples"][0]["source_file"].endswith("seeded.jsonl")
    assert evaluation.metadata["records_dead_lettered"].value == 5 and not evaluation.passed
    assert evaluation.severity.value == "WARN"  # the stored rows meet the suite: dropped records warn


def test_dead_letters_name_the_rules_they_broke(seeded, spark):
    from catalake.platform.warehouse.store import DeltaStore

    _, _, warehouse, _ = seeded
    rows = DeltaStore(spark, warehouse).read("deadletter").where("reason = 'schema_violation'").collect()
    by_id = {r.event_id: sorted(r.expectations) for r in rows}
    assert {k: v for k, v in by_id.items() if k.startswith("seed-")} == {
        f"seed-{n}": sorted(rules) for n, (_, rules) in enumerate(SEEDS) if rules}


def test_stored_gx_results_and_data_docs_show_the_same_numbers(seeded):
    from great_expectations.data_context.types.resource_identifiers import ValidationResultIdentifier

    from catalake.platform.quality.validator import Validator

    _, _, warehouse, run = seeded
    _, details = _pass_results(run)
    validator = Validator(warehouse)
    keys = [k for k in validator.context.validation_results_store.list_keys()
            if isinstance(k, ValidationResultIdentifier) and k.expectation_suite_identifier.name == "bikeshare_rides__ridestarted"]
    assert len(keys) == 1 and keys[0].run_id.run_name.startswith("2026-11-20 (run ")
    stored = validator.context.validation_results_store.get(keys[0])  # GX's own object, loaded by GX
    assert type(stored).__name__ == "ExpectationSuiteValidationResult"
    by_id = {r.expectation_config.meta["id"]: r for r in stored.results}
    assert {i: r.result.get("unexpected_count") for i, r in by_id.items() if r.result.get("unexpected_count")} == {
        i: d["unexpected_count"] for i, d in details.items() if d.get("unexpected_count") and i != "data:type"}
    page = next((warehouse / "gx/uncommitted/data_docs/local_site/validations/bikeshare_rides__ridestarted").rglob("*.html"))
    html = page.read_text()
    assert "tandem" in html and "2026-11-20" in html
    assert re.search(r"2 unexpected values found", html)


def test_gx_on_the_unfiltered_rows_counts_what_the_pass_counted(seeded, spark):
    """GX's validation: the same records, typed but not filtered, validated by GX's own engine."""
    from catalake.platform.catalog import load_catalog
    from catalake.platform.landing.listing import partition_files
    from catalake.platform.landing.planning import plan_tasks
    from catalake.platform.quality.validator import Validator
    from catalake.platform.quality.suites import build_suite
    from catalake.platform.runs.classifier import Classifier
    from catalake.platform.warehouse.arrowschemas import arrow_schema
    from catalake.platform.warehouse.message_tables import message_tables
    from catalake.platform.warehouse.store import DeltaStore

    base, landing, warehouse, run = seeded
    catalogs = [DEMO_CATALOG, base / "shop"]
    tables, _ = message_tables(load_catalog(catalogs), catalogs)
    plan = plan_for(tables, base / "validated", DAY, run="validated")
    pieces = [p for task in plan_tasks(None, partition_files(landing, DAY), 1) for p in task]
    matched = Classifier(plan).matched_rows(pieces)
    validator = Validator(base / "validated")
    compared = set()
    for asset, name, dropped in ((RIDE_STARTED, "bikeshare_rides__ridestarted", 5), (ORDER, "shop__order", 3)):
        _, details = _pass_results(run, asset)
        table = next(t for t in tables if t.message.table_name == name)
        checked = matched[table.name]
        assert sum(1 for c in checked if not c.kept) == dropped
        schema = arrow_schema(table.schema, exclude=("event_date",))
        path = base / "validated" / f"{name}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([dict(zip(schema.names, c.values)) for c in checked], schema=schema), path)
        unfiltered = spark.read.schema(type(table.schema)([f for f in table.schema.fields if f.name != "event_date"])).parquet(str(path))
        suite = build_suite(table)
        gx_unfiltered = {o.id: o for o in validator.validate(unfiltered, suite).outcomes}
        stored = DeltaStore(spark, warehouse).read(table.name).where(f"event_date = DATE'{DAY}'")
        gx_stored = {o.id: o for o in validator.validate(stored, suite).outcomes}
        for e in suite.expectations:
            meta = e.configuration.meta
            gx = (gx_unfiltered if meta["severity"] == ERROR else gx_stored)[meta["id"]]
            ours = details[meta["id"]]
            if gx.unexpected_count is None:  # an aggregate expectation (the column's type)
                assert ours["success"] and gx.success
                continue
            assert (ours["unexpected_count"], ours["evaluated"]) == (gx.unexpected_count, gx.evaluated), (name, meta["id"])
            compared.add((e.configuration.type, ours["unexpected_count"] > 0))
    # every kind of expectation the suites use, each with records that break it
    assert {kind for kind, broken in compared if broken} == {
        "expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set", "expect_column_values_to_be_between",
        "expect_column_values_to_match_regex", "expect_column_value_lengths_to_be_between"}


def test_catalake_validate_runs_gx_on_the_stored_partitions(seeded, monkeypatch, capsys):
    from catalake.cli import main

    _, landing, warehouse, _ = seeded
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("CATALAKE_LANDING", str(landing))
    assert main(["validate", "--date", DAY.isoformat(), "--table", "bikeshare_rides__ridestarted"]) == 0
    out = capsys.readouterr().out
    # the stored rows meet every ERROR expectation; the kept records with a bad uuid fail the WARN one
    assert re.search(r"messages/bikeshare_rides__ridestarted\s+8\s+\d+\s+0\s+1\s+data.rider_id:format \(2\)", out), out


def test_validate_job_records_gx_outcomes_as_check_evaluations(seeded):
    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    base, landing, warehouse, _ = seeded
    definitions = build_definitions(Settings(catalog=(DEMO_CATALOG, base / "shop"), landing=landing, warehouse=warehouse,
                                             spark_master="local[2]"))
    run = definitions.resolve_job_def("validate_job").execute_in_process(
        instance=DagsterInstance.ephemeral(), partition_key=DAY.isoformat())
    assert run.success
    evaluated = {e.event_specific_data.asset_key.to_user_string(): e.event_specific_data
                 for e in run.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}
    started, order = evaluated[RIDE_STARTED], evaluated[ORDER]
    assert (started.check_name, started.partition) == ("expectations", DAY.isoformat())
    assert not started.passed and started.severity.value == "WARN"  # the WARN uuid format, on two kept rows
    assert started.metadata["failed_error"].value == 0 and started.metadata["failed_warn"].value == 1
    assert started.metadata["table"].value == "messages/bikeshare_rides__ridestarted"
    assert order.passed and order.metadata["rows_stored"].value > 0


def test_stored_rows_that_break_a_tightened_rule_fail_validate_job_with_one_line(seeded, tmp_path):
    """A catalog tightened after the rows were stored (an order's amount now below 11): GX finds
    stored rows breaking an ERROR expectation, an error of the data or the catalog, so the step
    fails through the boundary (defs/failures.py) with one line and no traceback."""
    from catalake.component import build_definitions
    from catalake.platform.config import Settings
    from support.orders import CATALOG, ORDER_SCHEMA

    _, landing, warehouse, _ = seeded
    tightened = {**ORDER_SCHEMA, "properties": {**ORDER_SCHEMA["properties"],
                                                "amount": {"type": "number", "minimum": 0, "exclusiveMaximum": 11}}}
    catalog = json.loads(json.dumps(CATALOG))
    catalog["messagegroups"]["shop"]["messages"]["shop.Order"]["dataschema"] = tightened
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "shop.xreg.json").write_text(json.dumps(catalog))
    definitions = build_definitions(Settings(catalog=(DEMO_CATALOG, tmp_path / "shop"), landing=landing,
                                             warehouse=warehouse, spark_master="local[2]"))
    run = definitions.resolve_job_def("validate_job").execute_in_process(
        instance=DagsterInstance.ephemeral(), partition_key=DAY.isoformat(), raise_on_error=False,
        run_config={"ops": {"validate_stored_partition": {"config": {"tables": ["shop__order"]}}}})
    assert not run.success
    (failure,) = [e for e in run.all_events if e.is_step_failure]
    told = failure.step_failure_data.user_failure_data
    assert told is not None and told.description == "stored rows break ERROR expectations in messages/shop__order"
