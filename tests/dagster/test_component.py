"""catalake inside a team's own Dagster project: `CatalakeComponent` instances, each with its own
prefix, jobs, schedules, sensors and resources, one Spark resource between them; and a real `dg`
project with two of them, scaffolded, checked, listed and run a day each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, Definitions, EnvVar
from deltalake import DeltaTable

from catalake.component import CatalakeComponent
from catalake.platform.config import Settings
from catalake.platform.errors import SettingsError
from support.classify import DAY, land_azure

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_attributes_left_out_are_the_environments_settings(tmp_path):
    env = Settings.from_env({"CATALAKE_WAREHOUSE": str(tmp_path / "env-wh"), "CATALAKE_OWNERS": "team:data",
                             "CATALAKE_SPARK_CONF": "spark.sql.shuffle.partitions=4"})
    folder = tmp_path / "defs" / "payments"
    component = CatalakeComponent(key_prefix="payments", catalog=["catalog", "more/x.xreg.json"],
                                  warehouse="s3://lake/payments", spark_conf={"spark.driver.memory": "2g"})
    settings = component.settings(folder, env)
    assert settings.catalog == ((folder / "catalog").resolve(), (folder / "more" / "x.xreg.json").resolve())
    assert settings.warehouse == "s3://lake/payments"
    assert settings.landing == env.landing and settings.owners == ("team:data",)
    assert dict(settings.spark_conf) == {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g"}
    # on object storage each prefix keeps its suites, GX docs and dbt project in a folder of its own
    assert settings.local == Path(".catalake").absolute() / "payments"
    assert settings.dbt_dir == settings.local / "dbt" / "payments"
    bare = CatalakeComponent().settings(folder, env)
    assert bare == env  # no attribute: the code location of today, unchanged


def test_two_instances_give_disjoint_definitions_sharing_one_spark_resource(tmp_path):
    landing, catalog = land_azure(SHARED, tmp_path / "storage")
    bikes = CatalakeComponent(key_prefix="bikes", warehouse=str(tmp_path / "wh-bikes"), start_date="2026-11-20",
                              analytics=False)
    storage = CatalakeComponent(key_prefix=["team", "storage"], catalog=str(catalog), landing=str(landing),
                                warehouse=str(tmp_path / "wh-storage"), start_date="2026-11-20",
                                group_name="storage", analytics=False)
    one, two = bikes.definitions(tmp_path), storage.definitions(tmp_path)
    defs = Definitions.merge(one, two)  # Dagster refuses two resources under one key unless they are one object
    assert one.resources["spark"] is two.resources["spark"]
    keys = {k.to_user_string() for k in defs.resolve_all_asset_keys()}
    bike_keys = {k for k in keys if k.startswith("bikes/")}
    storage_keys = {k for k in keys if k.startswith("team/storage/")}
    assert bike_keys | storage_keys == keys
    assert {"bikes/message_catalog", "bikes/deadletter", "bikes/messages/bikeshare.rides/bikeshare.rides.RideStarted"} <= bike_keys
    assert "team/storage/messages/Microsoft.Storage/Microsoft.Storage.BlobCreated" in storage_keys
    assert {s.group_name for s in defs.resolve_all_asset_specs() if s.key.path[0] == "team"} == {"storage"}
    jobs = {j.name for j in defs.get_repository_def().get_all_jobs()} - {"__ASSET_JOB"}
    assert jobs == {f"{p}_{j}" for p in ("bikes", "team_storage")
                    for j in ("catalake_job", "events_job", "validate_job", "replay_job", "maintenance_job",
                              "checkpoint_job")}
    assert {s.name for s in defs.schedules} == {f"{p}_{s}" for p in ("bikes", "team_storage")
                                                for s in ("daily_events_schedule", "maintenance_schedule")}
    assert {s.name for s in defs.sensors} == {f"{p}_{s}" for p in ("bikes", "team_storage")
                                              for s in ("landing_sensor", "compaction_sensor", "catalog_state_sensor")}
    assert set(defs.resources) == {"spark", *(f"{p}_{r}" for p in ("bikes", "team_storage")
                                              for r in ("warehouse", "catalog_source", "landing"))}
    assert defs.resources["team_storage_landing"].path == str(landing)
    # each events job selects its own instance's tables only
    events = defs.resolve_job_def("team_storage_events_job")
    assert {k.path[0] for k in events.asset_layer.executable_asset_keys} == {"team"}


def _run(args: list[str], project: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done


@pytest.mark.project
def test_a_dg_project_with_two_catalogs(tmp_path):
    """The README's "Use catalake in your Dagster project": `dg scaffold defs` twice, one instance
    on the bundled demo (its state in the instance's versioned state storage) and one on the real
    Azure Storage catalog and its blob events (its state on the local filesystem, not refreshed by
    `dg`'s loads: `refresh_if_dev: false`); `dg utils refresh-defs-state` writes each instance's
    state; a load then writes nothing; `dg check defs` and `dg list defs` see both under their
    prefixes; `dg launch` materializes each catalog and one day of each, into its own warehouse;
    the storage catalog, edited before its catalog run, has its state refreshed by that run."""
    project = tmp_path / "teams"
    (project / "src" / "teams" / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "teams"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n\n'
        '[tool.dg]\ndirectory_type = "project"\n\n[tool.dg.project]\nroot_module = "teams"\n')
    (project / "src" / "teams" / "__init__.py").write_text("")
    (project / "src" / "teams" / "defs" / "__init__.py").write_text("")
    (project / "src" / "teams" / "definitions.py").write_text(
        "from pathlib import Path\n\nimport dagster as dg\n\n\n@dg.definitions\ndef defs():\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n")
    landing, shared_catalog = land_azure(SHARED, tmp_path / "storage")
    catalog = tmp_path / "storage" / shared_catalog.name  # a test-time copy: the test edits it
    shutil.copy(shared_catalog, catalog)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(project / "src"),
               DAGSTER_HOME=str(tmp_path / "home"), CATALAKE_ENGINE="local", NO_COLOR="1")
    (tmp_path / "home").mkdir()
    dg = str(Path(sys.executable).parent / "dg")

    for name in ("bikes", "storage"):
        _run([dg, "scaffold", "defs", "catalake.CatalakeComponent", name], project, env)
    scaffolded = (project / "src" / "teams" / "defs" / "bikes" / "defs.yaml").read_text()
    assert "type: catalake.CatalakeComponent" in scaffolded and "key_prefix: bikes" in scaffolded
    assert 'warehouse: "{{ project_root }}/warehouse/bikes"' in scaffolded
    bikes_yaml = project / "src" / "teams" / "defs" / "bikes" / "defs.yaml"
    bikes_yaml.write_text(bikes_yaml.read_text() + "  defs_state:\n    management_type: VERSIONED_STATE_STORAGE\n")
    storage_yaml = project / "src" / "teams" / "defs" / "storage" / "defs.yaml"
    storage_yaml.write_text(storage_yaml.read_text().replace(
        "  # catalog:", f"  catalog: {catalog}\n  landing: {landing}\n  start_date: '{DAY}'\n"
        "  defs_state:\n    management_type: LOCAL_FILESYSTEM\n    refresh_if_dev: false\n  # catalog:"))

    _run([dg, "utils", "refresh-defs-state"], project, env)
    local_state = project / "src" / "teams" / "defs" / ".local_defs_state" / "CatalakeComponent__storage__" / "state"
    state = json.loads(local_state.read_text())
    assert state["first_day"] is None and len(state["specs"]) == 10  # storage: its start_date; its 10 definitions
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        versioned = instance.defs_state_storage.get_latest_version("CatalakeComponent[bikes]")
        assert versioned is not None  # bikes: uploaded to the instance's state storage
    def files() -> dict:  # the project's, and the states in the instance's storage (not its databases)
        return {p: p.stat().st_mtime_ns for p in [*project.rglob("*"), *(tmp_path / "home").rglob("defs_state/**/*")]}

    before = files()
    assert any("defs_state" in str(p) for p in before)
    load = ("import dagster as dg, teams.definitions as d\nwith dg.DagsterInstance.get():\n"
            "    print(len(list(d.defs().resolve_all_asset_keys())))")  # as a code server loads: the instance's storage
    loaded = subprocess.run([sys.executable, "-c", load], cwd=project, env=env, capture_output=True, text=True, check=True)
    assert int(loaded.stdout.split()[-1]) > 20 and "no state for this code location" not in loaded.stderr
    assert files() == before  # the load wrote nothing

    _run([dg, "check", "defs"], project, env)
    listed = json.loads(_run([dg, "list", "defs", "--json"], project, env).stdout)
    keys = {a["asset_key"] for a in listed["assets"]}
    assert {"bikes/message_catalog", "storage/message_catalog", "bikes/deadletter", "storage/deadletter",
            "storage/messages/Microsoft.Storage/Microsoft.Storage.BlobCreated",
            "bikes/messages/bikeshare.rides/bikeshare.rides.RideStarted"} <= keys
    assert all(k.split("/")[0] in ("bikes", "storage") for k in keys)
    assert {j["name"] for j in listed["jobs"]} >= {"bikes_events_job", "storage_events_job"}
    assert {r["name"] for r in listed["resources"]} >= {"spark", "bikes_warehouse", "storage_warehouse"}

    catalog.write_text(catalog.read_text() + "\n")  # the storage catalog changes after its state was written
    for prefix in ("bikes", "storage"):
        _run([dg, "launch", "--job", f"{prefix}_catalake_job"], project, env)
        _run([dg, "launch", "--assets", f'key:"{prefix}/deadletter"', "--partition", DAY.isoformat()], project, env)
    refreshed = json.loads(local_state.read_text())
    assert refreshed["digest"] != state["digest"] and refreshed["catalog_files"] != state["catalog_files"]

    warehouse = project / "warehouse"
    def rows(prefix: str) -> dict[str, int]:
        return {p.name: DeltaTable(str(p)).to_pyarrow_table().num_rows for p in (warehouse / prefix / "messages").iterdir()}

    storage_rows = rows("storage")
    assert storage_rows["microsoft_storage__blobcreated"] == 1 and storage_rows["microsoft_storage__blobdeleted"] == 1
    assert sum(storage_rows.values()) == 2
    bike_rows = rows("bikes")
    assert bike_rows and sum(bike_rows.values()) > 0 and not set(bike_rows) & set(storage_rows)
    deadletters = DeltaTable(str(warehouse / "bikes" / "deadletter")).to_pyarrow_table().num_rows

    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        for prefix in ("bikes", "storage"):  # every record read is in one table of its instance
            deadletter = instance.get_latest_materialization_event(AssetKey([prefix, "deadletter"]))
            assert deadletter is not None and deadletter.dagster_event.partition == DAY.isoformat()
            assert deadletter.asset_materialization.metadata["records_read"].value == (
                2 if prefix == "storage" else sum(bike_rows.values()) + deadletters)
        kept = {prefix: instance.get_latest_materialization_event(AssetKey([prefix, "message_catalog"]))
                .asset_materialization.metadata["state"].value for prefix in ("bikes", "storage")}
        # `dg launch` runs in a process Dagster gives no state storage: its load reads the catalog, and
        # the catalog run uploads its state as a version of the instance's state storage
        assert kept["bikes"].startswith("refreshed: VERSIONED_STATE_STORAGE, version ")
        version = kept["bikes"].rsplit(" ", 1)[-1]
        assert (tmp_path / "home" / "defs_state" / "CatalakeComponent__bikes__" / version).is_file()
        assert kept["storage"].startswith("refreshed: LOCAL_FILESYSTEM, version")
        blob = instance.get_latest_materialization_event(
            AssetKey(["storage", "messages", "Microsoft.Storage", "Microsoft.Storage.BlobCreated"]))
        assert blob.asset_materialization.metadata["dagster/partition_row_count"].value == 1


def test_a_warehouse_named_by_an_environment_variable_is_resolved_when_the_run_starts(tmp_path, monkeypatch):
    """`warehouse: {env: NAME}` in a defs.yaml: the resource's field is an EnvVar, which Dagster
    resolves when the run starts (here, to another folder than when the location loaded)."""
    component = CatalakeComponent.resolve_from_yaml(
        'key_prefix: lake\nwarehouse: {env: CATALAKE_TEST_LAKE}\nstart_date: "2026-11-20"\nanalytics: false\n')
    monkeypatch.setenv("CATALAKE_ENGINE", "local")
    monkeypatch.setenv("CATALAKE_TEST_LAKE", str(tmp_path / "at-load"))
    defs = component.definitions(tmp_path)
    assert isinstance(defs.resources["lake_warehouse"].path, EnvVar)
    monkeypatch.setenv("CATALAKE_TEST_LAKE", str(tmp_path / "at-run"))
    run = defs.resolve_job_def("lake_catalake_job").execute_in_process(instance=DagsterInstance.ephemeral())
    assert run.success
    assert DeltaTable.is_deltatable(str(tmp_path / "at-run" / "catalog" / "messages"))
    assert not (tmp_path / "at-load" / "catalog" / "messages").exists()
    monkeypatch.delenv("CATALAKE_TEST_LAKE")
    with pytest.raises(SettingsError, match="warehouse: the environment variable CATALAKE_TEST_LAKE it names is not set"):
        component.definitions(tmp_path)


def test_the_dg_component_and_the_bundled_location_load_the_same_definitions(tmp_path):
    from dagster.components.testing import create_defs_folder_sandbox

    from catalake.component import build_definitions
    from catalake.defs.catalog.state import NoStateWarning

    warehouse = str(tmp_path / "wh")
    with pytest.warns(NoStateWarning):
        bundled = build_definitions(Settings(warehouse=warehouse), analytics=False)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(CatalakeComponent, defs_yaml_contents={
            "type": "catalake.CatalakeComponent", "attributes": {"warehouse": warehouse, "analytics": False}})
        with pytest.warns(NoStateWarning), sandbox.load_component_and_build_defs(defs_path=path) as (_, component):
            assert {k.to_user_string() for k in component.resolve_all_asset_keys()} == {
                k.to_user_string() for k in bundled.resolve_all_asset_keys()}
            assert "messages/bikeshare.rides/bikeshare.rides.RideStarted" in {
                k.to_user_string() for k in component.resolve_all_asset_keys()}
            jobs = {j.name for j in component.get_repository_def().get_all_jobs()}
            assert jobs == {j.name for j in bundled.get_repository_def().get_all_jobs()}
            assert {s.name for s in component.sensors} == {s.name for s in bundled.sensors}
