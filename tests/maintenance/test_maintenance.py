"""A year of days: files per table-partition bounded by the target size, compaction of
a day of increments, vacuum of what no version inside retention needs, and both safe beside the
day's other runs. Days run in local processes (no JVM) into real Delta tables, read back with
delta-rs; every check compares row hashes and the day's conservation."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pytest
from deltalake import DeltaTable

from catalake.platform.catalog import load_catalog
from catalake.platform.maintenance import compact_day, vacuum_warehouse
from catalake.platform.runs import recovery
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.commit import commit_statistics
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.files import PARTITION_COLUMN, PartFile, WrittenFile
from catalake.platform.warehouse.merging import file_bound, merge_groups
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.queries import warehouse_tables
from catalake.platform.warehouse.statistics import STATS_COLUMNS_PROPERTY
from catalake.platform.warehouse.store import DeltaStore
from support.paths import DEMO_DIR
from support.runs import no_spark
from support.tables import table_hashes

DAY = dt.date(2026, 11, 20)
DEMO_DAY = DEMO_DIR / "landing" / DAY.isoformat()
TARGET = 128 << 20



@pytest.fixture(scope="module")
def demo():
    catalog = load_catalog([DEMO_DIR / "catalog"])
    tables, _ = message_tables(catalog, [DEMO_DIR / "catalog"])
    return catalog, tables


def store_for(path: Path, tables) -> DeltaStore:
    store = DeltaStore(no_spark, path, "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    return store


def names(store: DeltaStore) -> list[str]:
    return [t for t in warehouse_tables(store.root).values() if t != "catalog/messages"]


def partition_files(store: DeltaStore) -> dict[str, list[PartFile]]:
    return {n: store.partition_files(n, PARTITION_COLUMN, DAY) for n in names(store)
            if store.partition_files(n, PARTITION_COLUMN, DAY)}


def parquet_on_disk(store: DeltaStore) -> tuple[int, int]:
    """Parquet files under the warehouse's tables, and their bytes."""
    files = [p for p in Path(store.root).rglob("*.parquet") if "_delta_log" not in p.parts]
    return len(files), sum(p.stat().st_size for p in files)


def land_in_pieces(landing: Path, pieces: int) -> list[Path]:
    """The demo day's files, the JSON lines ones cut into `pieces` files each (landed later)."""
    folder = landing / DAY.isoformat()
    folder.mkdir(parents=True)
    later = []
    for source in sorted(DEMO_DAY.iterdir()):
        if source.suffix != ".jsonl":
            shutil.copy(source, folder / source.name)
            continue
        lines = source.read_text().splitlines(keepends=True)
        size = math.ceil(len(lines) / pieces)
        later += [(folder / f"{source.stem}-{i}.jsonl", "".join(lines[i * size:(i + 1) * size])) for i in range(pieces)]
    return later


def a_day_of_increments(tmp_path: Path, demo, pieces: int = 5) -> DeltaStore:
    catalog, tables = demo
    store = store_for(tmp_path / "warehouse", tables)
    landing = tmp_path / "landing"
    for path, text in land_in_pieces(landing, pieces):
        path.write_text(text)
        result = classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)
        assert conservation(store, tables, DAY, result.records_of_day)[0]
    return store


def test_merge_groups_bound_the_files_and_keep_large_files_and_order():
    files = [PartFile(f"f{i}", size, 10) for i, size in enumerate([5, 300, 7, 9, 120, 3, 1, 200])]
    groups = merge_groups(files, target=100)
    merged = {f.path for g in groups for f in g}
    assert "f1" not in merged and "f7" not in merged and "f4" not in merged  # at or above the target: kept
    after = len(files) - len(merged) + len(groups)
    assert after <= file_bound(sum(f.size for f in files), 100)
    assert all([f.path for f in g] == sorted((f.path for f in g), key=lambda p: int(p[1:])) for g in groups)
    assert merge_groups(files[:1], 100) == [] and merge_groups([PartFile("a", 50, 1), PartFile("b", 60, 1)], 100) == []


def test_a_full_run_writes_at_most_one_file_per_target_bytes_per_table(tmp_path, demo):
    catalog, tables = demo
    for target in (TARGET, 4096):
        store = store_for(tmp_path / str(target), tables)
        result = classify_partition(no_spark, store, tables, str(DEMO_DIR / "landing"), DAY,
                                    local_bytes=1 << 30, target_file_bytes=target)
        assert conservation(store, tables, DAY, result.records, result.stored)[0]
        for name, files in partition_files(store).items():
            assert len(files) <= file_bound(sum(f.size for f in files), target), (target, name, files)
        assert parquet_on_disk(store)[0] == sum(len(f) for f in partition_files(store).values())  # merged-from: gone
    assert table_hashes(tmp_path / str(TARGET)) == table_hashes(tmp_path / "4096")


def test_a_day_of_increments_compacted_then_vacuumed_holds_the_same_rows_in_bounded_files(tmp_path, demo):
    catalog, tables = demo
    store = a_day_of_increments(tmp_path, demo)
    before = table_hashes(store.root)
    many = {n: len(f) for n, f in partition_files(store).items()}
    assert max(many.values()) >= 4  # the first piece a full run, then a file per increment and table
    compactions = compact_day(None, store, names(store), DAY, target=TARGET)
    assert {c.table for c in compactions} == {n for n, count in many.items() if count > 1}
    assert all(c.skipped is None and c.files_after == 1 and c.files_before == many[c.table] for c in compactions)
    for files in partition_files(store).values():
        assert len(files) <= file_bound(sum(f.size for f in files), TARGET)
    assert table_hashes(store.root) == before
    records = sum(r for r in (store.partition_rows(n, PARTITION_COLUMN, DAY) for n in names(store)))
    assert conservation(store, tables, DAY, records)[0]
    history = DeltaTable(store.path(compactions[0].table)).history(1)[0]
    assert history["catalake.operation"] == "compaction"

    # the merged-from files stay for time travel until a vacuum inside retention
    kept = vacuum_warehouse(store, names(store), retention_hours=168)
    assert sum(v.files for v in kept) == 0
    dry = vacuum_warehouse(store, names(store), retention_hours=0, dry_run=True)
    assert sum(v.files for v in dry) == sum(c.files_before for c in compactions)
    gone = vacuum_warehouse(store, names(store), retention_hours=0)
    assert [(v.table, v.paths) for v in gone] == [(v.table, v.paths) for v in dry]
    live = sum(f.size for files in partition_files(store).values() for f in files)
    assert parquet_on_disk(store) == (sum(len(f) for f in partition_files(store).values()), live)
    assert table_hashes(store.root) == before


def test_a_day_re_run_three_times_keeps_one_copy_after_vacuum_and_time_travels_within_retention(tmp_path, demo):
    catalog, tables = demo
    store = store_for(tmp_path / "warehouse", tables)
    for _ in range(3):
        result = classify_partition(no_spark, store, tables, str(DEMO_DIR / "landing"), DAY, local_bytes=1 << 30)
    before = table_hashes(store.root)
    live = sum(len(f) for f in partition_files(store).values())
    assert parquet_on_disk(store)[0] == 3 * live
    ended = store.path("messages/bikeshare_rides__rideended")
    first = DeltaTable(ended, version=DeltaTable(ended).version() - 2).to_pyarrow_table().num_rows
    assert vacuum_warehouse(store, names(store), retention_hours=24) and parquet_on_disk(store)[0] == 3 * live
    assert DeltaTable(ended, version=DeltaTable(ended).version() - 2).to_pyarrow_table().num_rows == first  # time travel
    vacuum_warehouse(store, names(store), retention_hours=0)
    assert parquet_on_disk(store)[0] == live and table_hashes(store.root) == before
    assert conservation(store, tables, DAY, result.records)[0]


def test_vacuum_never_deletes_the_files_of_a_run_in_flight(tmp_path, demo):
    _, tables = demo
    store = a_day_of_increments(tmp_path, demo, pieces=2)
    name = next(iter(partition_files(store)))
    stray = Path(store.path(name)) / f"{PARTITION_COLUMN}={DAY}" / "part-inflight0001-0.0-0.zstd.parquet"
    shutil.copy(Path(store.path(name)) / store.partition_files(name, PARTITION_COLUMN, DAY)[0].path, stray)
    with recovery.recorded(store.location, "inflight0001", DAY):  # a run of this process, still running
        vacuum_warehouse(store, names(store), retention_hours=0)
        assert stray.exists()
    vacuum_warehouse(store, names(store), retention_hours=0)  # its record gone: an orphan
    assert not stray.exists()


def test_a_compaction_beside_increments_and_a_full_run_loses_and_duplicates_nothing(tmp_path, demo):
    """Commits made while a compaction merges: an increment's append is kept beside the merged
    file; a full run that replaced the partition makes the compaction step aside (skipped)."""
    catalog, tables = demo
    store = a_day_of_increments(tmp_path, demo, pieces=4)
    landing = tmp_path / "landing"
    extra = landing / DAY.isoformat() / "late.jsonl"

    def append_meanwhile(message: str) -> None:
        if message.startswith(f"{DAY}: compacting"):
            extra.write_text((DEMO_DAY / "rides-http.jsonl").read_text().splitlines(keepends=True)[0])
            classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)

    compactions = compact_day(None, store, names(store), DAY, target=TARGET, progress=append_meanwhile)
    assert compactions and all(c.skipped is None for c in compactions)
    full_store = store_for(tmp_path / "full", tables)
    full = classify_partition(no_spark, full_store, tables, str(landing), DAY, local_bytes=1 << 30)
    assert table_hashes(store.root) == table_hashes(full_store.root)
    assert conservation(store, tables, DAY, full.records)[0]

    (landing / DAY.isoformat() / "later.jsonl").write_text(extra.read_text())
    classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)
    classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)

    def rerun_meanwhile(message: str) -> None:
        if message.startswith(f"{DAY}: compacting"):
            classify_partition(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30)

    store_files = partition_files(store)
    assert any(len(f) > 1 for f in store_files.values())
    racing = compact_day(None, store, names(store), DAY, target=TARGET, progress=rerun_meanwhile)
    assert racing and all(c.skipped and "concurrent" in c.skipped for c in racing)
    full = classify_partition(no_spark, full_store, tables, str(landing), DAY, local_bytes=1 << 30)
    assert table_hashes(store.root) == table_hashes(full_store.root)
    assert conservation(store, tables, DAY, full.records)[0]
    assert DEADLETTER_TABLE in names(store)


def test_catalake_maintain_compacts_a_day_and_vacuums_with_a_dry_run_first(tmp_path, demo, monkeypatch, capsys):
    from catalake.cli import main

    store = a_day_of_increments(tmp_path, demo, pieces=4)
    before = table_hashes(store.root)
    for key, value in {"CATALAKE_WAREHOUSE": store.root, "CATALAKE_LANDING": str(tmp_path / "landing"),
                       "CATALAKE_ENGINE": "local"}.items():
        monkeypatch.setenv(key, value)
    assert main(["maintain", "--date", DAY.isoformat(), "--json"]) == 0
    compacted = json.loads(capsys.readouterr().out)["compacted"]
    assert compacted and all(c["files_after"] == 1 and c["skipped"] is None for c in compacted)
    assert main(["maintain", "--vacuum", "--retention-hours", "0", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"would delete {sum(c['files_before'] for c in compacted)} file(s)" in said
    assert main(["maintain", "--vacuum", "--retention-hours", "0", "--json"]) == 0
    vacuumed = json.loads(capsys.readouterr().out)["vacuumed"]
    assert sum(v["files"] for v in vacuumed) == sum(c["files_before"] for c in compacted)
    assert table_hashes(store.root) == before
    assert main(["maintain"]) == 2 and "say what" in capsys.readouterr().err


def every_live_file_carries_statistics(store: DeltaStore) -> bool:
    """Whether each table's every live file has column statistics, and its properties name them."""
    for name in [*names(store), "catalog/messages"]:
        with_stats, live = store.statistics_coverage(name)
        if with_stats != live or not DeltaTable(store.path(name)).metadata().configuration.get(STATS_COLUMNS_PROPERTY):
            return False
    return True


def as_an_older_release_left_it(store: DeltaStore) -> None:
    """Each table's live files re-added with their row counts only, and no stats columns named:
    the log of a warehouse written before catalake recorded column statistics."""
    for name in names(store):
        table = DeltaTable(store.path(name))
        table.alter.set_table_properties({STATS_COLUMNS_PROPERTY: ""})
        actions = pa.table(table.get_add_actions(flatten=False)).to_pylist()
        files = [WrittenFile(a["path"], a["size_bytes"], {k: str(v) for k, v in a["partition"].items()}, a["num_records"])
                 for a in actions]
        commit_statistics(store.table_location(name), table, files)
    assert all(store.statistics_coverage(n)[0] == 0 for n in names(store))


def test_every_commit_carries_column_statistics_a_run_an_increment_and_a_compaction(tmp_path, demo):
    store = a_day_of_increments(tmp_path, demo)
    assert every_live_file_carries_statistics(store)
    assert compact_day(None, store, names(store), DAY, target=TARGET)
    assert every_live_file_carries_statistics(store)
    # what a reader sees: the hour's files by `time`, nothing else opened
    rides = "messages/bikeshare_rides__rideended"
    dataset = DeltaTable(store.path(rides)).to_pyarrow_dataset()
    times = dataset.to_table(columns=["time"]).column("time").to_pylist()
    hour = pa.scalar(max(times) + dt.timedelta(hours=1), pa.timestamp("us", "UTC"))
    assert list(dataset.get_fragments(filter=pads.field("time") >= hour)) == []
    assert len(list(dataset.get_fragments(filter=pads.field("time") >= pa.scalar(max(times), hour.type)))) >= 1


def test_catalake_maintain_records_the_statistics_an_older_warehouse_lacks_changing_no_row(tmp_path, demo, monkeypatch,
                                                                                          capsys):
    from catalake.cli import main

    store = a_day_of_increments(tmp_path, demo, pieces=3)
    as_an_older_release_left_it(store)
    before = table_hashes(store.root)
    for key, value in {"CATALAKE_WAREHOUSE": store.root, "CATALAKE_LANDING": str(tmp_path / "landing"),
                       "CATALAKE_ENGINE": "local"}.items():
        monkeypatch.setenv(key, value)
    assert main(["maintain", "--statistics", "--json"]) == 0
    recorded = {a["table"]: a for a in json.loads(capsys.readouterr().out)["statistics"]}
    assert all(recorded[n]["files"] == recorded[n]["live_files"] for n in names(store))
    assert sum(recorded[n]["files"] for n in names(store)) > len(names(store))
    assert every_live_file_carries_statistics(DeltaStore(no_spark, store.root, "delta-rs", master="local[2]"))
    assert table_hashes(store.root) == before
    history = DeltaTable(store.path(names(store)[0])).history(1)[0]
    assert history["catalake.operation"] == "statistics"
    assert main(["maintain", "--statistics"]) == 0  # again: nothing left to record
    assert "statistics: recorded for 0 file(s) in 0 of" in capsys.readouterr().out


def test_statistics_recorded_beside_a_compaction_never_bring_back_a_file_it_removed(tmp_path, demo):
    store = a_day_of_increments(tmp_path, demo, pieces=3)
    as_an_older_release_left_it(store)
    before = table_hashes(store.root)
    name = "messages/bikeshare_rides__rideended"
    missing = store.files_without_statistics(name)
    stale = DeltaTable(store.path(name))  # the snapshot the statistics pass read
    assert compact_day(None, store, [name], DAY, target=TARGET)  # meanwhile: the files merged and removed
    commit_statistics(store.table_location(name), stale, [f._replace(stats=None) for f in missing])
    assert table_hashes(store.root) == before
    live = {f.path for f in store.partition_files(name, PARTITION_COLUMN, DAY)}
    assert not live & {f.path for f in missing}


def test_the_maintenance_job_reports_each_table_and_the_sensor_asks_for_it_when_increments_pile_up(tmp_path, demo):
    from dagster import AssetKey, DagsterInstance, RunRequest, build_run_status_sensor_context

    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    settings = Settings(landing=str(tmp_path / "landing"), warehouse=str(tmp_path / "warehouse"), engine="local",
                        compact_files=2, start_date="2026-11-01")
    definitions = build_definitions(settings, analytics=False)
    later = land_in_pieces(tmp_path / "landing", 4)
    with DagsterInstance.ephemeral() as instance:
        assert definitions.resolve_job_def("catalake_job").execute_in_process(instance=instance).success
        events_job = definitions.resolve_job_def("events_job")
        for path, text in later:
            path.write_text(text)
            run = events_job.execute_in_process(instance=instance, partition_key=DAY.isoformat(),
                                                asset_selection=[AssetKey("deadletter")],
                                                tags={"catalake/incremental": "true"})
            assert run.success
        due = instance.get_latest_materialization_event(AssetKey("deadletter")).asset_materialization.metadata["compaction_due"].value
        assert "messages/bikeshare_rides_kafka__rideended" in due  # the last increment's tables over 2 files
        sensor = definitions.get_sensor_def("compaction_sensor")
        context = build_run_status_sensor_context(sensor_name="compaction_sensor", dagster_instance=instance,
                                                  dagster_run=run.dagster_run, dagster_event=run.get_run_success_event())
        request = sensor(context)
        assert isinstance(request, RunRequest) and request.partition_key == DAY.isoformat()

        before = table_hashes(settings.warehouse)
        maintenance = definitions.resolve_job_def("maintenance_job").execute_in_process(
            instance=instance, partition_key=DAY.isoformat(), run_config=request.run_config)
        assert maintenance.success
        observed = {o.asset_key.to_user_string(): o.metadata for o in maintenance.asset_observations_for_node("maintain_day")}
        ended = observed["messages/bikeshare.rides.kafka/bikeshare.rides.kafka.RideEnded"]
        assert ended["files_before"].value > 2 and ended["files_after"].value == 1 and ended["compaction"].value == "compacted"
        assert table_hashes(settings.warehouse) == before


def test_a_small_compaction_starts_no_spark_session(tmp_path, demo):
    """A few MiB of merges in all run on the driver's threads (merging.DRIVER_MERGE_BYTES): the
    function that would start Spark is not called, and the rows stay as they were."""
    store = a_day_of_increments(tmp_path, demo, pieces=3)
    before = table_hashes(store.root)
    compactions = compact_day(no_spark, store, names(store), DAY, target=TARGET)
    assert compactions and all(c.skipped is None and c.files_after == 1 for c in compactions)
    assert table_hashes(store.root) == before
