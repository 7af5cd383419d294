"""Fresh tables: incremental runs of a day read only what landed since the last run,
append it exactly once, and leave the tables a full run of the final day gives.

Days run in local processes (no JVM) into real Delta tables, read back with delta-rs."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from catalake.demo.generate import day_records
from catalake.platform.catalog import load_catalog
from catalake.platform.runs import ledger as increments
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.paths import DEMO_CATALOG, REPO
from support.runs import landed_through_dagster, no_spark

DAY = dt.date(2026, 11, 21)



@pytest.fixture(scope="module")
def demo():
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    return catalog, tables


def lines(records) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r, separators=(",", ":")) for r in records]


def store_for(path: Path, tables) -> DeltaStore:
    store = DeltaStore(no_spark, path, "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    return store


def increment(store, demo, landing: Path):
    catalog, tables = demo
    result = classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)
    ok, counts = conservation(store, tables, DAY, result.records_of_day, result.stored)
    assert ok, counts
    return result


def hashes(store: DeltaStore, tables) -> dict[str, list[str]]:
    """Per table, the sorted hashes of the day's rows, `ingested_at` left out."""
    out = {}
    for name in [t.name for t in tables] + [DEADLETTER_TABLE]:
        if not store.exists(name):
            continue
        rows = DeltaTable(store.path(name)).to_pyarrow_table().drop_columns(["ingested_at"]).to_pylist()
        out[name] = sorted(hashlib.sha256(json.dumps(r, sort_keys=True, default=str).encode()).hexdigest()
                           for r in rows if r["event_date"] == DAY)
    return {k: v for k, v in out.items() if v}


def test_a_day_landing_in_five_steps_equals_one_full_run(tmp_path, demo):
    """New files, a file that grows, a last line landed half and completed later, a new file in
    a subfolder: after each step an increment; at the end the tables of one full run."""
    _, tables = demo
    files = day_records(DAY, 12)
    http, kafka = lines(files["rides-http.jsonl"]), lines(files["rides-kafka.jsonl"])
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    store = store_for(tmp_path / "warehouse", tables)
    kinds = []

    (folder / "rides-http.jsonl").write_text("\n".join(http[:10]) + "\n")  # 1: a first file
    (folder / "battery-batch.json").write_text(json.dumps(files["battery-batch.json"]))
    first = increment(store, demo, tmp_path / "landing")
    kinds.append((first.kind, first.fallback))
    assert first.records == 10 + len(files["battery-batch.json"])

    with open(folder / "rides-http.jsonl", "a") as f:  # 2: it grows; a new file
        f.write("\n".join(http[10:20]) + "\n")
    (folder / "rides-kafka.jsonl").write_text("\n".join(kafka) + "\n")
    second = increment(store, demo, tmp_path / "landing")
    kinds.append((second.kind, second.fallback))
    assert second.records == 10 + len(kafka) and second.read["files"] == 2

    half = http[20][: len(http[20]) // 2]  # 3: a line landed half
    with open(folder / "rides-http.jsonl", "a") as f:
        f.write(half)
    third = increment(store, demo, tmp_path / "landing")
    kinds.append((third.kind, third.fallback))
    assert third.records == 0 and not third.fallback  # nothing complete landed: nothing read

    with open(folder / "rides-http.jsonl", "a") as f:  # 4: the line completed, more lines
        f.write(http[20][len(half):] + "\n" + "\n".join(http[21:]) + "\n")
    with gzip.open(folder / "docks-mqtt.jsonl.gz", "wt") as f:
        f.write("\n".join(lines(files["docks-mqtt.jsonl.gz"])) + "\n")
    fourth = increment(store, demo, tmp_path / "landing")
    kinds.append((fourth.kind, fourth.fallback))
    assert fourth.records == len(http) - 20 + len(files["docks-mqtt.jsonl.gz"])

    (folder / "late").mkdir()  # 5: a file in a subfolder
    (folder / "late" / "more.jsonl").write_text("\n".join(http[:3]) + "\n")
    fifth = increment(store, demo, tmp_path / "landing")
    kinds.append((fifth.kind, fifth.fallback))
    assert fifth.records == 3
    assert kinds == [("full", "no run of the day is recorded")] + [("incremental", None)] * 4
    assert increment(store, demo, tmp_path / "landing").records == 0  # nothing new: nothing appended

    # the quality results are the day's: merged over the increments, as a full run counts them
    full_store = store_for(tmp_path / "full", tables)
    catalog, _ = demo
    full = classify_partition(no_spark, full_store, tables, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)
    assert hashes(store, tables) == hashes(full_store, tables)
    assert fifth.records_of_day == full.records
    ended = "messages/bikeshare_rides__rideended"
    assert [(r.success, r.element_count, r.unexpected_count) for r in fifth.quality[ended].results] == \
        [(r.success, r.element_count, r.unexpected_count) for r in full.quality[ended].results]


def test_a_file_changed_otherwise_gets_a_full_run(tmp_path, demo):
    _, tables = demo
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    http = lines(day_records(DAY, 12)["rides-http.jsonl"])
    (folder / "a.jsonl").write_text("\n".join(http[:10]) + "\n")
    store = store_for(tmp_path / "warehouse", tables)
    increment(store, demo, tmp_path / "landing")
    (folder / "a.jsonl").write_text("\n".join(reversed(http[:12])) + "\n")  # rewritten, not appended
    result = increment(store, demo, tmp_path / "landing")
    assert result.kind == "full" and "changed within the" in result.fallback and result.records == 12
    os.remove(folder / "a.jsonl")
    result = increment(store, demo, tmp_path / "landing")
    assert result.kind == "full" and "gone now" in result.fallback and result.records == 0


def recorded_then_grown(tmp_path: Path, demo) -> tuple:
    """(store, the day's records, the HTTP lines): a first run of the day over 5 lines, then the
    file grown by the rest and a new file landed."""
    _, tables = demo
    files = day_records(DAY, 12)
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    http = lines(files["rides-http.jsonl"])
    (folder / "rides-http.jsonl").write_text("\n".join(http[:5]) + "\n")
    store = store_for(tmp_path / "warehouse", tables)
    increment(store, demo, tmp_path / "landing")
    with open(folder / "rides-http.jsonl", "a") as f:
        f.write("\n".join(http[5:]) + "\n")
    (folder / "rides-kafka.jsonl").write_text("\n".join(lines(files["rides-kafka.jsonl"])) + "\n")
    return store, files, http


KILLED = """
import os, sys, datetime as dt
from catalake.platform.warehouse import store as storage
from catalake.platform.catalog import load_catalog
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.message_tables import message_tables

real, calls = storage.DeltaStore.append_partition, []
def append_then_die(self, *args, **kwargs):  # the process is killed right after its first append
    version = real(self, *args, **kwargs)
    os._exit(137)
storage.DeltaStore.append_partition = append_then_die

catalog = load_catalog([sys.argv[1]])
tables, _ = message_tables(catalog, [sys.argv[1]])
store = storage.DeltaStore(lambda: None, sys.argv[2], "delta-rs", master="local[2]")
classify_increment(lambda: None, store, tables, sys.argv[3], dt.date(2026, 11, 21), local_bytes=1 << 30)
"""


def test_a_killed_increment_is_finished_by_the_next_run_without_duplicates_or_orphans(tmp_path, demo):
    _, tables = demo
    store, files, http = recorded_then_grown(tmp_path, demo)
    killed = subprocess.run([sys.executable, "-c", KILLED, str(DEMO_CATALOG), str(tmp_path / "warehouse"),
                             str(tmp_path / "landing")], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert killed.returncode == 137, killed.stderr[-2000:]
    ledger = increments.load(store.location, DAY)
    assert [i["done"] for i in ledger["increments"]] == [True, False]  # stopped between its commits

    finished = increment(store, demo, tmp_path / "landing")
    assert finished.kind == "incremental" and finished.records == len(http) - 5 + len(files["rides-kafka.jsonl"])
    assert increment(store, demo, tmp_path / "landing").records == 0
    full_store = store_for(tmp_path / "full", tables)
    catalog, _ = demo
    classify_partition(no_spark, full_store, tables, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)
    assert hashes(store, tables) == hashes(full_store, tables)
    assert_no_orphans(store, tables)


def assert_no_orphans(store: DeltaStore, tables) -> None:
    """Every Parquet file in a partition folder of the day is one the table's log holds."""
    for name in hashes(store, tables):
        live = {os.path.basename(u) for u in DeltaTable(store.path(name)).file_uris()}
        found = {p.name for p in Path(store.path(name)).glob(f"event_date={DAY}/*.parquet")}
        assert found == live, name


def test_catalake_run_incremental_through_dagster(tmp_path, monkeypatch, capsys):
    """`catalake run --incremental`: the run is tagged, its `deadletter` materialization says what
    was added to the tables, the conservation check counts the whole day."""
    from dagster import DagsterInstance

    from catalake.cli import main

    files = day_records(DAY, 12)
    http = lines(files["rides-http.jsonl"])
    folder = landed_through_dagster(tmp_path, monkeypatch, DAY, http[:10])
    assert main(["run", "--date", DAY.isoformat(), "--incremental", "--json", "--no-analytics"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (first["kind"], first["fallback"], first["records"]) == ("full", "no run of the day is recorded", 10)
    with open(folder / "rides-http.jsonl", "a") as f:
        f.write("\n".join(http[10:]) + "\n")
    assert main(["run", "--date", DAY.isoformat(), "--incremental", "--json", "--no-analytics"]) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (second["kind"], second["records"], second["records_of_day"]) == ("incremental", len(http) - 10, len(http))
    assert second["read"]["files"] == 1 and second["read"]["bytes"] > 0

    from dagster import AssetCheckKey, AssetKey

    with DagsterInstance.get() as instance:
        dead = instance.get_latest_materialization_event(AssetKey("deadletter")).asset_materialization.metadata
        assert dead["run_kind"].value == "incremental" and dead["records_read_day"].value == len(http)
        assert dead["rows_added_to_tables"].value == sum(second["tables"].values()) > 0
        assert dead["tables_fed"].value == second["tables_fed"] == sum(1 for n in second["tables"].values() if n)
        runs = instance.get_runs()
        assert runs[0].tags.get("catalake/incremental") == "true" and runs[0].tags["catalake/launched_by"] == "catalake run"
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "conservation")])
        assert list(check.values())[0].status.value == "SUCCEEDED"


def test_a_clean_increment_reports_its_deadletter_materialization_and_checks(tmp_path, monkeypatch, capsys):
    """The usual increment, a clean producer's: nothing dead-lettered, the run exits 0, and the
    day's `deadletter` materialization (0 rows added) and its conservation check are there."""
    from dagster import AssetCheckKey, AssetKey, DagsterInstance

    from catalake.cli import main

    http = lines(day_records(DAY, 12)["rides-http.jsonl"])
    folder = tmp_path / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "rides-http.jsonl").write_text("\n".join(http) + "\n")
    for key, value in {"CATALAKE_LANDING": str(tmp_path / "landing"), "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"),
                       "DAGSTER_HOME": str(tmp_path / "dagster"), "CATALAKE_START_DATE": "2026-11-20",
                       "CATALAKE_ENGINE": "local"}.items():  # the pure Python tier: no JVM
        monkeypatch.setenv(key, value)
    (tmp_path / "dagster").mkdir()
    assert main(["run", "--date", DAY.isoformat(), "--json", "--no-analytics"]) == 0
    capsys.readouterr()
    dead = DeltaTable(str(tmp_path / "warehouse" / DEADLETTER_TABLE)).to_pyarrow_table().to_pylist()
    broken = {r["source_line"] for r in dead}
    clean = [line for n, line in enumerate(http, 1) if n not in broken][:3]
    assert len(clean) == 3
    (folder / "more.jsonl").write_text("\n".join(clean) + "\n")  # the same clean records, landed again

    assert main(["run", "--date", DAY.isoformat(), "--incremental", "--json", "--no-analytics"]) == 0
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (second["kind"], second["records"], second["deadletter"]) == ("incremental", 3, {})
    with DagsterInstance.get() as instance:
        latest = instance.get_latest_materialization_event(AssetKey("deadletter"))
        assert latest.run_id == instance.get_runs()[0].run_id  # the increment's own run reported it
        metadata = latest.asset_materialization.metadata
        assert metadata["run_kind"].value == "incremental" and metadata["rows_added"].value == 0
        assert metadata["engine"].value == second["engine"] == "local"
        assert metadata["records_read"].value == 3 and metadata["records_read_day"].value == len(http) + 3
        checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "conservation"), AssetCheckKey(AssetKey("deadletter"), "landing")])
        assert {k.name: v.status.value for k, v in checks.items()} == {"conservation": "SUCCEEDED", "landing": "SUCCEEDED"}
        assert all(v.run_id == latest.run_id for v in checks.values())


def test_two_increments_of_one_day_at_once_commit_each_range_once(tmp_path, demo):
    """Two runs plan the same new range: per table one append takes it (Delta's application
    transaction; the other's append is refused as a conflict or seen as done) and its copy of
    the rows is removed."""
    import threading

    catalog, tables = demo
    store, files, http = recorded_then_grown(tmp_path, demo)
    errors = []

    def run():
        try:
            classify_increment(no_spark, DeltaStore(no_spark, tmp_path / "warehouse", "delta-rs", master="local[2]"),
                               tables, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    full_store = store_for(tmp_path / "full", tables)
    classify_partition(no_spark, full_store, tables, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)
    assert hashes(store, tables) == hashes(full_store, tables)
    assert_no_orphans(store, tables)
