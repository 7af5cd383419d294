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


def landed_through_dagster(tmp_path: Path, monkeypatch, day: dt.date, lines: list[str]) -> Path:
    """A landing whose `day` holds `lines` in one JSON lines file, and the environment of
    `catalake run` over it (warehouse, DAGSTER_HOME) under `tmp_path`: the day's landing folder."""
    folder = tmp_path / "landing" / day.isoformat()
    folder.mkdir(parents=True)
    (folder / "rides-http.jsonl").write_text("\n".join(lines) + "\n")
    for key, value in {"CATALAKE_LANDING": str(tmp_path / "landing"), "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"),
                       "DAGSTER_HOME": str(tmp_path / "dagster"), "CATALAKE_START_DATE": "2026-11-20"}.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "dagster").mkdir()
    return folder
