"""A backfill of many days is a few runs (issue 62): a range of days classified in one pass and
committed once per table ends with exactly the tables per-day runs give; a range run killed with
SIGKILL midway, then run again, ends equal too; the runs of overlapping days wait for each
other; and the generator's ride ids never repeat across days."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from catalake.demo.generate import day_records, write_day
from catalake.platform.config import DEMO_DIR
from support.tables import table_hashes

FIRST = dt.date(2026, 10, 1)
DAYS = [FIRST + dt.timedelta(days=n) for n in range(4)]


def land(folder: Path, rides: int = 40) -> Path:
    for day in DAYS:
        write_day(folder, day, rides)
    return folder


def demo_tables():
    from catalake.platform.catalog import load_catalog
    from catalake.platform.warehouse.message_tables import message_tables

    return message_tables(load_catalog([DEMO_DIR / "catalog"]), [DEMO_DIR / "catalog"])[0]


def local_store(root: Path):
    from catalake.platform.warehouse.store import DeltaStore

    def no_spark():
        raise AssertionError("a local run started Spark")

    return DeltaStore(no_spark, root, backend="delta-rs", master="local[2]")


def test_a_range_of_days_in_one_pass_equals_a_run_a_day(tmp_path):
    from catalake.platform.runs.day import classify_days, classify_partition, conservation

    landing, tables = land(tmp_path / "landing"), demo_tables()
    ranged, daily = local_store(tmp_path / "ranged"), local_store(tmp_path / "daily")
    results = classify_days(None, ranged, tables, str(landing), DAYS, local_bytes=1 << 40)
    for day in DAYS:
        classify_partition(None, daily, tables, str(landing), day, local_bytes=1 << 40)
    assert table_hashes(tmp_path / "ranged") == table_hashes(tmp_path / "daily")
    assert sorted(results) == DAYS
    for day, result in results.items():  # each day keeps its own counts, partition and proof
        assert result.partition == day.isoformat() and result.records > 0
        ok, counts = conservation(ranged, tables, day, result.records, result.stored)
        assert ok and counts["rows_stored"] == result.records
    # one commit per table for the whole range: every table's log has its creation and that one
    for name in ["deadletter", *(t.name for t in tables if t.name in results[FIRST].written)]:
        history = DeltaTable(str(tmp_path / "ranged" / name)).history()
        assert len([h for h in history if h.get("operation") != "CREATE TABLE"]) == 1, name
    # run again, over part of the range: idempotent, the same tables as the days run one by one
    classify_days(None, ranged, tables, str(landing), DAYS[1:3], local_bytes=1 << 40)
    assert table_hashes(tmp_path / "ranged") == table_hashes(tmp_path / "daily")
    assert not list((tmp_path / "ranged" / "_catalake" / "runs").glob("*.json"))


@pytest.mark.repeated
def test_a_range_run_killed_mid_way_then_rerun_ends_equal_to_runs_a_day(tmp_path):
    """kill -9 of `catalake run --from --to` once its files appear in the tables' partitions
    and before its commits: the next run of the range (or of any of its days) removes what it
    left in every day of the range, and ends with the tables per-day runs give."""
    landing = land(tmp_path / "landing", rides=400)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_"))}
    env.update(CATALAKE_LANDING=str(landing), CATALAKE_ENGINE="local", CATALAKE_START_DATE=FIRST.isoformat())
    span = ["--from", DAYS[0].isoformat(), "--to", DAYS[-1].isoformat(), "--no-analytics", "--json"]

    def run(warehouse: Path, *args: str, **popen) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "catalake.cli", "run", *args],
                                env={**env, "CATALAKE_WAREHOUSE": str(warehouse)}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **popen)

    daily = tmp_path / "daily"
    for day in DAYS:
        done = run(daily, "--date", day.isoformat(), "--no-analytics")
        assert done.wait(300) == 0, done.stderr.read()

    killed = tmp_path / "killed"
    process = run(killed, *span, start_new_session=True)
    deadline = time.monotonic() + 240
    while not list(killed.glob("**/event_date=*/part-*.parquet")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed while writing"
    records = list((killed / "_catalake" / "runs").glob("*.json"))
    assert records and len(json.loads(records[0].read_text())["days"]) == len(DAYS), "the killed run's record"

    rerun = run(killed, *span)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err[-3000:]
    assert "whose process is gone (of its 4 days)" in err  # a recovery notice: shown at WARNING
    # the person sees the range and its step; Dagster's event stream stays in the run's logs
    assert f"[1/1] {DAYS[0]} to {DAYS[-1]}: classifying 4 day(s)" in err and " - DEBUG - " not in err
    assert "BetaWarning" not in err
    assert [json.loads(line)["partition"] for line in out.splitlines()] == [d.isoformat() for d in DAYS]
    assert table_hashes(killed) == table_hashes(daily)
    committed = {Path(os.path.normpath(u)) for log in killed.glob("**/_delta_log")
                 for u in DeltaTable(str(log.parent)).file_uris()}
    assert set(killed.glob("**/event_date=*/part-*.parquet")) <= committed, "a file of the killed run was left"
    assert not list((killed / "_catalake" / "runs").glob("*.json"))


def test_runs_of_overlapping_days_wait_for_the_older_one(tmp_path, monkeypatch):
    """A backfill's run of a range has no `dagster/partition` tag for the queue to hold a day's
    runs by: runs_in_progress finds it for each of its days, and a run waits only for runs of
    its days created before it (never both for each other)."""
    from dagster import DagsterInstance, DagsterRun, DagsterRunStatus

    from catalake.leases import RANGE_END_TAG, RANGE_START_TAG, days_of, runs_in_progress

    instance = DagsterInstance.ephemeral()

    def started(tags: dict):
        run = instance.add_run(DagsterRun(job_name="events_job", tags=tags, status=DagsterRunStatus.STARTED))
        time.sleep(0.01)  # creation times apart
        return run

    backfill = started({RANGE_START_TAG: "2026-10-01", RANGE_END_TAG: "2026-10-31"})
    day = started({"dagster/partition": "2026-10-15"})
    other = started({"dagster/partition": "2026-11-02"})
    assert days_of(backfill.tags) == {f"2026-10-{n:02d}" for n in range(1, 32)}
    assert {r.run_id for r in runs_in_progress(instance, ["2026-10-15"])} == {backfill.run_id, day.run_id}
    assert {r.run_id for r in runs_in_progress(instance, ["2026-11-02"])} == {other.run_id}
    assert [r.run_id for r in runs_in_progress(instance, days_of(day.tags), before=day)] == [backfill.run_id]
    assert runs_in_progress(instance, days_of(backfill.tags), before=backfill) == []


def test_ride_ids_never_repeat_across_days_at_any_number_of_rides():
    import re

    for rides in (12, 1000, 1001, 2500):
        seen: set[str] = set()
        for day in (FIRST, FIRST + dt.timedelta(days=1), FIRST + dt.timedelta(days=364)):
            ids = {r["data"]["ride_id"] for r in day_records(day, rides)["rides-http.jsonl"]
                   if isinstance(r, dict) and r.get("type") == "bikeshare.payments.PaymentCaptured"}
            assert len(ids) == rides and not ids & seen, (rides, day)
            assert all(re.fullmatch(r"R-[0-9]{6,}", i) for i in ids)
            seen |= ids
