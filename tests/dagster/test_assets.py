"""The Dagster code location: definitions load, the catalog asset materializes, bad catalogs fail cleanly."""

import json
import shutil
import warnings

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from catalake.component import build_definitions
from catalake.definitions import defs
from catalake.defs.catalog.assets import message_catalog
from catalake.platform.config import Settings
from catalake.platform.warehouse.catalog_table import CATALOG_TABLE
from catalake.platform.warehouse.store import DeltaStore
from catalake.resources import CatalogSource, LandingZone, SparkSessionResource, Warehouse
from support.paths import DEMO_CATALOG, DEMO_DIR


def resources(catalog_paths, warehouse):
    return {
        "catalog_source": CatalogSource(paths=[str(p) for p in catalog_paths]),
        "spark": SparkSessionResource(master="local[2]"),
        "warehouse": Warehouse(path=str(warehouse)),
        "landing": LandingZone(path=str(DEMO_DIR / "landing")),
    }


def spec_code_versions(repo) -> int:
    keys = [k for k in repo.asset_graph.get_all_asset_keys() if k.path[0] == "messages"]
    return len({repo.asset_graph.get(k).code_version for k in keys if repo.asset_graph.get(k).code_version})


def test_definitions_load_one_asset_per_message_definition():
    repo = defs.get_repository_def()
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert {"message_catalog", "expectation_suites", "deadletter", "dbt_project", "data_docs"} <= keys
    # catalog, suites, dead-letter, drift; one per definition; the dbt project, data docs; the dbt
    # models once a catalake_job run parsed the project (test_loading_writes_nothing_...)
    models = {"events_daily", "deadletter_daily", "catalog_coverage", "expectation_failures_daily", "ride_lifecycle"}
    assert keys - models == {k for k in keys if k.startswith("messages/")} | {
        "message_catalog", "expectation_suites", "deadletter", "catalog_drift", "dbt_project", "data_docs"}
    assert len(keys - models) == 4 + 9 + 2 and keys & models in (set(), models)
    assert spec_code_versions(repo) == 9  # each message asset has its definition's fingerprint
    assert defs.resolve_job_def("catalake_job") is not None
    spec = repo.asset_graph.get(AssetKey(["messages", "bikeshare.rides.kafka", "bikeshare.rides.kafka.RideStarted"]))
    assert spec.group_name == "bikeshare_rides_kafka"
    assert set(spec.kinds) == {"spark", "delta"}
    # the graph shows the first line: the short name, the protocol and the SQL table
    assert spec.description.startswith("RideStarted over Kafka -> table `bikeshare_rides_kafka__ridestarted`: "
                                       "RideStarted on the 'rides' topic.")
    assert AssetKey("message_catalog") in spec.parent_keys
    columns = {c.name: c for c in spec.metadata["dagster/column_schema"].columns}
    assert columns["kafka_offset"].type == "bigint"
    assert columns["data"].type.startswith("struct<ride_id:string,bike_id:string")
    assert columns["city"].description == "Value of the uritemplate placeholder {city}."
    assert spec.metadata["dagster/table_name"] == "bikeshare_rides_kafka__ridestarted"
    # the columns a filter can rule files out by, as the table's property names them
    stats = spec.metadata["stats_columns"]
    assert stats.startswith("2") and "time, " in stats and "data.ride_id" in stats and "kafka_headers" not in stats


def test_an_invalid_catalog_still_loads_the_code_location(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    repo = build_definitions(Settings(catalog=(bad,), warehouse=tmp_path / "wh")).get_repository_def()
    graph = repo.asset_graph
    materializable = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).is_materializable}
    # the dbt sources still name the demo's message assets, as external ones only
    assert not any(k.startswith("messages/") for k in materializable)
    assert {"message_catalog", "expectation_suites", "deadletter"} <= materializable


def test_settings_from_environment(tmp_path):
    settings = Settings.from_env(
        {"CATALAKE_CATALOG": f"{tmp_path}/a.json:{tmp_path}/b", "CATALAKE_WAREHOUSE": str(tmp_path / "wh"),
         "CATALAKE_SPARK_MASTER": "sc://spark:15002",
         "CATALAKE_SPARK_CONF": " spark.driver.memory=4g\tspark.sql.shuffle.partitions=8 "}
    )
    assert settings.catalog == (tmp_path / "a.json", tmp_path / "b")
    assert settings.spark_master == "sc://spark:15002"
    assert Settings.from_env({}).catalog == (DEMO_CATALOG,)
    configured = build_definitions(settings).resources
    assert configured["warehouse"].path == str(tmp_path / "wh")
    assert configured["spark"].conf == {"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "8"}


def test_a_malformed_spark_setting_is_named():
    with pytest.raises(ValueError, match=r"CATALAKE_SPARK_CONF: 'driver.memory=4g' is not a spark.<key>=<value> pair"):
        Settings.from_env({"CATALAKE_SPARK_CONF": "spark.ui.enabled=false driver.memory=4g"})


def test_message_catalog_materializes(spark, tmp_path):
    result = materialize([message_catalog], resources=resources([DEMO_CATALOG], tmp_path / "wh"))
    assert result.success
    (mat,) = result.asset_materializations_for_node("message_catalog")
    meta = mat.metadata
    assert meta["dagster/row_count"].value == 9
    assert [c.name for c in meta["dagster/column_schema"].schema.columns][:3] == ["group_id", "message_id", "xid"]
    assert "bikeshare.rides.kafka.RideStarted" in meta["preview"].value
    assert meta["committed"].value is True
    store = DeltaStore(spark, tmp_path / "wh")
    assert store.read(CATALOG_TABLE).count() == 9
    # every definition's table exists before any event arrives
    assert meta["tables_created"].value == 9
    assert store.exists("messages/bikeshare_docks_mqtt__dockstatus")
    assert store.read("messages/bikeshare_docks_mqtt__dockstatus").count() == 0
    again = materialize([message_catalog], resources=resources([DEMO_CATALOG], tmp_path / "wh"))
    (mat,) = again.asset_materializations_for_node("message_catalog")
    assert mat.metadata["tables_created"].value == 0 and mat.metadata["tables_evolved"].value == 0


def test_refused_evolution_fails_the_catalog_asset(spark, tmp_path):
    catalog_dir = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog_dir)
    assert materialize([message_catalog], resources=resources([catalog_dir], tmp_path / "wh")).success
    doc = json.loads((catalog_dir / "schemas.xreg.json").read_text())
    versions = doc["schemagroups"]["bikeshare.payments.json"]["schemas"]["PaymentCaptured"]["versions"]
    (version,) = versions.values()
    version["schema"]["properties"]["amount"] = {"type": "string"}
    (catalog_dir / "schemas.xreg.json").write_text(json.dumps(doc))
    result = materialize([message_catalog], resources=resources([catalog_dir], tmp_path / "wh"), raise_on_error=False)
    assert not result.success
    problems = result.failure_data_for_node("message_catalog").user_failure_data.metadata["problems"].value
    assert "table messages/bikeshare_payments__paymentcaptured: column data.amount: double -> string" in problems


def test_invalid_catalog_fails_and_leaves_tables_untouched(spark, tmp_path):
    assert materialize([message_catalog], resources=resources([DEMO_CATALOG], tmp_path / "wh")).success
    store = DeltaStore(spark, tmp_path / "wh")
    version = store.version(CATALOG_TABLE)
    bad = tmp_path / "bad.xreg.json"
    doc = json.loads((DEMO_CATALOG / "bikeshare.xreg.json").read_text())
    doc["messagegroups"]["bikeshare.rides"]["messages"]["bikeshare.rides.RideStarted"]["envelopemetadata"]["id"] = {"required": False}
    bad.write_text(json.dumps(doc))
    result = materialize(
        [message_catalog], resources=resources([bad, DEMO_CATALOG / "schemas.xreg.json"], tmp_path / "wh"), raise_on_error=False
    )
    assert not result.success
    failure = result.failure_data_for_node("message_catalog").error
    assert "cloudevents-required-attribute" in str(failure) or "invalid message catalog" in str(failure)
    assert store.version(CATALOG_TABLE) == version
    assert store.read(CATALOG_TABLE).count() == 9


def test_failed_error_expectations_block():
    """A partition breaking what the catalog requires fails its check with ERROR severity."""
    from catalake.defs.quality.checks import check_result
    from catalake.platform.quality.validator import ExpectationOutcome, SuiteOutcome

    key = AssetKey(["messages", "g", "m"])
    error = ExpectationOutcome("expect_column_values_to_be_in_set", "data.status", "payload enum", "ERROR", False, 1, 10.0, ["lost"])
    warn = ExpectationOutcome("expect_column_values_to_match_regex", "data.email", "payload format", "WARN", False, 2, 20.0)
    fine = ExpectationOutcome("expect_column_values_to_not_be_null", "id", "required attribute", "ERROR", True, 0, 0.0)
    blocked = check_result(key, SuiteOutcome("m", 10, [error, warn, fine]))
    assert not blocked.passed and blocked.severity.value == "ERROR"
    assert blocked.metadata["failed_error"].value == 1 and "lost" in blocked.metadata["results"].value
    warned = check_result(key, SuiteOutcome("m", 10, [warn, fine]))
    assert not warned.passed and warned.severity.value == "WARN"
    assert check_result(key, SuiteOutcome("m", 10, [fine])).passed


def test_a_load_reads_the_state_and_writes_nothing(tmp_path, monkeypatch):
    """The code location is loaded by the webserver, the daemon, every code server and run worker:
    a load creates no file, before and after a `catalake_job` run. Before it, the catalog is read as
    the location loads, with a warning that says how to write the state. That run writes the state
    (the message specs, the landing's first day, the dbt manifest); the next loads build everything
    from it: the dbt models appear, the first partition is the state's, and the catalog is not read
    (a catalog broken on disk still shows the state's assets, and the catalog asset says it changed).
    Under `dagster dev` a load refreshes the state first, as Dagster's state-backed components do."""
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI", raising=False)
    landing = tmp_path / "landing"
    (landing / "2026-11-03").mkdir(parents=True)
    catalog = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog)
    settings = Settings(catalog=(catalog,), warehouse=tmp_path / "wh", landing=landing)

    def keys(defs, first: str) -> set[str]:
        return {k.to_user_string() for k in defs.get_repository_def().asset_graph.get_all_asset_keys()
                if k.path[0] == first}

    def files() -> dict:
        return {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}

    before = files()
    with pytest.warns(UserWarning, match="no state for this code location yet"):
        defs = build_definitions(settings)
    assert files() == before  # nothing written, not even the warehouse folder
    assert len(keys(defs, "messages")) == 9 and keys(defs, "events_daily") == set()  # no manifest yet: no dbt model
    assert defs.resolve_job_def("events_job").partitions_def.get_first_partition_key() == "2026-11-03"  # listed

    run = defs.resolve_job_def("catalake_job").execute_in_process(instance=DagsterInstance.ephemeral())
    assert run.success
    (kept,) = run.asset_materializations_for_node("message_catalog")
    state = tmp_path / "wh" / "catalog" / "state.json"
    assert kept.metadata["state"].value == f"written to {state}"
    assert kept.metadata["landing_first_day"].value == "2026-11-03"
    (project,) = run.asset_materializations_for_node("dbt_project")
    assert "events_daily" in project.metadata["models"].value

    (landing / "2026-11-01").mkdir()  # an earlier day lands: the loads keep the state's first day
    for document in catalog.glob("*.json"):
        document.write_text("{ not json")  # nor is the catalog read
    after = files()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a state: no warning
        defs = build_definitions(settings)
    assert files() == after
    assert len(keys(defs, "messages")) == 9
    assert keys(defs, "events_daily") == {"events_daily"} and defs.resolve_job_def("analytics_job")
    assert defs.resolve_job_def("events_job").partitions_def.get_first_partition_key() == "2026-11-03"
    graph = defs.get_repository_def().asset_graph
    node = graph.get(AssetKey("message_catalog"))
    assert node.description.startswith("**The catalog changed since this code location's state was made**")
    assert str(next(catalog.glob("*.json"))) in node.metadata["catalog_changed"]
    assert {k.name for k in graph.get_check_keys_for_assets({AssetKey("message_catalog")})} == {"state_current"}

    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")  # `dagster dev`: the state is refreshed as the location loads
    graph = build_definitions(settings).get_repository_def().asset_graph
    messages = [k for k in graph.get_all_asset_keys() if k.path[0] == "messages"]
    assert len(messages) == 9  # the last valid catalog's, each saying what is wrong
    assert graph.get(messages[0]).description.startswith("**The message catalog is invalid")
    assert not graph.get(AssetKey("message_catalog")).description.startswith("**The catalog changed")
