"""The rows of a warehouse's tables, compared across runs by hashes; a small warehouse of a few
tables written by deltalake, for the queries over it."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from catalake.platform import uris
from catalake.platform.warehouse.queries import warehouse_tables


def table_hashes(warehouse: str, day: dt.date | None = None) -> dict[str, list[str]]:
    """Per warehouse table (the catalog table aside), the sorted hashes of its rows (of `day`),
    `ingested_at` left out (`source_file` is relative to the landing root)."""
    out = {}
    for name, table in warehouse_tables(str(warehouse)).items():
        if table == "catalog/messages":
            continue
        rows = DeltaTable(uris.join(str(warehouse), table), storage_options=uris.delta_options(str(warehouse))).to_pyarrow_table()
        hashes = []
        for row in rows.drop_columns(["ingested_at"]).to_pylist():
            if day is not None and row["event_date"] != day:
                continue
            hashes.append(hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest())
        if hashes or day is None:
            out[name] = sorted(hashes)
    return out


def small_warehouse(root: Path, broken: bool = True) -> Path:
    """A warehouse at `root` of two tables: `shop__orders` (two files: ids a, b and c, amounts 1 to
    3) and `deadletter`; with `broken`, a third, `shop__broken`, whose log cannot be read: a query
    or a command that loads it fails."""
    orders = str(root / "messages" / "shop__orders")
    write_deltalake(orders, pa.table({"id": ["a", "b"], "amount": [1, 2]}))
    write_deltalake(orders, pa.table({"id": ["c"], "amount": [3]}), mode="append")
    write_deltalake(str(root / "deadletter"), pa.table({"reason": ["no_match"]}))
    if broken:
        log = root / "messages" / "shop__broken" / "_delta_log"
        log.mkdir(parents=True)
        (log / "00000000000000000000.json").write_text("{ not a delta log")
    return root
