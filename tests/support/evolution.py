"""The evolution loop's shop day: a catalog with one definition (KNOWN), a day of records most of
which it has no definition for, classified on Spark."""

from __future__ import annotations

import datetime as dt
import json

from catalake.platform.catalog import load_catalog
from catalake.platform.config import catalog_roots
from catalake.platform.runs.day import classify_partition
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore

DAY = dt.date(2026, 11, 20)
KNOWN = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.OrderPlaced"}},
         "dataschemaformat": "JsonSchema/draft-07", "dataschema": {"type": "object", "properties": {"id": {"type": "string"}}}}


def ce(type_, source, n, data, **more):
    return {"specversion": "1.0", "id": str(n), "source": source, "type": type_, "time": f"2026-11-20T0{n % 10}:00:00Z",
            "datacontenttype": "application/json", "data": data, **more}


def day_records():
    kinds = ["store", "kiosk", "store", "kiosk", "store", "store"]
    opened = [ce("shop.SiteOpened", f"https://shop.example/sites/s{i}", i, {"site": f"s{i}", "opened_at": f"2026-11-20T0{i}:30:00Z", "kind": k})
              for i, k in enumerate(kinds, 1)]
    refunds = [ce("shop.Refunded", "/refunds", 10 + i, {"amount": 1.5 * i, "currency": "EUR", **({"note": "late"} if i == 1 else {})})
               for i in range(1, 4)]
    known = [ce("shop.OrderPlaced", "/orders", 20, {"id": "o1"})]
    broken = ["{not json"]
    return opened + refunds + known + broken


def classified_day(spark, tmp_path):
    """The shop catalog (one definition) and DAY's records classified: (catalog folder,
    warehouse, store, tables, partition result)."""
    catalog_dir = tmp_path / "catalog"
    catalog_dir.mkdir()
    (catalog_dir / "shop.xreg.json").write_text(json.dumps({"messagegroups": {"shop": {"messages": {"OrderPlaced": KNOWN}}}}))
    landing = tmp_path / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    (landing / "a.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in day_records()))
    warehouse = tmp_path / "warehouse"
    store = DeltaStore(spark, warehouse)
    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, catalog_roots([catalog_dir]))
    sync_message_tables(store, tables)
    return catalog_dir, warehouse, store, tables, classify_partition(spark, store, tables, tmp_path / "landing", DAY)
