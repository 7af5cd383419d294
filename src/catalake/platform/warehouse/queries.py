"""Analysts' names for the warehouse tables, the same in Spark SQL, dbt sources, DuckDB and Polars,
and queries over the tables by those names:
`<group>__<message>` for each per-message table, `deadletter`, `catalog_messages`."""

from __future__ import annotations

import os
import re
from typing import Container, Iterable

from deltalake import DeltaTable
from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession

from ..uris import Location
from .catalog_table import CATALOG_TABLE
from .deadletters import DEADLETTER_TABLE
from .datasets import snapshot_dataset
from .message_tables import MESSAGES_PREFIX
from .store import DeltaStore


def analyst_name(table: str) -> str:
    """Warehouse table (`messages/x`, `deadletter`, `catalog/messages`) -> its SQL name."""
    if table.startswith(MESSAGES_PREFIX):
        return table[len(MESSAGES_PREFIX):]
    return table.replace("/", "_")


def warehouse_tables(root: str | os.PathLike | Location) -> dict[str, str]:
    """SQL name -> warehouse table, for every Delta table under the warehouse root (a folder or a URI)."""
    root = Location.of(root)
    found = {}
    candidates = [CATALOG_TABLE, DEADLETTER_TABLE]
    messages = root.filesystem.get_file_info(
        pafs.FileSelector(f"{root.path}/{MESSAGES_PREFIX.rstrip('/')}", allow_not_found=True))
    candidates += sorted(MESSAGES_PREFIX + i.base_name for i in messages if i.type == pafs.FileType.Directory)
    options = root.delta_options()
    for table in candidates:
        if DeltaTable.is_deltatable(root.child(*table.split("/")).uri, storage_options=options):
            found[analyst_name(table)] = table
    return found


def named_tables(root: str | os.PathLike | Location, names: Iterable[str]) -> dict[str, str]:
    """SQL name -> warehouse table, for those of `names` that name one: each checked on its own,
    so a query costs the tables it names, not a listing and a check of every table."""
    root = Location.of(root)
    options = root.delta_options()
    fixed = {analyst_name(t): t for t in (CATALOG_TABLE, DEADLETTER_TABLE)}  # analyst_name's inverse
    found = {}
    for name in dict.fromkeys(names):
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            continue  # not one of ours: a table's SQL name is made of these (MessageDefinition.table_name)
        table = fixed.get(name, MESSAGES_PREFIX + name)
        if DeltaTable.is_deltatable(root.child(*table.split("/")).uri, storage_options=options):
            found[name] = table
    return found


def tables_in_words(root: str | os.PathLike | Location, query: str) -> dict[str, str]:
    """SQL name -> warehouse table, for the words of `query` that name one: how a query is read
    where no parser says which names are tables (Spark SQL, Polars SQL)."""
    return named_tables(root, re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query))


def register_tables(spark: SparkSession, store: DeltaStore, query: str) -> dict[str, str]:
    """The warehouse tables `query` names (its words) as Spark temporary views under their SQL names."""
    tables = tables_in_words(store.location, query)
    for name, table in tables.items():
        store.read(table).createOrReplaceTempView(name)
    return tables


def register_duckdb(con, warehouse: str | os.PathLike | Location, query: str,
                    registered: Container[str] = ()) -> dict[str, str]:
    """Register on DuckDB connection `con` the warehouse tables `query` names, as DuckDB's parser
    finds them (a CTE's name is none), but those in `registered`: each as the Arrow dataset of its
    current Delta snapshot (deltalake; no JVM, object storage included), under its SQL name.
    Not DuckDB's `delta` extension: it is downloaded at first use, which fails offline.
    Returns SQL name -> warehouse table of those it registered."""
    warehouse = Location.of(warehouse)
    tables = named_tables(warehouse, [n for n in con.get_table_names(query) if n not in registered])
    for name, table in tables.items():
        location = warehouse.child(*table.split("/"))
        con.register(name, snapshot_dataset(DeltaTable(location.uri, storage_options=warehouse.delta_options()), location))
    return tables


def duckdb_sql(warehouse: str | Location, query: str, limit: int | None = None) -> tuple[list[str], list[tuple]]:
    """(columns, rows) of a DuckDB query over the warehouse tables it names (`register_duckdb`)."""
    import duckdb

    with duckdb.connect() as con:
        register_duckdb(con, warehouse, query)
        result = con.sql(query)
        if result is None:
            return [], []
        return result.columns, (result.limit(limit) if limit is not None else result).fetchall()


def sql(spark: SparkSession, store: DeltaStore, query: str) -> DataFrame:
    register_tables(spark, store, query)
    return spark.sql(query)
