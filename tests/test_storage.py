"""The Delta store on the delta-rs path (and on delta-spark when its jars are present)."""

import datetime as dt
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType, TimestampType

from catalake.platform.storage import DeltaStore, StorageError, native_delta_available

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


def test_overwrite_partitions_routes_each_row_to_its_table(spark, store):
    from pyspark.sql import functions as F

    store.create("evens", SCHEMA, partition_by=["event_date"])
    store.create("odds", SCHEMA, partition_by=["event_date"])
    store.append("odds", rows(spark, DAY2, 2, prefix="keep"))
    store.append("odds", rows(spark, DAY1, 4, prefix="old"))
    day = rows(spark, DAY1, 7)
    row = F.struct(*[F.col(c) for c in SCHEMA.fieldNames()])
    routed = day.select(
        F.when(F.col("n") % 2 == 0, row).alias("even"), F.when(F.col("n") % 2 == 1, row).alias("odd")
    )
    store.overwrite_partitions(routed, {"even": "evens", "odd": "odds"}, "event_date", DAY1)
    assert sorted(r["n"] for r in store.read("evens").collect()) == [0, 2, 4, 6]
    assert counts_by_day(store, "odds") == {DAY1: 3, DAY2: 2}  # the day replaced, the other kept
    assert [h["operation"] for h in store.history("evens")][:1] == ["WRITE"]
    # row counts come from the Delta log and agree with Spark
    assert store.partition_rows("evens", "event_date", DAY1) == 4
    assert store.partition_rows("odds", "event_date", DAY1) == 3
    assert store.partition_rows("odds", "event_date", DAY2) == 2
    # the staging folders are gone: every file in the table folder is in the log or the log itself
    logged = {u.rsplit("/odds/", 1)[1] for u in DeltaTable(store.path("odds")).file_uris()}
    on_disk = {str(p.relative_to(store.path("odds"))) for p in Path(store.path("odds")).rglob("*.parquet")}
    assert logged <= on_disk and not any(".staging-" in f for f in on_disk)


def test_overwrite_partitions_writes_every_routed_table(spark, store):
    from pyspark.sql import functions as F

    names = [f"bucket{i}" for i in range(6)]
    for name in names:
        store.create(name, SCHEMA, partition_by=["event_date"])
    row = F.struct(*[F.col(c) for c in SCHEMA.fieldNames()])
    routed = rows(spark, DAY1, 30).select(*[F.when(F.col("n") % 6 == i, row).alias(f"b{i}") for i in range(6)])
    store.overwrite_partitions(routed, {f"b{i}": name for i, name in enumerate(names)}, "event_date", DAY1)
    for i, name in enumerate(names):
        assert sorted(r["n"] for r in store.read(name).collect()) == list(range(i, 30, 6))
        assert len(store.history(name)) == 2  # created, then one write


def test_overwrite_partitions_refuses_rows_that_are_not_the_tables(spark, store):
    from pyspark.sql import functions as F

    store.create("events", SCHEMA, partition_by=["event_date"])
    routed = rows(spark, DAY1, 2).select(F.struct("id", "n").alias("t"))
    with pytest.raises(StorageError, match="are not the table's"):
        store.overwrite_partitions(routed, {"t": "events"}, "event_date", DAY1)
    assert store.version("events") == 0


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
