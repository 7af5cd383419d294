"""Analysts' names for the warehouse tables, the same in Spark SQL, dbt sources, DuckDB and Polars:
`<group>__<message>` for each per-message table, `deadletter`, `catalog_messages`."""

from __future__ import annotations

import os
from pathlib import Path

from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from .catalog_table import CATALOG_TABLE
from .deadletter import DEADLETTER_TABLE
from .message_table import MESSAGES_PREFIX
from .storage import DeltaStore


def analyst_name(table: str) -> str:
    """Warehouse table (`messages/x`, `deadletter`, `catalog/messages`) -> its SQL name."""
    if table.startswith(MESSAGES_PREFIX):
        return table[len(MESSAGES_PREFIX):]
    return table.replace("/", "_")


def warehouse_tables(root: str | os.PathLike) -> dict[str, str]:
    """SQL name -> warehouse table, for every Delta table under the warehouse root."""
    root = Path(root)
    found = {}
    candidates = [CATALOG_TABLE, DEADLETTER_TABLE]
    if (root / MESSAGES_PREFIX).is_dir():
        candidates += sorted(MESSAGES_PREFIX + p.name for p in (root / MESSAGES_PREFIX).iterdir() if p.is_dir())
    for table in candidates:
        if DeltaTable.is_deltatable(str(root / table)):
            found[analyst_name(table)] = table
    return found


def register_tables(spark: SparkSession, store: DeltaStore) -> dict[str, str]:
    """Every warehouse table as a Spark temporary view under its SQL name."""
    tables = warehouse_tables(store.root)
    for name, table in tables.items():
        store.read(table).createOrReplaceTempView(name)
    return tables


def sql(spark: SparkSession, store: DeltaStore, query: str) -> DataFrame:
    register_tables(spark, store)
    return spark.sql(query)
