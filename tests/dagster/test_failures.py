"""defs/failures.py: an error a person can fix fails a Dagster step with its one line, as the
command line prints it, and is not retried."""

from catalake.component import build_definitions
from catalake.platform.config import Settings
from dagster import DagsterInstance
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
