"""Column statistics of the files catalake commits, in the Delta protocol's form.

Every `add` action carries `numRecords`, `minValues`, `maxValues` and `nullCount` of the table's
stats columns, so that every reader (delta-rs and its pyarrow datasets, DuckDB, Polars, Spark,
Trino) can rule a file out by a column's range without opening it. They are taken from the
Parquet footer the writer has just produced (row-group statistics; no second read of the data):
``file_statistics``.

The stats columns (``stats_columns``) are a function of the table's schema, recorded as the
table's `delta.dataSkippingStatsColumns` so every writer and reader agrees: the leaves of the
columns in schema order (the envelope's attributes, `time`, the key columns, the payload's
leaves), at most Delta's default of 32 (`delta.dataSkippingNumIndexedCols`); map and list
columns (`source_fields`, `other_attributes`, the payload's arrays) have no statistics.

Values follow Delta's own writers: timestamps as ISO strings in milliseconds (the minimum cut
down, the maximum rounded up, so a bound never excludes a row: delta-rs cuts both down and
Spark adds a millisecond when it reads), dates as ISO dates, strings cut to a prefix of 32
characters as Delta Spark cuts them (``cut_max``). Only `nullCount` is kept for floats (Parquet
leaves NaN out of its minimum and maximum, while Spark and DuckDB order NaN above every number,
so a file of NaNs could be wrongly skipped), decimals, booleans and binary columns.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"
MAX_STATS_COLUMNS = 32  # Delta's default delta.dataSkippingNumIndexedCols
STRING_PREFIX = 32  # Delta Spark's stats string prefix length
TIE_BREAKER = "\ufffd"  # Delta Spark appends it to a cut maximum
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Path = tuple[str, ...]


def _leaf_count(type_: pa.DataType) -> int:
    """How many Parquet leaf columns a value of `type_` is written as."""
    if pa.types.is_struct(type_):
        return sum(_leaf_count(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_map(type_):
        return _leaf_count(type_.key_type) + _leaf_count(type_.item_type)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _leaf_count(type_.value_type)
    return 1


def _leaves(fields: Sequence[pa.Field], prefix: Path = ()) -> Iterator[tuple[Path, pa.DataType] | None]:
    """Each Parquet leaf column of `fields` in the file's order: its path and type, or None for
    a leaf inside a map or a list (no statistics there)."""
    for field in fields:
        path, type_ = (*prefix, field.name), field.type
        if pa.types.is_struct(type_):
            yield from _leaves([type_.field(i) for i in range(type_.num_fields)], path)
        elif _leaf_count(type_) == 1 and not (pa.types.is_map(type_) or pa.types.is_list(type_)
                                              or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)):
            yield path, type_
        else:
            yield from [None] * _leaf_count(type_)


def stats_columns(schema: pa.Schema, exclude: Sequence[str] = ()) -> list[Path]:
    """The table's stats columns: the first MAX_STATS_COLUMNS leaves of `schema` (without the
    partition columns, `exclude`) outside maps and lists."""
    fields = [f for f in schema if f.name not in set(exclude)]
    return [leaf[0] for leaf in _leaves(fields) if leaf is not None][:MAX_STATS_COLUMNS]


def stats_columns_property(columns: Sequence[Path]) -> str:
    """`delta.dataSkippingStatsColumns`: the columns' dotted names, a name quoted in backticks
    where it is not a plain identifier."""
    def name(part: str) -> str:
        return part if _PLAIN_NAME.match(part) else "`" + part.replace("`", "``") + "`"

    return ",".join(".".join(name(p) for p in path) for path in columns)


def table_properties(schema: pa.Schema, partition_by: Sequence[str] = ()) -> dict[str, str]:
    """The table properties that name its stats columns."""
    return {STATS_COLUMNS_PROPERTY: stats_columns_property(stats_columns(schema, partition_by))}


def cut_min(value: str) -> str:
    """A string minimum cut to Delta's prefix: the prefix is not greater than the value."""
    return value[:STRING_PREFIX]


def cut_max(value: str) -> str:
    """A string maximum cut as Delta Spark cuts it (StatisticsCollection.truncateMaxStringAgg):
    the prefix, extended over characters not below the tie breaker, then the tie breaker, so
    the result is not less than the value."""
    if len(value) <= STRING_PREFIX:
        return value
    end = STRING_PREFIX
    while end < len(value) and value[end] >= TIE_BREAKER:
        end += 1
    return value if end == len(value) else value[:end] + TIE_BREAKER


def _timestamp(raw: int, unit: str, utc: bool, up: bool) -> str | None:
    """A timestamp of `raw` units since the epoch in milliseconds, cut down or rounded `up`."""
    per_ms = _UNIT_PER_MS[unit]
    ms = raw * 1_000 if per_ms is None else -(-raw // per_ms) if up else raw // per_ms
    try:
        moment = EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None
    # the year in four digits, as ISO 8601 and Delta Spark write it: strftime's %Y gives "999"
    # for the year 999 (and "1" for Go's zero time), which no reader parses and which sorts after
    # "2026" where file_statistics combines row groups by min()/max() of these strings: a file with
    # such a row group got a later minimum than its rows, and readers skipped it (issue 72)
    return (f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
            + ("Z" if utc else ""))


def _bound(stats, type_: pa.DataType, up: bool):
    """A row group's minimum (or maximum, `up`) of a column as Delta's JSON value; None where
    Delta keeps no bound for the type."""
    if pa.types.is_timestamp(type_):
        raw = stats.max_raw if up else stats.min_raw
        return _timestamp(raw, type_.unit, type_.tz is not None, up) if isinstance(raw, int) else None
    value = stats.max if up else stats.min
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return (cut_max if up else cut_min)(value) if isinstance(value, str) else None
    if pa.types.is_date(type_):
        return value.isoformat() if isinstance(value, dt.date) else None
    if pa.types.is_integer(type_):
        return int(value)
    return None


def _set(tree: dict, path: Path, value) -> None:
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = value


def file_statistics(metadata: pq.FileMetaData, exclude: Sequence[str] = ()) -> dict:
    """The Delta statistics of a Parquet file from its footer: `numRecords` and, for the stats
    columns of its schema, `minValues`, `maxValues` and `nullCount` (nested as the columns
    are). A column with a row group that has values but no bounds gets no bound."""
    schema = metadata.schema.to_arrow_schema()
    wanted = set(stats_columns(schema, exclude))
    leaves = list(_leaves(schema))
    low: dict = {}
    high: dict = {}
    nulls: dict = {}
    for index, leaf in enumerate(leaves):
        if leaf is None or leaf[0] not in wanted:
            continue
        path, type_ = leaf
        lows, highs, count, bounded = [], [], 0, True
        for group in range(metadata.num_row_groups):
            column = metadata.row_group(group).column(index)
            stats = column.statistics
            if stats is None or not stats.has_null_count:
                count = None
                bounded = False
                break
            count += stats.null_count
            if stats.null_count == column.num_values and not stats.has_min_max:
                continue  # only nulls in this row group: nothing to bound
            lo = _bound(stats, type_, up=False) if stats.has_min_max else None
            hi = _bound(stats, type_, up=True) if stats.has_min_max else None
            if lo is None or hi is None:
                bounded = False
            else:
                lows.append(lo)
                highs.append(hi)
        if count is not None:
            _set(nulls, path, count)
        if bounded and lows:
            _set(low, path, min(lows))
            _set(high, path, max(highs))
    return {"numRecords": metadata.num_rows, "minValues": low, "maxValues": high, "nullCount": nulls}


def stats_json(metadata: pq.FileMetaData, exclude: Sequence[str] = ()) -> str:
    """``file_statistics`` as the `stats` string of an add action."""
    return json.dumps(file_statistics(metadata, exclude), separators=(",", ":"))


def rows_only(rows: int) -> str:
    """The `stats` of a file whose footer was not at hand (a journal of an older release)."""
    return json.dumps({"numRecords": rows})


def has_column_statistics(stats: str | None) -> bool:
    """Whether an add action's `stats` carry the column statistics (not only `numRecords`)."""
    if not stats:
        return False
    return "nullCount" in json.loads(stats)
