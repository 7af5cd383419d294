"""Issue 29: what a data engineer sees of the demo in the Dagster UI: the instance's records and
the UI's own GraphQL answers (the check tied to its materialization and saying what it means,
names, owners, code versions, automations, re-executing a `catalake run` run, the assets of an
invalid catalog). No JVM: the demo's days are classified by local processes."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance, instance_for_test

from catalake.component import build_definitions
from catalake.defs.events.jobs import DAILY_SELECTION
from catalake.instance import runs_of_code_location
from catalake.platform.config import DEMO_DIR, Settings

DAY = "2026-11-20"
ENDED = AssetKey(["messages", "bikeshare.rides", "bikeshare.rides.RideEnded"])
KAFKA_ENDED = AssetKey(["messages", "bikeshare.rides.kafka", "bikeshare.rides.kafka.RideEnded"])
UNFED = AssetKey(["messages", "bikeshare.docks.mqtt", "bikeshare.docks.mqtt.BatteryLow"])  # no event that day


@pytest.fixture(scope="module")
def demo_day(tmp_path_factory):
    """The catalog job and one day of the demo, launched as `catalake run` launches them."""
    base = tmp_path_factory.mktemp("seen")
    settings = Settings(warehouse=base / "warehouse", owners=("team:data-platform",), engine="local")  # no JVM here
    definitions = build_definitions(settings, analytics=False)
    # a persistent instance (the UI's workspace needs one), whose launcher runs a re-execution here
    with instance_for_test(synchronous_run_coordinator=True, synchronous_run_launcher=True) as instance:
        with runs_of_code_location(instance):
            assert definitions.resolve_job_def("catalake_job").execute_in_process(instance=instance).success
            run = definitions.resolve_job_def("events_job").execute_in_process(
                instance=instance, partition_key=DAY, asset_selection=DAILY_SELECTION, tags={"catalake/launched_by": "test"})
        assert run.success
        yield settings, definitions, instance, run


def _evaluation(instance, key):
    [record] = instance.event_log_storage.get_asset_check_execution_history(AssetCheckKey(key, "expectations"), limit=5)
    return record, record.event.dagster_event.event_specific_data


def _materialization(instance, key):
    return instance.fetch_materializations(AssetRecordsFilter(asset_key=key, asset_partitions=[DAY]), limit=1).records[0]


def test_the_expectations_check_says_what_it_means_and_is_tied_to_its_materialization(demo_day):
    _, definitions, instance, _ = demo_day
    spec = definitions.get_repository_def().asset_graph.get_check_spec(AssetCheckKey(ENDED, "expectations"))
    assert spec.blocking
    assert "**Failed, WARN** (blocks nothing)" in spec.description and "**Failed, ERROR** (blocks" in spec.description
    # one RideEnded record broke an ERROR expectation: dead-lettered, the 6 stored rows meet the suite
    record, evaluation = _evaluation(instance, ENDED)
    materialization = _materialization(instance, ENDED)
    metadata = {k: v.value for k, v in evaluation.metadata.items()}
    assert not evaluation.passed and evaluation.severity.value == "WARN" and evaluation.blocking
    assert (metadata["records_matched"], metadata["records_dead_lettered"], metadata["rows_stored"]) == (7, 1, 6)
    assert metadata["rows_stored"] == materialization.asset_materialization.metadata["dagster/partition_row_count"].value
    assert evaluation.description.startswith("7 record(s) matched, 6 stored; 1 broke an ERROR expectation and was dead-lettered")
    assert "rows" not in metadata  # no count whose meaning one has to guess
    # tied to the materialization it checks (the UI's targetMaterialization)
    assert evaluation.target_materialization_data.storage_id == materialization.storage_id
    assert evaluation.target_materialization_data.run_id == materialization.run_id
    # a table the day does not feed: processed with 0 rows, and its check passes with nothing to check
    record, evaluation = _evaluation(instance, UNFED)
    assert evaluation.passed and evaluation.metadata["rows_stored"].value == 0
    assert "nothing to check" in evaluation.description
    assert evaluation.target_materialization_data.storage_id == _materialization(instance, UNFED).storage_id


def test_names_owners_and_code_versions(demo_day):
    settings, definitions, instance, run = demo_day
    graph = definitions.get_repository_def().asset_graph
    ended, kafka = graph.get(ENDED), graph.get(KAFKA_ENDED)
    # the graph shows a description's first line: the HTTP and the Kafka RideEnded differ there
    assert ended.description.splitlines()[0].startswith("RideEnded -> table `bikeshare_rides__rideended`")
    assert kafka.description.splitlines()[0].startswith("RideEnded over Kafka -> table `bikeshare_rides_kafka__rideended`")
    uri = (Path(settings.warehouse) / "messages" / "bikeshare_rides_kafka__rideended").as_uri()
    assert kafka.metadata["dagster/table_name"] == "bikeshare_rides_kafka__rideended" and kafka.metadata["dagster/uri"] == uri
    assert kafka.metadata["message_id"] == "bikeshare.rides.kafka.RideEnded"
    assert kafka.tags["protocol"] == "kafka" and ended.tags["protocol"] == "any"
    # owners from the groups' `labels.owner`; the dead-letter table's from CATALAKE_OWNERS
    assert kafka.owners == ["team:rides"] and graph.get(AssetKey(["messages", "bikeshare.payments", "bikeshare.payments.PaymentCaptured"])).owners == ["payments@bikeshare.example"]
    assert graph.get(AssetKey("deadletter")).owners == ["team:data-platform"]
    assert all(graph.get(AssetKey(k)).code_version for k in ("message_catalog", "expectation_suites", "deadletter"))
    # one naming in the run's metadata: SQL table names, where the table is
    materialization = _materialization(instance, KAFKA_ENDED).asset_materialization.metadata
    assert materialization["dagster/table_name"].value == "bikeshare_rides_kafka__rideended"
    assert materialization["dagster/uri"].value == uri
    dead = {m.asset_key: m for m in run.asset_materializations_for_node("classify_events")}[AssetKey("deadletter")].metadata
    assert "| bikeshare_rides_kafka__rideended | bikeshare.rides.kafka.RideEnded |" in dead["per_table"].value
    assert "/messagegroups/" not in dead["per_table"].value
    conservation = next(e for e in run.get_asset_check_evaluations() if e.check_name == "conservation")
    names = {graph.get(k).metadata["dagster/table_name"] for k in graph.get_all_asset_keys() if k.path[0] == "messages"}
    counted = set(conservation.metadata["per_table"].value)  # the tables that exist: 7 fed, and deadletter
    assert counted <= names | {"deadletter"} and len(counted) == 8 and "bikeshare_rides_kafka__rideended" in counted


@pytest.fixture(scope="module")
def ui(demo_day, tmp_path_factory):
    """The UI's GraphQL over the demo's instance, with the code location as workspace.yaml loads
    it (named `catalake`), in this process."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

    settings, _, instance, _ = demo_day
    location = tmp_path_factory.mktemp("location") / "location.py"
    location.write_text(textwrap.dedent(f"""
        from catalake.component import build_definitions
        from catalake.platform.config import Settings

        defs = build_definitions(Settings(warehouse={str(settings.warehouse)!r}, engine="local"), analytics=False)
    """))
    origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(python_file=str(location), attribute="defs"),
                                         location_name="catalake")
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as process:
        yield process.create_request_context()


def _graphql(context, query: str, variables: dict | None = None) -> dict:
    from dagster_graphql.test.utils import execute_dagster_graphql

    result = execute_dagster_graphql(context, query, variables)
    assert not result.errors, result.errors
    return result.data


def test_the_message_assets_show_the_job_schedule_and_sensor_that_feed_them(ui):
    data = _graphql(ui, """query($keys: [AssetKeyInput!]) { assetNodes(assetKeys: $keys) {
        assetKey { path } jobNames targetingInstigators { ... on Schedule { name } ... on Sensor { name } } } }""",
                    {"keys": [{"path": ENDED.path}, {"path": UNFED.path}]})
    for node in data["assetNodes"]:
        assert "events_job" in node["jobNames"]
        assert {i["name"] for i in node["targetingInstigators"]} == {"daily_events_schedule", "landing_sensor"}


def test_the_schedule_runs_yesterday_for_the_whole_day(demo_day):
    import datetime as dt

    from dagster import build_schedule_context

    _, definitions, _, _ = demo_day
    schedule = definitions.resolve_schedule_def("daily_events_schedule")
    at = dt.datetime(2026, 11, 21, 1, 0, tzinfo=dt.timezone.utc)
    context = build_schedule_context(scheduled_execution_time=at, repository_def=definitions.get_repository_def())
    [request] = schedule.evaluate_tick(context).run_requests
    assert request.partition_key == DAY and list(request.asset_selection) == DAILY_SELECTION


def test_a_catalake_run_run_can_be_re_executed_from_the_ui(demo_day, ui):
    _, _, instance, run = demo_day
    data = _graphql(ui, """query($id: ID!) { runOrError(runId: $id) { ... on Run {
        jobName repositoryOrigin { repositoryLocationName repositoryName } tags { key value } } } }""", {"id": run.run_id})
    shown = data["runOrError"]
    assert shown["repositoryOrigin"] == {"repositoryLocationName": "catalake", "repositoryName": "__repository__"}
    tags = {t["key"]: t["value"] for t in shown["tags"]}
    assert tags["dagster/partition"] == DAY and tags["catalake/launched_by"] == "test"
    # the UI's "Re-execute": a new run of the same job, partition and selection, from the code location
    launched = _graphql(ui, """mutation($id: String!) { launchRunReexecution(reexecutionParams: {parentRunId: $id, strategy: ALL_STEPS}) {
        __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""", {"id": run.run_id})
    assert launched["launchRunReexecution"]["__typename"] == "LaunchRunSuccess", launched
    again = instance.get_run_by_id(launched["launchRunReexecution"]["run"]["runId"])
    assert again.parent_run_id == run.run_id and again.tags["dagster/partition"] == DAY
    assert again.asset_selection == frozenset(DAILY_SELECTION)
    assert again.status.value == "SUCCESS"


def test_an_invalid_catalog_keeps_its_message_assets_and_says_what_is_wrong(tmp_path, monkeypatch):
    catalog = tmp_path / "catalog"
    shutil.copytree(DEMO_DIR / "catalog", catalog)
    settings = Settings(catalog=(catalog,), warehouse=tmp_path / "warehouse")
    valid_defs = build_definitions(settings, analytics=False)
    valid = valid_defs.get_repository_def().asset_graph
    # the catalog's run writes the state the loads read (defs/catalog/state.py); a refresh of the
    # state (here `dagster dev`'s, as the location loads) from an invalid catalog keeps its specs
    assert valid_defs.resolve_job_def("catalake_job").execute_in_process(instance=DagsterInstance.ephemeral()).success
    doc = catalog / "bikeshare.xreg.json"
    doc.write_text(doc.read_text().replace('"envelope": "CloudEvents/1.0"', '"envelope": 42', 1))
    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    graph = build_definitions(settings, analytics=False).get_repository_def().asset_graph
    messages = [k for k in graph.get_all_asset_keys() if k.path[0] == "messages"]
    assert sorted(messages) == sorted(k for k in valid.get_all_asset_keys() if k.path[0] == "messages") and len(messages) == 9
    node = graph.get(ENDED)
    assert node.group_name == "bikeshare_rides" and node.is_materializable
    assert node.description.startswith(f"**The message catalog is invalid: {doc} /messagegroups/bikeshare.rides/envelope")
    assert "RideEnded -> table `bikeshare_rides__rideended`" in node.description  # the last valid definition
    assert str(doc) in node.metadata["catalog_error"]
    assert graph.get(AssetKey("deadletter")).description.startswith("**The message catalog is invalid")


def test_the_readme_reads_map_columns_and_dates_with_their_types(demo_day, monkeypatch):
    """The README's recommended reads, run as written in the demo's folder: maps stay maps (dicts
    in pandas), `event_date` stays a date, in pyarrow, pandas, Polars and DuckDB."""
    import re

    from support.paths import REPO

    settings, _, _, _ = demo_day
    block = re.search(r"<!-- analyst:types -->\n```python\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    monkeypatch.chdir(Path(settings.warehouse).parent)
    namespace: dict = {}
    exec(block, namespace)  # noqa: S102 - the README's own code block
    assert namespace["arrow_types"] == {"kafka_headers": "map<string, string>", "event_date": "date32[day]"}
    frame = namespace["frame"]
    assert len(frame) == 6 and all(isinstance(v, dict) for v in frame["kafka_headers"])
    assert frame["event_date"].dtype.kind == "M" and str(frame["event_date"].iloc[0].date()) == DAY
    assert [str(t) for t in namespace["polars_types"]] == ["List(Struct({'key': String, 'value': String}))", "Date"]
    assert [str(t) for t in namespace["duckdb_types"]] == ["MAP(VARCHAR, VARCHAR)", "DATE"]


def test_a_catalake_run_records_its_job_as_the_ui_loads_it(tmp_path, monkeypatch):
    """`catalake run` launches the code location's own jobs: the UI finds the run's job snapshot
    in the loaded code location, so "Re-execute" carries no warning that the job may differ."""
    import importlib

    import catalake.definitions

    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("CATALAKE_ENGINE", "local")  # the pure Python tier: no JVM
    monkeypatch.chdir(tmp_path)
    try:
        data, run = _launch_and_look(tmp_path)
    finally:
        monkeypatch.undo()
        importlib.reload(catalake.definitions)  # the environment's own definitions again, for other tests
    assert data["runOrError"]["parentPipelineSnapshotId"] == data["pipelineOrError"]["pipelineSnapshotId"]


def _launch_and_look(tmp_path):
    import importlib

    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget

    import catalake.definitions
    from catalake.cli.launching import Launcher

    with instance_for_test() as instance:
        defs = importlib.reload(catalake.definitions).defs  # the code location, as `catalake run` takes it
        launcher = Launcher(defs, instance, from_code_location=True)
        with runs_of_code_location(instance):
            assert launcher.run("catalake_job").success
            run = launcher.run("events_job", DAY, asset_selection=DAILY_SELECTION)
        assert run.success and instance.get_run_by_id(run.run_id).tags["dagster/partition"] == DAY
        origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="catalake.definitions", attribute="defs"),
                                             location_name="catalake")
        with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as process:
            data = _graphql(process.create_request_context(), """query($id: ID!) {
                runOrError(runId: $id) { ... on Run { parentPipelineSnapshotId } }
                pipelineOrError(params: {pipelineName: "events_job", repositoryName: "__repository__",
                                         repositoryLocationName: "catalake"}) { ... on Pipeline { pipelineSnapshotId } } }""",
                            {"id": run.run_id})
    return data, run
