"""The rows of a warehouse's tables, compared across runs by hashes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from deltalake import DeltaTable

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
