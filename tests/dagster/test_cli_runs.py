"""`catalake replay` and `catalake validate` as Dagster runs: recorded in the instance, started only
once the day's run in progress has ended, a replay a materialization of each table it changed, a
validation an `expectations` check evaluation of each table, tied to the materialization it checks.
The commands run as a person runs them: in a process of their own, on DAGSTER_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from dagster import AssetCheckKey, AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus, RunsFilter

from catalake.component import build_definitions
from catalake.platform.config import DEMO_DIR, Settings

pytestmark = pytest.mark.spark

DAY = "2026-11-20"
PAYMENTS = AssetKey(["messages", "bikeshare.payments", "bikeshare.payments.PaymentCaptured"])
DEADLETTER = AssetKey("deadletter")


def _catalake(args: list[str], env: dict, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "catalake.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _done(process, timeout: float = 600) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"{out}\n{err[-4000:]}"
    return out + err


def _runs(instance, command: str) -> list:
    return list(instance.get_runs(filters=RunsFilter(tags={"catalake/launched_by": command})))


def test_replay_and_validate_are_runs_that_queue_behind_the_day(tmp_path, monkeypatch):
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    document = json.loads((DEMO_DIR / "catalog" / "bikeshare.xreg.json").read_text())
    payments = document["messagegroups"].pop("bikeshare.payments")  # its records: no_match, until it is back
    (catalog / "bikeshare.xreg.json").write_text(json.dumps(document))
    (catalog / "schemas.xreg.json").write_text((DEMO_DIR / "catalog" / "schemas.xreg.json").read_text())
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_"))}
    env.update(DAGSTER_HOME=str(home), CATALAKE_CATALOG=str(catalog), CATALAKE_WAREHOUSE=str(tmp_path / "warehouse"),
               CATALAKE_START_DATE="2026-11-01", CATALAKE_SPARK_MASTER="local[2]")
    _done(_catalake(["run", "--date", DAY, "--no-analytics"], {**env, "CATALAKE_ENGINE": "local"}), 300)

    document["messagegroups"]["bikeshare.payments"] = payments
    (catalog / "bikeshare.xreg.json").write_text(json.dumps(document))
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # its dagster.yaml (catalake's) names it
    with DagsterInstance.get() as instance:
        # a run of the same day in progress (a backfill's, the sensor's): the replay waits for it
        events_job = build_definitions(Settings.from_env(env), analytics=False).resolve_job_def("events_job")
        other = instance.create_run_for_job(events_job, status=DagsterRunStatus.STARTED,
                                            tags={"dagster/partition": DAY})
        replay = _catalake(["replay", "--from", DAY, "--to", DAY], env)
        time.sleep(20)
        assert replay.poll() is None and _runs(instance, "catalake replay") == []  # still waiting, no run yet
        ended = time.time()
        instance.report_run_canceled(other)
        out = _done(replay)
        assert f"waiting for run {other.run_id} (events_job, STARTED) of the same day" in out
        [run] = _runs(instance, "catalake replay")
        assert run.job_name == "replay_job" and run.status == DagsterRunStatus.SUCCESS
        assert run.tags["dagster/partition"] == DAY
        assert instance.get_run_record_by_id(run.run_id).start_time >= ended

        # a replay is a materialization of each table it changed, rows moved in its metadata
        moved = instance.fetch_materializations(AssetRecordsFilter(asset_key=PAYMENTS, asset_partitions=[DAY]), limit=1)
        [record] = moved.records
        metadata = record.asset_materialization.metadata
        assert record.run_id == run.run_id and metadata["run_kind"].value == "replay"
        assert metadata["rows_moved_in"].value > 0
        assert metadata["dagster/partition_row_count"].value == metadata["rows_moved_in"].value
        [dead] = instance.fetch_materializations(AssetRecordsFilter(asset_key=DEADLETTER, asset_partitions=[DAY]),
                                                 limit=1).records
        assert dead.run_id == run.run_id and dead.asset_materialization.metadata["rows_moved_out"].value == \
            metadata["rows_moved_in"].value

        # a validation: one run, an `expectations` evaluation per stored table, tied to what stored its rows
        out = _done(_catalake(["validate", "--date", DAY], env))
        assert "bikeshare_payments__paymentcaptured" in out
        [check_run] = _runs(instance, "catalake validate")
        assert check_run.job_name == "validate_job" and check_run.tags["dagster/partition"] == DAY
        [execution] = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(PAYMENTS, "expectations"), limit=1)
        assert execution.run_id == check_run.run_id
        evaluation = execution.event.dagster_event.event_specific_data
        assert evaluation.partition == DAY and evaluation.metadata["evaluated_by"].value.startswith("GX")
        assert evaluation.target_materialization_data.storage_id == record.storage_id
        assert evaluation.metadata["rows_stored"].value == metadata["rows_moved_in"].value
