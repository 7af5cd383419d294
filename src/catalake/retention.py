"""What a year of increments leaves in the Dagster instance, and what of it may go.

Dagster OSS keeps every run and every event forever (it purges only sensor and schedule ticks,
by the instance's `retention` settings: dagster.yaml). A day of increments every 30 s is 2,880
runs, each with its `deadletter` materialization and checks; the day's full run (the nightly
schedule's, or `catalake run`) then materializes every table's day and its checks over the whole
day, and supersedes them: the partition status, each table's rows and checks, the data docs all
come from it. So an increment run of a day that a later full run closed is deleted once it is
older than the retention (`superseded_increments`, `delete_runs`), with its events (Dagster's
`delete_run`); kept are the full runs, the increments of days no full run closed yet, and every
run that did not succeed (someone may need to see why).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable

from dagster import DagsterRunStatus, RunsFilter

from .leases import days_of

INCREMENTAL_TAG = "catalake/incremental"  # as defs/events/assets.py tags an increment's run
KEEP_DAYS = 7.0  # an increment run is kept at least this long (`catalake maintain --runs --keep-days`)


@dataclass
class Retained:
    """What a retention pass found and did."""

    deleted: int  # increment runs deleted (with their events)
    kept_open: int  # increment runs past the retention whose day no full run has closed yet
    days: list[str]  # the days whose increment runs were deleted

    def as_json(self) -> dict:
        return {"deleted": self.deleted, "kept_open": self.kept_open, "days": self.days}


def superseded_increments(instance, job_name: str, older_than: dt.datetime) -> tuple[list, int]:
    """(the successful increment runs of `job_name` created before `older_than` whose day a full
    run that succeeded later has closed, the number of such runs whose day none has)."""
    increments = instance.get_run_records(filters=RunsFilter(
        job_name=job_name, statuses=[DagsterRunStatus.SUCCESS], tags={INCREMENTAL_TAG: "true"},
        created_before=older_than))
    if not increments:
        return [], 0
    oldest = min(r.create_timestamp for r in increments)
    closed: dict[str, dt.datetime] = {}  # day -> its latest full run's creation
    for record in instance.get_run_records(filters=RunsFilter(job_name=job_name, statuses=[DagsterRunStatus.SUCCESS],
                                                              created_after=oldest)):
        if record.dagster_run.tags.get(INCREMENTAL_TAG) == "true":
            continue
        for day in days_of(record.dagster_run.tags):
            closed[day] = max(closed.get(day, record.create_timestamp), record.create_timestamp)
    superseded, open_ = [], 0
    for record in increments:
        days = days_of(record.dagster_run.tags)
        if days and all(day in closed and closed[day] > record.create_timestamp for day in days):
            superseded.append(record.dagster_run)
        else:
            open_ += 1
    return superseded, open_


def delete_runs(instance, job_name: str, keep_days: float = KEEP_DAYS, now: dt.datetime | None = None,
                progress: Callable[[str], None] = lambda message: None) -> Retained:
    """Delete the increment runs of `job_name` older than `keep_days` that a later full run of
    their day superseded (superseded_increments), with their events."""
    now = now or dt.datetime.now(dt.timezone.utc)
    runs, open_ = superseded_increments(instance, job_name, now - dt.timedelta(days=keep_days))
    days = sorted({day for run in runs for day in days_of(run.tags)})
    for run in runs:
        instance.delete_run(run.run_id)
    if runs:
        progress(f"deleted {len(runs)} increment run(s) of {len(days)} day(s) their full runs closed")
    return Retained(len(runs), open_, days)
