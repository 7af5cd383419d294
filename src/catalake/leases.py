"""A Dagster run's lease: what tells anyone whether the run's process still lives, and the
passing of a run whose process died, so that no day waits for a dead run forever.

A run in progress holds its day: commands wait for it (cli/launching.py), and the queue of
deploy/dagster.yaml holds the day's queued runs behind it. A run whose process is killed
(SIGKILL, the OOM killer, a lost machine) would stay STARTED, and hold its day, forever. So:

* Every run of the code location says who runs it: the tags `catalake/host`, `catalake/pid`
  and `catalake/process` (the process's identity: a pid reused later is not the run's), set
  when its plan starts executing (`leased_in_process_executor`, the location's executor), and a
  heartbeat, the tag `catalake/heartbeat`, rewritten every quarter of the lease while it runs.
  A run launched by a command carries the owner tags from its creation. The heartbeat beats only
  while the plan executes: `add_run_tags` rewrites the run's record, which must not race the
  run's own changes of status (started, ended), made before and after the plan.
* `verdict` judges a run with the engine's one notion of liveness (platform/runs/liveness.py,
  the same the warehouse's run records are judged by): on the owner's host its process is there
  or gone; elsewhere its heartbeat is within the lease (CATALAKE_RUN_LEASE_SECONDS) or not.
* A command that finds a dead run of its day marks it failed, with what was lost, and goes on
  (`pass_dead_runs`); the day's recovery then removes what the run left. With the daemon,
  Dagster's run monitoring asks `LeasedRunLauncher.check_run_worker_health` about each started
  run every `poll_interval_seconds` and marks a dead one failed: the day's queue moves on.
  (Dagster's DefaultRunLauncher cannot tell: it does not check run workers' health at all.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterable, Iterator, Mapping

from dagster import (DagsterEventType, DagsterRunStatus, DefaultRunLauncher, Executor, Field, executor,
                     in_process_executor)

from catalake.platform.runs import liveness

HOST_TAG, PID_TAG, PROCESS_TAG = "catalake/host", "catalake/pid", "catalake/process"
HEARTBEAT_TAG = "catalake/heartbeat"


def owner_tags() -> dict[str, str]:
    """The tags that say this process runs a run, with its first heartbeat."""
    owner = liveness.Owner.current()
    return {HOST_TAG: owner.host, PID_TAG: str(owner.pid), PROCESS_TAG: owner.identity,
            HEARTBEAT_TAG: f"{time.time():.3f}"}


def owner_of(tags: Mapping[str, str]) -> liveness.Owner | None:
    if HOST_TAG not in tags or not tags.get(PID_TAG, "").isdigit():
        return None
    return liveness.Owner(tags[HOST_TAG], int(tags[PID_TAG]), tags.get(PROCESS_TAG, ""))


def verdict(instance, run, lease: float | None = None) -> liveness.Verdict:
    """Whether the process of `run` (in progress) lives. A run that never said which process
    runs it (killed before its plan started) is judged by its last update and the lease."""
    lease = liveness.lease_seconds() if lease is None else lease
    tags = run.tags
    heartbeat = float(tags[HEARTBEAT_TAG]) if tags.get(HEARTBEAT_TAG, "").replace(".", "", 1).isdigit() else None
    since = None
    if owner_of(tags) is None:
        record = instance.get_run_record_by_id(run.run_id)
        since = record.update_timestamp.timestamp() if record is not None else None
    return liveness.judge(owner_of(tags), heartbeat, since, lease=lease)


@contextlib.contextmanager
def leased(instance, run_id: str, lease: float | None = None) -> Iterator[None]:
    """While the block runs, run `run_id` says it is this process's, and beats its heartbeat."""
    lease = liveness.lease_seconds() if lease is None else lease

    def beat(now: float) -> None:
        instance.add_run_tags(run_id, {HEARTBEAT_TAG: f"{now:.3f}"})

    with contextlib.suppress(Exception):  # a run its storage cannot tag still runs: it is judged by its age
        instance.add_run_tags(run_id, owner_tags())
    with liveness.heartbeat(beat, lease / 4):
        yield


def _steps_in_progress(instance, run_id: str) -> list[str]:
    started: dict[str, None] = {}
    ended = set()
    for entry in instance.all_logs(run_id, of_type={DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS,
                                                    DagsterEventType.STEP_FAILURE}):
        if entry.dagster_event.event_type == DagsterEventType.STEP_START:
            started[entry.step_key] = None
        else:
            ended.add(entry.step_key)
    return [step for step in started if step not in ended]


def lost(instance, run, why: liveness.Verdict) -> str:
    """What a dead run lost, for its failure message."""
    steps = _steps_in_progress(instance, run.run_id)
    doing = f"step {', '.join(steps)} was in progress" if steps else "no step had started"
    return (f"The run's process died: {why.reason}. {doing}; its writes were never committed, and the day's next run "
            "removes the files it left.")


def pass_dead_runs(instance, runs, by: str, lease: float | None = None) -> list:
    """Mark each run of `runs` (in progress) whose process is gone failed (canceled, if it was
    being canceled), saying what was lost and who found it; returns them, each with why."""
    passed = []
    for run in runs:
        why = verdict(instance, run, lease)
        if why.alive:
            continue
        message = f"{lost(instance, run, why)} Marked {'canceled' if run.status == DagsterRunStatus.CANCELING else 'failed'} by {by}."
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.status != run.status:  # it ended meanwhile, or another passed it
            continue
        if run.status == DagsterRunStatus.CANCELING:
            instance.report_run_canceled(current, message)
        else:
            instance.report_run_failed(current, message)
        passed.append((current, why.reason))
    return passed


# -- the days a run holds

PARTITION_TAG = "dagster/partition"
RANGE_START_TAG, RANGE_END_TAG = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
BUSY = (DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING)
POLL_SECONDS = 1.0


def days_of(tags: Mapping[str, str]) -> set[str]:
    """The daily partitions a run writes, from its tags: its partition, or every day of its
    range (a backfill's run of several days)."""
    import datetime as dt

    if PARTITION_TAG in tags:
        return {tags[PARTITION_TAG]}
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    try:
        first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    except (TypeError, ValueError):  # no range, or not of days
        return set()
    return {(first + dt.timedelta(days=n)).isoformat() for n in range((last - first).days + 1)}


def runs_in_progress(instance, days: Iterable[str] | None = None, job: str | None = None, before=None) -> list:
    """The runs that are starting, started or being canceled and write one of `days` (or are
    of `job`); with `before` (a run), only those created before it: two runs of one day each
    wait for the older one, never for each other. The queue (deploy/dagster.yaml) holds a day's
    queued runs behind such a run by its `dagster/partition` tag; a backfill's run of a range
    has none, so runs also wait here (wait_for_days)."""
    from dagster import RunsFilter

    days = set(days) if days is not None else None
    records = instance.get_run_records(filters=RunsFilter(job_name=job, statuses=list(BUSY)))
    if before is not None:
        mine = instance.get_run_record_by_id(before.run_id)
        records = [r for r in records if r.dagster_run.run_id != before.run_id
                   and (mine is None or r.create_timestamp < mine.create_timestamp)]
    return [r.dagster_run for r in records if days is None or days & days_of(r.dagster_run.tags)]


def wait_for_days(instance, days: Iterable[str], by: str = "catalake", run=None, say=None) -> None:
    """Return once no other run writing one of `days` is in progress (with `run`: no such run
    created before it). A run whose process is gone is marked failed and passed, saying so; a
    live one is waited for, saying which process it waits for (`say`: stderr by default)."""
    say = say or (lambda line: print(line, file=sys.stderr))
    days = sorted(days)
    span, same = (days[0], "day") if len(days) == 1 else (f"{days[0]} to {days[-1]}", "days")
    named = set()
    while busy := runs_in_progress(instance, days, before=run):
        passed = pass_dead_runs(instance, busy, by)
        for dead, why in passed:
            say(f"{span}: run {dead.run_id} ({dead.job_name}) of the same {same} marked failed: {why}")
        if passed:
            continue
        for other in busy:
            if other.run_id not in named:
                named.add(other.run_id)
                owner = owner_of(other.tags)
                say(f"{span}: waiting for run {other.run_id} ({other.job_name}, {other.status.value}) of the same "
                    f"{same}, {owner.describe() if owner else 'its process not yet known'} (a run whose process "
                    "dies is marked failed and passed)")
        time.sleep(POLL_SECONDS)


class LeasedExecutor(Executor):
    """Dagster's in-process executor, the run's lease held while it executes the plan: every
    run of the code location (a command's, the daemon's, a backfill's) says which process runs
    it and beats its heartbeat."""

    def __init__(self, inner: Executor):
        self._inner = inner

    @property
    def retries(self):
        return self._inner.retries

    @property
    def step_dependency_config(self):
        return self._inner.step_dependency_config

    def execute(self, plan_context, execution_plan):
        with leased(plan_context.instance, plan_context.run_id):
            yield from self._inner.execute(plan_context, execution_plan)


@executor(name="in_process", config_schema=in_process_executor.config_schema)
def leased_in_process_executor(init_context):
    """The in-process executor (one Spark session a run: its steps share the process), leased."""
    return LeasedExecutor(in_process_executor.executor_creation_fn(init_context))


class LeasedRunLauncher(DefaultRunLauncher):
    """Dagster's default run launcher that can tell whether a run's worker lives: with
    `run_monitoring` enabled, the daemon marks a run whose process died failed (within
    `poll_interval_seconds` on the run's host; past the lease elsewhere)."""

    def __init__(self, inst_data=None, lease_seconds: int | None = None):
        super().__init__(inst_data=inst_data)
        self._lease = lease_seconds

    @classmethod
    def config_type(cls):
        return {"lease_seconds": Field(int, is_required=False,
                                       description="How long a run on another host may go without a heartbeat "
                                       "(default CATALAKE_RUN_LEASE_SECONDS, else 120).")}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run):
        # Dagster's private API: the health check's result types have no public export (its
        # own run launchers, dagster-k8s' and dagster-docker's, import them from here too)
        from dagster._core.launcher.base import CheckRunHealthResult, WorkerStatus

        why = verdict(self._instance, run, self._lease)
        if why.alive:
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, lost(self._instance, run, why))


def command(name: str) -> str:
    """Who passed a run, for its failure message: a command and its process."""
    return f"`{name}` (process {os.getpid()}: {' '.join(['catalake', *sys.argv[1:]])[:120]})"
