"""Dagster runs launched by the command line (`catalake run`, `replay`, `validate`): runs of the
code location's own jobs, recorded in the instance, that wait for any run of the same day.

A run launched here does not go through the instance's run queue (the command waits for its
result); what the queue guarantees, one run per day at a time (deploy/dagster.yaml), it keeps by
waiting for the day's runs in progress before it starts, and while it runs the queue holds the
day's queued runs behind it (the queue counts every run in progress with the day's tag). A run
of the day whose process died is not waited for: it is marked failed and passed (leases.py)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


class Launcher:
    """Runs of the definitions' jobs in this process. With a persistent instance and the
    code location's own definitions, through Dagster's `execute_job` of its reconstructable
    job: the run records the job as the UI loads it, so "Re-execute" finds the same job snapshot,
    and it executes with the code location's executor, which holds the run's lease (leases.py);
    otherwise `execute_in_process` (the UI then warns that the loaded job may differ). A run of
    a day first waits for the day's runs in progress."""

    def __init__(self, defs, instance, from_code_location: bool, console: str | None = None):
        self.defs, self.instance = defs, instance
        self.from_code_location = from_code_location and instance.is_persistent
        self.console = console  # the runs' console log level (progress.py); None: Dagster's default

    def reload(self) -> None:
        """The code location loaded again, as the UI's "Reload" does: after a catalog run, with
        the dbt models its `dbt_project` parsed (a load reads them, it does not prepare them)."""
        module = sys.modules.get("catalake.definitions")
        if module is not None and self.defs is module.defs:
            self.defs = _code_location_defs()

    def run(self, job: str, partition: str | None = None, tags: dict | None = None, asset_selection=None,
            run_config: dict | None = None, last: str | None = None):
        """A run of `job`, of `partition` or of the range of days `partition` to `last` (one run
        of a backfill's range), once no run of those days is in progress."""
        from catalake.leases import (HEARTBEAT_TAG, RANGE_END_TAG, RANGE_START_TAG, command, days_of, owner_tags,
                                     pass_dead_runs, runs_in_progress, wait_for_days)

        by = command((tags or {}).get("catalake/launched_by", "catalake"))
        if last is not None and last != partition:
            tags = {**(tags or {}), RANGE_START_TAG: partition, RANGE_END_TAG: last}
            wait_for_days(self.instance, days_of(tags), by=by)
            partition = None
        elif partition is not None:
            wait_for_days(self.instance, [partition], by=by)
        else:  # a run of no day (the catalog's) waits for nothing, but a dead one is not left STARTED
            pass_dead_runs(self.instance, runs_in_progress(self.instance, job=self.defs.resolve_job_def(job).name), by)
        tags = {**(tags or {}), **owner_tags()}  # this process runs it: known before its plan starts
        if self.console is not None:
            from .progress import console_config

            run_config = {**(run_config or {}), **console_config(self.console)}
        if not self.from_code_location:
            # Dagster's execute_in_process runs its own executor, which beats no heartbeat: none to go
            # stale (the run is judged by its process on this host; elsewhere it is taken to live)
            tags = {k: v for k, v in tags.items() if k != HEARTBEAT_TAG}
            return self.defs.resolve_job_def(job).execute_in_process(
                instance=self.instance, raise_on_error=False, partition_key=partition, tags=tags,
                asset_selection=asset_selection, run_config=run_config)
        from dagster import build_reconstructable_job, execute_job

        from catalake.instance import CODE_MODULE

        job_def = self.defs.resolve_job_def(job)
        if partition is not None:
            tags = {**tags, **job_def.get_tags_for_partition_key(partition, selected_asset_keys=asset_selection)}
        reconstructable = build_reconstructable_job(CODE_MODULE, "job_of_code_location", reconstructable_args=(job,),
                                                    reconstructor_working_directory=os.getcwd())
        return execute_job(reconstructable, self.instance, tags=tags, raise_on_error=False,
                           asset_selection=asset_selection, run_config=run_config)


def check_catalog(context) -> None:
    """A catalog that cannot be used fails before any run, in one line naming its first problem."""
    from catalake.platform.catalog import CatalogError

    from .usage import UsageError

    try:
        _ = context.tables  # reading the tables reads and checks the catalog
    except CatalogError as exc:
        first = str(exc.problems[0]) if exc.problems else str(exc)
        raise UsageError(f"invalid message catalog ({len(exc.problems)} problem(s); `catalake catalog validate "
                         f"{' '.join(map(str, context.settings.catalog))}` lists them): {first}") from None


def failure(run) -> str:
    """Why a run failed, on one line: its step's innermost error (Dagster wraps it in its own)."""
    from catalake.platform import uris

    errors = [e.step_failure_data.error for e in run.get_step_failure_events() if e.step_failure_data.error]
    if not errors:
        return "see the Dagster UI"
    error = errors[0]
    while error.cause is not None:
        error = error.cause
    lines = [line for line in error.message.strip().splitlines() if line.strip()]
    return uris.redact(lines[-1] if lines else error.cls_name or "error")


def command_tags(command: str) -> dict[str, str]:
    """What the UI shows of where a run came from: launched in this process, not by the daemon."""
    return {"catalake/launched_by": command, "catalake/command": " ".join(["catalake", *sys.argv[1:]])[:200]}


@contextmanager
def launcher(context, code_location: bool | None = None, console: str | None = None):
    """The instance (DAGSTER_HOME, else in memory) and a Launcher of the code location's jobs.
    `code_location`: run the jobs of the code location itself (`catalake.definitions`, with the dbt
    analytics; their runs re-executable from the UI); False: of definitions built here without
    the analytics; None: the code location's when the instance is persistent. `console`: the
    runs' console log level."""
    import warnings

    from catalake.component import build_definitions
    from catalake.defs.catalog.state import NoStateWarning
    from catalake.instance import dagster_instance, runs_of_code_location

    instance = dagster_instance()
    if code_location is None:
        code_location = instance.is_persistent
    with warnings.catch_warnings():
        # the command's first run is the catalog's, which writes the state: nothing to tell the user
        warnings.simplefilter("ignore", NoStateWarning)
        if code_location:
            defs = _code_location_defs()
        else:
            defs = build_definitions(configured=context.configured, analytics=False)
    with runs_of_code_location(instance):  # the UI can re-execute them
        yield Launcher(defs, instance, from_code_location=code_location, console=console), instance


def _code_location_defs():
    """The code location's definitions as the environment says now: loaded, or loaded again when
    this process loaded it before (a program that calls `main` more than once, with other settings)."""
    import importlib

    module = sys.modules.get("catalake.definitions")
    return importlib.reload(module).defs if module is not None else importlib.import_module("catalake.definitions").defs
