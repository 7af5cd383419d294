"""defs/failures.py: an error a person can fix fails a Dagster step with its one line, as the
command line prints it, and is not retried."""

import json

from dagster import DagsterInstance, materialize

from catalake.component import build_definitions
from catalake.defs.quality.assets import expectation_suites
from catalake.platform.config import Settings
from catalake.resources import CatalogSource, Warehouse
from support.paths import DEMO_CATALOG


def test_a_landing_no_filesystem_opens_fails_the_step_with_its_line(tmp_path):
    settings = Settings(catalog=(DEMO_CATALOG,), landing="bogus://bucket/landing", warehouse=str(tmp_path / "warehouse"),
                        engine="local", start_date="2026-11-20")
    job = build_definitions(settings, analytics=False).resolve_job_def("events_job")
    run = job.execute_in_process(instance=DagsterInstance.ephemeral(), partition_key="2026-11-20", raise_on_error=False)
    assert not run.success
    (failure,) = [e for e in run.all_events if e.is_step_failure]
    data = failure.step_failure_data
    assert data.user_failure_data is not None  # a Failure: Dagster shows its description, not a traceback
    assert data.user_failure_data.description.startswith("no filesystem for bogus://")


def dangling_catalog(folder):
    """A catalog whose one definition names a base message that is not there."""
    folder.mkdir()
    (folder / "x.xreg.json").write_text(json.dumps({"messagegroups": {"g": {"messages": {
        "m": {"envelope": "CloudEvents/1.0", "basemessage": "/nope"}}}}}))
    return folder


def test_an_error_a_person_can_fix_reads_in_the_event_log_as_on_the_command_line(tmp_path, capsys):
    """A CatalogError raised in a step (expectation_suites reads the catalog) is the failed step's
    Failure in the run's event log: its description is the text `catalake` prints after
    `catalake: `, the problems are its metadata, and it is not retried."""
    from catalake.cli import main

    catalog = dangling_catalog(tmp_path / "catalog")
    assert main(["schema", "show", "m", "--catalog", str(catalog)]) == 2
    printed = capsys.readouterr().err
    assert printed.startswith("catalake: invalid message catalog (1 problem(s)):") and "[basemessage-dangling]" in printed

    instance = DagsterInstance.ephemeral()
    result = materialize([expectation_suites], instance=instance, raise_on_error=False, resources={
        "catalog_source": CatalogSource(paths=[str(catalog)]), "warehouse": Warehouse(path=str(tmp_path / "wh"))})
    assert not result.success
    (failure,) = [e.dagster_event for e in instance.all_logs(result.run_id)
                  if e.dagster_event is not None and e.dagster_event.is_step_failure]
    told = failure.step_failure_data.user_failure_data
    assert f"catalake: {told.description}\n" == printed
    assert "basemessage-dangling" in told.metadata["problems"].value  # the problems as a table beside it
    assert failure.step_failure_data.error.cls_name == "Failure"  # not a traceback of the CatalogError
    assert not [e for e in instance.all_logs(result.run_id) if e.dagster_event and e.dagster_event.is_step_up_for_retry]
