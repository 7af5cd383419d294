"""Freshness as Dagster users see it (issue 65): increments on a cadence stage what is not due,
say so in the `deadletter` materialization and in `conservation`; each table committed shows
its lag, `deadletter`'s `freshness` check the run's; the landing sensor asks for a run when a
staged table comes due, and for `checkpoint_job` when a table is due a checkpoint."""

from __future__ import annotations

import datetime as dt
import json
import os
import time

from dagster import AssetCheckKey, AssetKey, DagsterInstance, build_sensor_context

from catalake.demo.generate import day_records
from catalake.platform.runs import ledger
from catalake.platform.uris import Location
from support.runs import landed_through_dagster

DAY = dt.date(2026, 11, 21)


def lines(records) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r, separators=(",", ":")) for r in records]


def run_json(main, capsys, *flags: str) -> dict:
    assert main(["run", "--date", DAY.isoformat(), *flags, "--json", "--no-analytics"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_cadenced_increment_stages_reports_and_the_next_commits_with_a_freshness_check(tmp_path, monkeypatch, capsys):
    from catalake.cli import main

    http = lines(day_records(DAY, 12)["rides-http.jsonl"])
    landing = landed_through_dagster(tmp_path, monkeypatch, DAY, http[:10])
    assert run_json(main, capsys, "--incremental")["kind"] == "full"

    (landing / "more.jsonl").write_text("\n".join(http[10:]) + "\n")
    landed = time.time() - 5
    os.utime(landing / "more.jsonl", (landed, landed))
    staged = run_json(main, capsys, "--incremental", "--cadence")  # 5 s old: none due within 60 s
    assert staged["kind"] == "incremental" and staged["records"] == len(http) - 10 and staged["tables"] == {}
    with DagsterInstance.get() as instance:
        dead = instance.get_latest_materialization_event(AssetKey("deadletter")).asset_materialization.metadata
        assert dead["tables_committed"].value == 0 and dead["rows_staged"].value == len(http) - 10
        assert 5 <= dead["max_lag_seconds"].value < 60 and dead["stale_tables"].value == 0
        conservation = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "conservation")])
        assert list(conservation.values())[0].status.value == "SUCCEEDED"
    assert ledger.next_due(Location.of(str(tmp_path / "warehouse")), DAY) < landed + 60

    committed = run_json(main, capsys, "--incremental")  # asked for by hand: everything staged is committed
    assert committed["records"] == 0 and sum(committed["tables"].values()) == 0
    with DagsterInstance.get() as instance:
        # the increment's `deadletter` materialization says its lags in brief; its `freshness`
        # check lists the tables with theirs (a table of its own gets an event only when it is
        # late: test_increment_events.py)
        dead = instance.get_latest_materialization_event(AssetKey("deadletter"))
        assert dead.run_id == instance.get_runs()[0].run_id
        brief = dead.asset_materialization.metadata
        assert "lag_by_table" not in brief and 5 <= brief["max_lag_seconds"].value < 60
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "freshness")])
        evaluation = list(checks.values())[0]
        assert evaluation.status.value == "SUCCEEDED" and evaluation.run_id == dead.run_id
        metadata = evaluation.event.dagster_event.event_specific_data.metadata
        assert metadata["stale_tables"].value == 0 and metadata["tables_staged"].value == 0
        assert 5 <= metadata["max_lag_seconds"].value < 60
        lags = metadata["lag_by_table"].value
        started = next(line for line in lags.splitlines() if line.startswith("| bikeshare_rides__ridestarted |"))
        lag, committed, target = (float(cell) for cell in started.split("|")[2:5])
        assert lag == 0.0 and 5 <= committed < 60 and target == 60.0


def test_the_landing_sensor_asks_for_a_run_when_a_staged_table_comes_due(tmp_path):
    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    (tmp_path / "landing" / DAY.isoformat()).mkdir(parents=True)
    (tmp_path / "landing" / DAY.isoformat() / "a.jsonl").write_text("{}\n")
    settings = Settings.from_env({"CATALAKE_LANDING": str(tmp_path / "landing"), "CATALAKE_WAREHOUSE": str(tmp_path / "w"),
                                  "CATALAKE_START_DATE": "2026-11-20"})
    definitions = build_definitions(settings, analytics=False)
    sensor = definitions.get_sensor_def("landing_sensor")
    root = Location.of(str(tmp_path / "w"))

    def evaluate(cursor: str | None):
        with DagsterInstance.ephemeral() as instance:
            return sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=definitions))

    first = evaluate(None)  # the day appeared: an increment on the cadence
    assert [r.tags["catalake/cadence"] for r in first.run_requests] == ["true"]
    cursor = first.cursor
    assert evaluate(cursor).run_requests == []  # nothing changed, nothing staged
    ledger.save(root, DAY, {"day": DAY.isoformat(), "epoch": "e", "increments": [], "next_due": time.time() + 300})
    assert evaluate(cursor).run_requests == []  # staged, not due yet
    due = time.time() - 1
    ledger.save(root, DAY, {"day": DAY.isoformat(), "epoch": "e", "increments": [], "next_due": due})
    requests = evaluate(cursor).run_requests
    assert [(r.partition_key, r.run_key, r.tags["catalake/incremental"]) for r in requests] == \
        [(DAY.isoformat(), f"{DAY.isoformat()}:due:{due:.3f}", "true")]

    # a table the increments committed to a checkpoint interval past its last checkpoint: a checkpoint run
    tip = {"version": 150, "tag": "x", "schema": "s", "rows": 1, "files": 1, "checkpoint_interval": 100}
    ledger.save(root, DAY, {"day": DAY.isoformat(), "epoch": "e", "increments": [], "tips": {"messages/t": tip}})
    asked = evaluate(None).run_requests
    assert [r.job_name for r in asked] == ["events_job", "checkpoint_job"]
    assert evaluate(json.dumps({**json.loads(cursor), "checkpoints_checked": time.time()})).run_requests == []
