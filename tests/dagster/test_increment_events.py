"""What an increment records in Dagster (issue 73): a few events whatever the number of tables it
commits, a late table named within the increment it went late in, and the day's full run still
materializing every table's day."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

from dagster import AssetCheckKey, AssetKey, DagsterEventType, DagsterInstance

DAY = dt.date(2026, 11, 20)
DEFINITIONS = 60
SCHEMA = {"type": "object", "required": ["reading"], "properties": {"reading": {"type": "number", "maximum": 100}}}


def type_name(i: int) -> str:
    return f"bench.sensors.Reading{i}"


def catalog(folder: Path) -> None:
    folder.mkdir(parents=True)
    messages = {type_name(i): {"envelope": "CloudEvents/1.0",
                               "envelopemetadata": {"type": {"value": type_name(i)}},
                               "dataschemaformat": "JsonSchema/draft-07", "dataschema": SCHEMA}
                for i in range(DEFINITIONS)}
    (folder / "bench.xreg.json").write_text(json.dumps(
        {"specversion": "1.0-rc2", "messagegroups": {"bench.sensors": {"messages": messages}}}))


def events(first: int, per_definition: int, too_high: int | None = None) -> str:
    """`per_definition` events of every definition (ids from `first`); one of definition
    `too_high` breaks the schema's maximum (a dead letter, a failed ERROR expectation)."""
    lines = []
    for k in range(per_definition):
        for i in range(DEFINITIONS):
            n = first + k * DEFINITIONS + i
            reading = 500 if (i == too_high and k == 0) else 20
            lines.append(json.dumps({"specversion": "1.0", "id": f"e-{n}", "source": "/s", "type": type_name(i),
                                     "time": f"{DAY}T10:{n % 60:02d}:00Z", "data": {"reading": reading}}))
    return "\n".join(lines) + "\n"


def setup(tmp_path: Path, monkeypatch) -> Path:
    catalog(tmp_path / "catalog")
    landing = tmp_path / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    (tmp_path / "dagster").mkdir()
    for key, value in {"CATALAKE_CATALOG": str(tmp_path / "catalog"), "CATALAKE_LANDING": str(tmp_path / "landing"),
                       "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"), "DAGSTER_HOME": str(tmp_path / "dagster"),
                       "CATALAKE_START_DATE": DAY.isoformat(), "CATALAKE_ENGINE": "local"}.items():
        monkeypatch.setenv(key, value)
    return landing


def run(main, capsys, *flags: str) -> dict:
    assert main(["run", "--date", DAY.isoformat(), *flags, "--json", "--no-analytics"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_an_increment_writes_a_few_events_whatever_the_tables_it_commits(tmp_path, monkeypatch, capsys):
    from catalake.cli import main

    landing = setup(tmp_path, monkeypatch)
    (landing / "a.jsonl").write_text(events(0, 1))
    assert run(main, capsys, "--incremental")["kind"] == "full"  # the day's first run: every table's day
    (landing / "b.jsonl").write_text(events(1000, 2, too_high=7))
    increment = run(main, capsys, "--incremental")
    assert increment["kind"] == "incremental" and increment["tables_fed"] == DEFINITIONS
    assert increment["rows_to_tables"] == 2 * DEFINITIONS - 1 and len(increment["tables"]) == 20  # the most rows

    with DagsterInstance.get() as instance:
        full_run, increment_run = instance.get_runs()[1], instance.get_runs()[0]
        logged = instance.all_logs(increment_run.run_id)
        assert len(logged) <= 50, [e.dagster_event.event_type_value if e.dagster_event else e.message for e in logged]
        materialized = [e.dagster_event.event_specific_data.materialization.asset_key for e in logged
                        if e.dagster_event and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION]
        assert materialized == [AssetKey("deadletter")]
        dead = instance.get_latest_materialization_event(AssetKey("deadletter")).asset_materialization.metadata
        assert dead["tables_fed"].value == DEFINITIONS and dead["rows_added_to_tables"].value == 2 * DEFINITIONS - 1
        # the table whose expectation failed in the increment: its check, of the increment's run
        broken = AssetKey(["messages", "bench.sensors", type_name(7)])
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(broken, "expectations"), AssetCheckKey(AssetKey(["messages", "bench.sensors", type_name(8)]),
                                                                 "expectations")])
        by_table = {k.asset_key: v for k, v in checks.items()}
        assert by_table[broken].run_id == increment_run.run_id and by_table[broken].status.value == "FAILED"
        assert by_table[AssetKey(["messages", "bench.sensors", type_name(8)])].run_id == full_run.run_id
        conservation = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "conservation")])
        assert list(conservation.values())[0].status.value == "SUCCEEDED"
        # the tables' days still hold every row: the full run of the day, after the increments, materializes each
    closing = run(main, capsys, "--full")
    assert sum(closing["tables"].values()) == 3 * DEFINITIONS - 1
    with DagsterInstance.get() as instance:
        last = instance.get_runs()[0]
        materialized = {e.dagster_event.event_specific_data.materialization.asset_key for e in instance.all_logs(last.run_id)
                        if e.dagster_event and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION}
        assert len(materialized) == DEFINITIONS + 1


def test_a_table_late_in_an_increment_is_named_by_an_observation_and_the_freshness_check(tmp_path, monkeypatch,
                                                                                      capsys):
    from catalake.cli import main

    landing = setup(tmp_path, monkeypatch)
    monkeypatch.setenv("CATALAKE_FRESHNESS_SECONDS", "60")
    (landing / "a.jsonl").write_text(events(0, 1))
    run(main, capsys, "--incremental")
    (landing / "b.jsonl").write_text(events(1000, 1))
    landed = time.time() - 120  # landed two minutes ago: past the 60-s target when it is committed
    os.utime(landing / "b.jsonl", (landed, landed))
    increment = run(main, capsys, "--incremental", "--cadence")
    assert increment["kind"] == "incremental"
    with DagsterInstance.get() as instance:
        increment_run = instance.get_runs()[0]
        observed = [e for e in instance.all_logs(increment_run.run_id, of_type=DagsterEventType.ASSET_OBSERVATION)]
        assert 0 < len(observed) <= 20  # the stalest tables, each by name, at most 20 an increment
        first = observed[0].dagster_event.event_specific_data.asset_observation
        assert first.asset_key.path[:2] == ["messages", "bench.sensors"]
        assert first.metadata["freshness"].value == "stale" and first.metadata["committed_lag_seconds"].value >= 60
        freshness = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "freshness")])
        evaluation = list(freshness.values())[0]
        assert evaluation.run_id == increment_run.run_id and evaluation.status.value == "FAILED"
        assert evaluation.event.dagster_event.event_specific_data.metadata["stale_tables"].value == DEFINITIONS


def test_catalake_maintain_runs_deletes_the_increments_a_full_run_closed_and_keeps_the_day_right(tmp_path, monkeypatch,
                                                                                                 capsys):
    from catalake.cli import main

    landing = setup(tmp_path, monkeypatch)
    (landing / "a.jsonl").write_text(events(0, 1))
    run(main, capsys, "--incremental")  # the day's first run: a full run
    for n, first in enumerate((1000, 2000)):
        (landing / f"b{n}.jsonl").write_text(events(first, 1))
        assert run(main, capsys, "--incremental")["kind"] == "incremental"
    run(main, capsys, "--full")  # the nightly run closes the day
    (landing / "c.jsonl").write_text(events(3000, 1))
    assert run(main, capsys, "--incremental")["kind"] == "incremental"  # after the close: still open
    with DagsterInstance.get() as instance:
        before = {r.run_id: r.tags.get("catalake/incremental") for r in instance.get_runs() if r.job_name == "events_job"}
    assert list(before.values()).count("true") == 4  # the first run was tagged as an increment too

    assert main(["maintain", "--runs", "--keep-days", "0", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["runs"]
    assert (said["deleted"], said["kept_open"], said["days"]) == (3, 1, [DAY.isoformat()])
    with DagsterInstance.get() as instance:
        left = [r for r in instance.get_runs() if r.job_name == "events_job"]
        assert [r.tags.get("catalake/incremental") for r in left] == ["true", None]  # the open increment, the close
        # the day is still materialized, for every table and the dead letters, with its checks
        keys = [AssetKey("deadletter"), *(AssetKey(["messages", "bench.sensors", type_name(i)]) for i in (0, 59))]
        for key in keys:
            assert DAY.isoformat() in instance.get_materialized_partitions(key), key
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(keys[1], "expectations"), AssetCheckKey(AssetKey("deadletter"), "conservation")])
        assert {v.status.value for v in checks.values()} == {"SUCCEEDED"}
    assert main(["maintain", "--runs", "--keep-days", "0"]) == 0
    assert "deleted 0 increment run(s)" in capsys.readouterr().out
