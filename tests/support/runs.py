"""What the tests of runs share: a Spark session factory that must not be called, and a plan."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from catalake.platform.runs.plan import Plan
from catalake.platform.uris import Location


def no_spark():
    """The `spark` of a run that must not start Spark: small days and increments run in local
    processes, and delta-rs commits without a session."""
    raise AssertionError("this run must not start Spark")


def plan_for(tables, warehouse: Path | str, day: dt.date, run: str = "t", ingested_at: dt.datetime | None = None) -> Plan:
    """A partition run's plan over `tables` (in catalog order), as the driver makes one."""
    return Plan(tuple(tables), Location.of(warehouse), day, ingested_at or dt.datetime.now(dt.timezone.utc), run)
