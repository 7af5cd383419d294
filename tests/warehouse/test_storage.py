"""The Delta store on the delta-rs path (and on delta-spark when its jars are present)."""

import datetime as dt
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType, TimestampType

from catalake.platform.errors import StorageError
from catalake.platform.warehouse.arrowschemas import arrow_schema
from catalake.platform.warehouse.backends import native_delta_available
from catalake.platform.warehouse.files import PartFiles
from catalake.platform.warehouse.store import DeltaStore
from support.runs import no_spark

SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("n", LongType()),
        StructField("ts", TimestampType()),
        StructField("event_date", DateType()),
    ]
)
DAY1, DAY2 = dt.date(2026, 11, 20), dt.date(2026, 11, 21)


def rows(spark, day, count, prefix="r"):
    data = [(f"{prefix}{i}", i, dt.datetime(2026, 11, 20, 1, 2, 3), day) for i in range(count)]
    return spark.createDataFrame(data, SCHEMA)


def counts_by_day(store, name="events"):
    return {r["event_date"]: r["count"] for r in store.read(name).groupBy("event_date").count().collect()}


def test_auto_backend_is_delta_rs_without_jars(spark, store):
    assert store.backend == ("delta-spark" if native_delta_available(spark) else "delta-rs")


def test_create_writes_a_real_delta_table_with_description(store):
    assert store.create("events", SCHEMA, partition_by=["event_date"], description="test events")
    table = DeltaTable(store.path("events"))
    assert table.metadata().description == "test events"
    assert table.metadata().partition_columns == ["event_date"]
    assert [f.name for f in table.schema().fields] == ["id", "n", "ts", "event_date"]
    assert store.read("events").count() == 0
    # creating again is a no-op; a different schema is refused
    assert not store.create("events", SCHEMA, partition_by=["event_date"])
    with pytest.raises(StorageError, match="exists with schema"):
        store.create("events", StructType(SCHEMA.fields[:2]))


def test_each_write_is_one_commit_and_reads_see_the_snapshot(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    store.append("events", rows(spark, DAY1, 5).repartition(3))  # three tasks write files, one commit
    store.append("events", rows(spark, DAY2, 4))
    history = store.history("events")
    assert [h["operation"] for h in history] == ["WRITE", "WRITE", "CREATE TABLE"]
    assert [h["version"] for h in history] == [2, 1, 0]
    assert counts_by_day(store) == {DAY1: 5, DAY2: 4}
    arrow = store.read_arrow("events")
    assert arrow.num_rows == 9
    assert sorted(arrow.column("id").to_pylist())[:2] == ["r0", "r0"]
    # any Delta reader sees the same snapshot
    assert DeltaTable(store.path("events")).to_pyarrow_table().num_rows == 9


def test_overwrite_partition_leaves_other_partitions_intact(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    store.append("events", rows(spark, DAY1, 5).union(rows(spark, DAY2, 4)))
    store.overwrite_partition("events", rows(spark, DAY2, 2, prefix="new"), "event_date", DAY2)
    assert counts_by_day(store) == {DAY1: 5, DAY2: 2}
    day2_ids = {r["id"] for r in store.read("events").where("event_date = '2026-11-21'").collect()}
    assert day2_ids == {"new0", "new1"}
    assert store.history("events")[0]["operationParameters"]["mode"] == "Overwrite"
    # running the same overwrite again gives the same table (idempotent re-run)
    store.overwrite_partition("events", rows(spark, DAY2, 2, prefix="new"), "event_date", DAY2)
    assert counts_by_day(store) == {DAY1: 5, DAY2: 2}
    assert len(store.history("events")) == 4


def test_overwrite_partition_with_no_rows_empties_it(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    store.append("events", rows(spark, DAY1, 3).union(rows(spark, DAY2, 3)))
    store.overwrite_partition("events", spark.createDataFrame([], SCHEMA), "event_date", DAY1)
    assert counts_by_day(store) == {DAY2: 3}


def test_overwrite_partition_refuses_rows_of_other_partitions(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    store.append("events", rows(spark, DAY1, 3))
    with pytest.raises(StorageError, match="event_date=2026-11-21"):
        store.overwrite_partition("events", rows(spark, DAY1, 2), "event_date", DAY2)
    assert counts_by_day(store) == {DAY1: 3}
    assert store.version("events") == 1  # nothing was committed


def _part_files(store, run, tables: dict[str, list[list]], attempt: int = 0) -> PartFiles:
    """Files written as an executor's task attempt writes them: rows per table of DAY1."""
    import pyarrow as pa

    sink = PartFiles(store.location, DAY1, f"{run}-0.{attempt}")
    schema = arrow_schema(SCHEMA, exclude=("event_date",))
    for name, values in tables.items():
        sink.write(name, schema, [pa.Table.from_pylist([dict(zip(schema.names, v)) for v in values], schema=schema)])
    return sink


def test_executor_files_are_committed_per_table_replacing_the_partition(spark, store):
    store.create("evens", SCHEMA, partition_by=["event_date"])
    store.create("odds", SCHEMA, partition_by=["event_date"])
    store.append("odds", rows(spark, DAY2, 2, prefix="keep"))
    store.append("odds", rows(spark, DAY1, 4, prefix="old"))
    ts = dt.datetime(2026, 11, 20, 1, 2, 3, tzinfo=dt.timezone.utc)
    sink = _part_files(store, "run1", {"evens": [[f"r{n}", n, ts] for n in (0, 2, 4, 6)],
                                       "odds": [[f"r{n}", n, ts] for n in (1, 3, 5)]})
    # written but not committed: no reader sees them
    assert counts_by_day(store, "odds") == {DAY1: 4, DAY2: 2} and store.read("evens").count() == 0
    for name, files in sink.files.items():
        store.commit_partition(name, files, "event_date", DAY1)
    assert sorted(r["n"] for r in store.read("evens").collect()) == [0, 2, 4, 6]
    assert counts_by_day(store, "odds") == {DAY1: 3, DAY2: 2}  # the day replaced, the other kept
    assert store.history("evens")[0]["operationParameters"]["mode"] == "Overwrite"
    # row counts come from the Delta log and agree with Spark
    assert store.partition_rows("evens", "event_date", DAY1) == 4
    assert store.partition_rows("odds", "event_date", DAY1) == 3
    assert DeltaTable(store.path("evens")).to_pyarrow_table().column("ts").to_pylist()[0] == ts
    # committing no files empties the partition
    store.commit_partition("evens", [], "event_date", DAY1)
    assert store.read("evens").count() == 0


def test_uncommitted_files_of_a_run_are_removed_and_others_kept(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    ts = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)
    kept = _part_files(store, "run1", {"events": [["a", 1, ts]]})
    store.commit_partition("events", kept.files["events"], "event_date", DAY1)
    _part_files(store, "run1", {"events": [["b", 2, ts]]}, attempt=1)  # a duplicate attempt, never committed
    other = _part_files(store, "run2", {"events": [["c", 3, ts]]})  # another run, still writing
    store.remove_uncommitted("run1", DAY1, ["events", "no_such_table"])
    folder = Path(store.path("events")) / "event_date=2026-11-20"
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 2 and names[1].startswith("part-run2-")  # run1's committed file and run2's
    assert [r["id"] for r in store.read("events").collect()] == ["a"]
    assert other.files["events"][0][0].endswith(names[1])


def test_a_commit_that_fails_removes_its_files(spark, store):
    store.create("events", StructType(SCHEMA.fields[:2]))  # not partitioned by day
    ts = dt.datetime(2026, 11, 20, tzinfo=dt.timezone.utc)
    sink = _part_files(store, "run1", {"events": [["a", 1, ts]]})
    with pytest.raises(StorageError, match="not a partition column"):
        store.commit_partition("events", sink.files["events"], "event_date", DAY1)
    assert not list((Path(store.path("events")) / "event_date=2026-11-20").iterdir())


def test_overwrite_replaces_everything(spark, store):
    store.create("events", SCHEMA, partition_by=["event_date"])
    store.append("events", rows(spark, DAY1, 3).union(rows(spark, DAY2, 3)))
    store.overwrite("events", rows(spark, DAY2, 1))
    assert counts_by_day(store) == {DAY2: 1}


def test_write_with_wrong_columns_is_refused(spark, store):
    store.create("events", SCHEMA)
    with pytest.raises(StorageError, match="missing"):
        store.append("events", rows(spark, DAY1, 1).drop("n"))


def test_unknown_table_is_a_clear_error(store):
    with pytest.raises(StorageError, match="no Delta table 'nope'"):
        store.read("nope")


def test_native_delta_spark_backend(spark, tmp_path):
    if not native_delta_available(spark):
        reason = "delta-spark JVM classes are not on the classpath here (Maven unreachable); native path not exercised"
        print(reason)
        pytest.skip(reason)
    native = DeltaStore(spark, tmp_path / "native", backend="delta-spark")
    native.create("events", SCHEMA, partition_by=["event_date"])
    native.append("events", rows(spark, DAY1, 2).union(rows(spark, DAY2, 2)))
    native.overwrite_partition("events", rows(spark, DAY2, 1), "event_date", DAY2)
    assert counts_by_day(native) == {DAY1: 2, DAY2: 1}
    assert DeltaTable(native.path("events")).to_pyarrow_table().num_rows == 3


def test_asking_for_delta_spark_without_jars_is_a_clear_error(spark, tmp_path):
    if native_delta_available(spark):
        pytest.skip("delta-spark is available here")
    with pytest.raises(StorageError, match="cannot load the Delta data source"):
        DeltaStore(spark, tmp_path, backend="delta-spark")


def test_two_overwrites_of_one_partition_from_the_same_snapshot_leave_one_writers_rows(tmp_path):
    """Issue 26: delta-rs checks a transaction of given actions as a blind append, so two partition
    overwrites that read the same snapshot would both commit and keep both writers' files. The
    later one removes what the earlier one added in between: the partition holds one writer's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    from catalake.platform.uris import Location
    from catalake.platform.warehouse.commit import commit
    from catalake.platform.warehouse.files import WrittenFile

    root = str(tmp_path / "t")
    # the day's partition is new: neither overwrite removes a file the other removes too (which
    # delta-rs would see as a conflict)
    write_deltalake(root, pa.table({"id": ["other day"], "event_date": ["2026-11-19"]}), partition_by=["event_date"])
    folder = tmp_path / "t" / "event_date=2026-11-20"
    folder.mkdir()

    def files(writer: str, n: int) -> list:
        out = []
        for i in range(n):
            name = f"part-{writer}-{i}.zstd.parquet"
            pq.write_table(pa.table({"id": [f"{writer}{i}"]}), folder / name)
            out.append(WrittenFile(f"event_date=2026-11-20/{name}", (folder / name).stat().st_size, {"event_date": "2026-11-20"}, 1))
        return out

    stale = DeltaTable(root)  # writer B read the table before writer A committed
    first = commit(Location.of(root), files("a", 2), ["event_date"], {"event_date": "2026-11-20"}, overwrite=True)[0]
    second = commit(Location.of(root), files("b", 3), ["event_date"], {"event_date": "2026-11-20"}, overwrite=True, table=stale)[0]
    assert second > first
    rows = sorted(DeltaTable(root).to_pyarrow_table().column("id").to_pylist())
    assert rows == ["b0", "b1", "b2", "other day"]
    # the earlier writer's version still reads its own rows (time travel)
    assert sorted(DeltaTable(root, version=first).to_pyarrow_table().column("id").to_pylist()) == ["a0", "a1", "other day"]


def test_an_append_reports_the_partition_after_it_with_or_without_another_writer_between(tmp_path):
    """An increment's append counts the partition's rows and files after its commit (the day's
    conservation uses them). When its commit is the log's only new version the log is not read
    again (the snapshot it loaded plus its own files); when another writer committed in between,
    the log is read again. Either way the figures are the table's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from catalake.platform.warehouse.files import PartFile

    store = DeltaStore(no_spark, tmp_path / "w", "delta-rs", master="local[2]")
    store.create("events", SCHEMA, partition_by=["event_date"])
    other = DeltaStore(no_spark, tmp_path / "w", "delta-rs", master="local[2]")
    folder = tmp_path / "w" / "events" / "event_date=2026-11-20"
    folder.mkdir(parents=True)
    schema = arrow_schema(SCHEMA, exclude=["event_date"])

    def part(name: str, n: int) -> list[PartFile]:
        table = pa.Table.from_pylist([{"id": f"{name}{i}", "n": i, "ts": dt.datetime(2026, 11, 20, 1)} for i in range(n)],
                                     schema=schema)
        pq.write_table(table, folder / f"{name}.parquet")
        return [PartFile(f"event_date=2026-11-20/{name}.parquet", (folder / f"{name}.parquet").stat().st_size, n)]

    def table_says() -> tuple[int, int]:
        actions = pa.table(DeltaTable(str(tmp_path / "w" / "events")).get_add_actions(flatten=True)).to_pydict()
        return sum(actions["num_records"]), len(actions["path"])

    with store.loaded_once(["events"], threads=2):
        alone = store.append_partition("events", part("a", 2), "event_date", DAY1, transaction=("app", 1))
    assert (alone.version, alone.rows, alone.files) == (1, 2, 1) and table_says() == (2, 1)

    with store.loaded_once(["events"], threads=2):  # this snapshot is at version 1
        store.transaction_version("events", "app")
        between = other.append_partition("events", part("b", 3), "event_date", DAY1)
        late = store.append_partition("events", part("c", 1), "event_date", DAY1, transaction=("app", 2))
    assert between.version == 2 and (between.rows, between.files) == (5, 2)
    assert (late.version, late.rows, late.files) == (3, 6, 3) and table_says() == (6, 3)
    assert DeltaTable(str(tmp_path / "w" / "events")).transaction_version("app") == 2


def test_commit_threads_and_the_increment_interval_are_settings(tmp_path):
    """docs/capacity.md's levers: the store's commit threads and the landing sensor's interval."""
    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    assert (Settings.from_env({}).commit_threads, Settings.from_env({}).increment_seconds) == (8, 30)
    settings = Settings.from_env({"CATALAKE_COMMIT_THREADS": "32", "CATALAKE_INCREMENT_SECONDS": "300",
                                  "CATALAKE_WAREHOUSE": str(tmp_path / "w")})
    definitions = build_definitions(settings, analytics=False)
    assert definitions.get_sensor_def("landing_sensor").minimum_interval_seconds == 300
    assert definitions.resources["warehouse"].store(definitions.resources["spark"]).commit_threads == 32
    for name in ("CATALAKE_COMMIT_THREADS", "CATALAKE_INCREMENT_SECONDS"):
        with pytest.raises(ValueError, match=name):
            Settings.from_env({name: "0"})
