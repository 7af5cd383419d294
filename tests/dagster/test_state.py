"""The code location's state (defs/catalog/state.py): a catalog edited after the state was made is
flagged in the UI (the catalog asset's description, the `state_current` check through the sensor
and through a run), and the next catalog run refreshes the state, after which a reload is current."""

import shutil

from dagster import AssetCheckSeverity, AssetKey, DagsterInstance, build_sensor_context

from catalake.component import build_definitions
from catalake.defs.catalog.state import read_state
from catalake.platform.config import Settings
from support.paths import DEMO_CATALOG

CATALOG = AssetKey("message_catalog")


def _tick(defs, instance, cursor=None):
    sensor = defs.get_sensor_def("catalog_state_sensor")
    return sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs))


def _run_catalog(defs, instance):
    run = defs.resolve_job_def("catalake_job").execute_in_process(instance=instance)
    assert run.success
    (catalog,) = run.asset_materializations_for_node("message_catalog")
    (check,) = run.get_asset_check_evaluations()
    return catalog.metadata["state"].value, check


def test_an_edited_catalog_is_flagged_and_the_next_catalog_run_refreshes_the_state(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI", raising=False)
    catalog = tmp_path / "catalog"
    shutil.copytree(DEMO_CATALOG, catalog)
    settings = Settings(catalog=(catalog,), warehouse=tmp_path / "wh", landing=tmp_path / "landing",
                        start_date="2026-11-20")
    instance = DagsterInstance.ephemeral()
    state_path = tmp_path / "wh" / "catalog" / "state.json"

    refreshed, check = _run_catalog(build_definitions(settings, analytics=False), instance)
    assert refreshed == f"written to {state_path}" and check.passed  # built from the catalog as it is
    written = read_state(state_path)
    defs = build_definitions(settings, analytics=False)
    current = _tick(defs, instance)
    (evaluation,) = current.asset_events
    assert evaluation.check_name == "state_current" and evaluation.passed
    assert _tick(defs, instance, current.cursor).skip_message  # nothing changed since: nothing reported
    again, check = _run_catalog(defs, instance)
    assert again == "current: the code location loaded this state" and check.passed
    assert read_state(state_path) == written  # not rewritten

    doc = catalog / "bikeshare.xreg.json"
    doc.write_text(doc.read_text().replace('"description": "', '"description": "Edited: ', 1))
    stale = build_definitions(settings, analytics=False)  # a reload before any catalog run
    node = stale.get_repository_def().asset_graph.get(CATALOG)
    assert node.description.startswith("**The catalog changed since this code location's state was made** (" + str(doc))
    flagged = _tick(stale, instance, current.cursor)
    (evaluation,) = flagged.asset_events
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    assert str(doc) in evaluation.description and "reload the code location" in evaluation.description
    assert evaluation.metadata["changed_files"].data == [str(doc)]

    refreshed, check = _run_catalog(stale, instance)  # the next catalog run refreshes the state ...
    assert refreshed == f"written to {state_path}"
    assert not check.passed and check.severity == AssetCheckSeverity.WARN  # ... this location still shows the old one
    assert read_state(state_path).catalog_files != written.catalog_files
    reloaded = build_definitions(settings, analytics=False)
    assert not reloaded.get_repository_def().asset_graph.get(CATALOG).description.startswith("**The catalog changed")
    cleared = _tick(reloaded, instance, flagged.cursor)
    (evaluation,) = cleared.asset_events
    assert evaluation.passed and _tick(reloaded, instance, cleared.cursor).skip_message


def test_a_state_write_killed_midway_leaves_the_old_state_and_its_leftover_goes_with_the_next(tmp_path):
    import os
    import time

    from catalake.defs.catalog.state import ABANDONED_SECONDS, DefsState, write_state

    path = tmp_path / "catalog" / "state.json"
    old = DefsState(made_for="x", catalog_files=[], catalog_fingerprint=None, specs=[], deadletter={}).sealed()
    write_state(path, old)
    killed = path.parent / "state.json.abc123.tmp"  # a writer killed before its rename: half a document
    killed.write_bytes(b'{"made_for": "x", "spe')
    assert read_state(path) == old  # loads read the state it replaced, whole
    recent = path.parent / "state.json.def456.tmp"  # a writer still at work
    recent.write_bytes(b"{")
    os.utime(killed, (time.time() - ABANDONED_SECONDS - 1,) * 2)
    new = DefsState(made_for="y", catalog_files=[], catalog_fingerprint=None, specs=[], deadletter={}).sealed()
    write_state(path, new)
    assert read_state(path) == new and not killed.exists() and recent.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json", "state.json.def456.tmp"]
