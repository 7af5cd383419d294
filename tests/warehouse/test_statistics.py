"""The column statistics of a written file, in the Delta protocol's form, from its Parquet footer."""

from __future__ import annotations

import datetime as dt
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

from catalake.platform.warehouse.statistics import (MAX_STATS_COLUMNS, STATS_COLUMNS_PROPERTY, TIE_BREAKER, cut_max,
                                                    cut_min, file_statistics, has_column_statistics, stats_columns,
                                                    table_properties)

UTC = dt.timezone.utc


def footer(table: pa.Table, row_group_size: int | None = None) -> pq.FileMetaData:
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=row_group_size)
    return pq.read_metadata(pa.BufferReader(out.getvalue()))


def envelope_rows() -> pa.Table:
    times = [dt.datetime(2026, 3, 1, 0, 0, 0, tzinfo=UTC), dt.datetime(2026, 3, 1, 23, 59, 59, 999_001, tzinfo=UTC),
             dt.datetime(2026, 3, 1, 12, 0, 0, 500, tzinfo=UTC)]
    return pa.table({
        "id": ["b", "a" * 40, None],
        "time": pa.array(times, pa.timestamp("us", "UTC")),
        "other_attributes": pa.array([[("k", "v")], [], None], pa.map_(pa.string(), pa.string())),
        "data": pa.array([{"n": 3, "when": times[0], "tags": ["x"], "amount": 1.5, "inner": {"s": "q"}},
                          {"n": -7, "when": None, "tags": [], "amount": float("nan"), "inner": None},
                          None],
                         pa.struct([("n", pa.int64()), ("when", pa.timestamp("us", "UTC")), ("tags", pa.list_(pa.string())),
                                    ("amount", pa.float64()), ("inner", pa.struct([("s", pa.string())]))])),
        "day": pa.array([dt.date(2026, 3, 1)] * 3, pa.date32()),
    })


def test_statistics_are_delta_s_nested_form_with_bounds_that_never_exclude_a_row():
    stats = file_statistics(footer(envelope_rows(), row_group_size=2))
    assert stats["numRecords"] == 3
    low, high, nulls = stats["minValues"], stats["maxValues"], stats["nullCount"]
    # milliseconds, the minimum cut down and the maximum rounded up (999.001 ms -> 1000 ms)
    assert low["time"] == "2026-03-01T00:00:00.000Z" and high["time"] == "2026-03-02T00:00:00.000Z"
    assert low["id"] == "a" * 32 and high["id"] == "b"  # a cut minimum is its prefix
    assert low["data"]["n"] == -7 and high["data"]["n"] == 3 and low["data"]["inner"]["s"] == "q"
    assert low["data"]["when"] == high["data"]["when"] == "2026-03-01T00:00:00.000Z"
    assert low["day"] == "2026-03-01" and high["day"] == "2026-03-01"
    # floats keep only their null count (Parquet leaves NaN out of its bounds); lists and maps nothing
    assert "amount" not in low["data"] and nulls["data"]["amount"] == 1
    assert "tags" not in nulls["data"] and "other_attributes" not in nulls
    assert nulls == {"id": 1, "time": 0, "day": 0, "data": {"n": 1, "when": 2, "amount": 1, "inner": {"s": 2}}}
    assert json.loads(json.dumps(stats)) == stats


def test_a_column_with_a_row_group_of_only_nulls_is_bounded_by_the_others():
    table = pa.table({"k": pa.array([None, None, "m", "z"], pa.string())})
    stats = file_statistics(footer(table, row_group_size=2))
    assert stats["minValues"] == {"k": "m"} and stats["maxValues"] == {"k": "z"} and stats["nullCount"] == {"k": 2}
    assert file_statistics(footer(pa.table({"k": pa.array([None], pa.string())})))["minValues"] == {}


def test_a_cut_maximum_is_not_less_than_the_value_as_delta_spark_cuts_it():
    long = "R-" + "9" * 40
    assert cut_max(long) == long[:32] + TIE_BREAKER and cut_max(long) > long and cut_min(long) <= long
    assert cut_max("short") == "short"
    # characters from the tie breaker up are kept: cutting there would make the maximum smaller
    high = "a" * 32 + "\uffff\U0010ffff" + "b"
    assert cut_max(high) == "a" * 32 + "\uffff\U0010ffff" + TIE_BREAKER and cut_max(high) > high
    assert cut_max("a" * 32 + "\uffff") == "a" * 32 + "\uffff"


def test_stats_columns_are_the_first_32_leaves_outside_maps_and_lists_and_a_table_property():
    schema = envelope_rows().schema
    assert stats_columns(schema, exclude=["day"]) == [("id",), ("time",), ("data", "n"), ("data", "when"),
                                                     ("data", "amount"), ("data", "inner", "s")]
    wide = pa.schema([pa.field("payload", pa.struct([(f"c{i}", pa.int32()) for i in range(100)])),
                      pa.field("odd.name", pa.string())])
    assert len(stats_columns(wide)) == MAX_STATS_COLUMNS
    assert table_properties(schema, ["day"]) == {STATS_COLUMNS_PROPERTY: "id,time,data.n,data.when,data.amount,data.inner.s"}
    assert table_properties(pa.schema([pa.field("odd.name", pa.string())])) == {STATS_COLUMNS_PROPERTY: "`odd.name`"}


def test_only_row_counts_are_not_column_statistics():
    assert not has_column_statistics(json.dumps({"numRecords": 3})) and not has_column_statistics(None)
    assert has_column_statistics(json.dumps(file_statistics(footer(envelope_rows()))))
