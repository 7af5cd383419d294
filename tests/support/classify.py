"""Records landed in day folders (CloudEvents as JSON lines, gzip; the real Azure blob events)
and a day classified on Spark into the catalog's Delta tables."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil

from catalake.platform.catalog import load_catalog
from catalake.platform.config import catalog_roots
from catalake.platform.runs.day import classify_partition
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables

DAY = dt.date(2026, 11, 20)


def ce(type_, source="/s", **extra):
    return {"specversion": "1.0", "id": extra.pop("id", "1"), "source": source, "type": type_, **extra}


def land(root, day, files: dict):
    folder = root / day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(content.encode()))
        else:
            path.write_text(content)
    return root


def jsonl(*records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def classify_day(spark, base, catalog_paths, landing_root):
    """Tables created from the catalog under base/warehouse, then DAY classified:
    (store, tables, schema warnings, result)."""
    from catalake.platform.warehouse.store import DeltaStore

    catalog = load_catalog(catalog_paths)
    tables, warnings = message_tables(catalog, catalog_roots(catalog_paths))
    store = DeltaStore(spark, base / "warehouse")
    sync_message_tables(store, tables)
    return store, tables, warnings, classify_partition(spark, store, tables, landing_root, DAY)


def land_azure(shared_data, base):
    """The real Azure blob events (a test-time copy; nothing is committed) and their catalog."""
    events = shared_data / "azure-rest-api-specs/specification/eventgrid/data-plane/EventGridSystemEvents/examples/2018-01-01"
    folder = base / "landing" / DAY.isoformat()
    folder.mkdir(parents=True)
    for name in ("blob_created.json", "blob_deleted.json"):
        shutil.copy(events / name, folder / name)
    return base / "landing", shared_data / "xregistry-codegen/samples/message-definitions/Microsoft.Storage.xreg.json"
