"""A landed day classified as a run does it, without Spark: classify_partition in local processes
into real Delta tables of a warehouse of its own, conservation checked, rows read back with delta-rs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from deltalake import DeltaTable

from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.warehouse.message_tables import sync_message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.runs import no_spark


def run_landing(tmp_path: Path, catalog_tables: tuple, landing: Path | str, layout: str, name: str, day: dt.date):
    """Classify `day` of `landing` in `layout` into the warehouse `tmp_path/warehouse-<name>`:
    (result, store), with records read = rows stored."""
    catalog, tables = catalog_tables
    store = DeltaStore(no_spark, tmp_path / f"warehouse-{name}", "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    result = classify_partition(no_spark, store, tables, str(landing), day, local_bytes=1 << 30, layout=layout)
    ok, counts = conservation(store, tables, day, result.records, result.stored)
    assert ok, counts
    return result, store


def day_rows(store: DeltaStore, name: str, day: dt.date) -> list[dict]:
    """A table's rows of one day."""
    table = DeltaTable(store.path(name)).to_pyarrow_table()
    return [r for r in table.to_pylist() if r["event_date"] == day]


def fed(result, tables) -> dict[str, int]:
    """Rows written per table name (the result counts by definition xid)."""
    return {t.name: result.tables[t.message.xid] for t in tables if result.tables.get(t.message.xid)}
