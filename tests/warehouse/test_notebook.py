"""The warehouse in a notebook (catalake/notebook.py): its tables by their SQL names in DuckDB,
Polars and Spark, each loaded only when a query names it. The warehouse holds `shop__broken`,
whose log cannot be read: a call that loaded it would fail."""

import subprocess
import sys

import polars as pl
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError

import catalake.notebook
from catalake.platform.errors import StorageError
from support.tables import small_warehouse

QUERY = "SELECT count(*) AS orders, sum(amount) AS amount FROM shop__orders"


def test_duckdb_and_polars_answer_by_name_loading_only_the_named_tables(tmp_path):
    warehouse = catalake.notebook.open(small_warehouse(tmp_path / "warehouse"))
    assert warehouse.duckdb(QUERY).fetchall() == [(3, 6)]
    assert warehouse.polars_sql(QUERY).collect().rows() == [(3, 6)]
    assert warehouse.polars("shop__orders").select(pl.col("amount").sum()).collect().item() == 6
    assert warehouse.table("deadletter").to_pyarrow_table().column("reason").to_pylist() == ["no_match"]
    # a CTE's name is no table, not even one that is in the warehouse
    assert warehouse.duckdb("WITH shop__broken AS (SELECT 1 AS x) SELECT x FROM shop__broken").fetchall() == [(1,)]
    # listed by names(), never loaded above: loading it fails
    assert warehouse.names() == ["deadletter", "shop__broken", "shop__orders"]
    with pytest.raises(DeltaError):
        warehouse.duckdb("SELECT count(*) FROM shop__broken")
    with pytest.raises(StorageError, match="no warehouse table named 'shop__missing'"):
        warehouse.polars("shop__missing")


def test_a_registered_table_keeps_its_snapshot_until_refresh(tmp_path):
    root = small_warehouse(tmp_path / "warehouse", broken=False)
    warehouse = catalake.notebook.open(str(root))
    assert warehouse.duckdb(QUERY).fetchall() == [(3, 6)]
    assert warehouse.polars_sql(QUERY).collect().rows() == [(3, 6)]
    write_deltalake(str(root / "messages" / "shop__orders"), warehouse.table("shop__orders").to_pyarrow_table(),
                    mode="append")
    assert warehouse.duckdb(QUERY).fetchall() == [(3, 6)]
    assert warehouse.polars("shop__orders").collect().height == 6  # read at the call
    warehouse.refresh()
    assert warehouse.duckdb(QUERY).fetchall() == [(6, 12)]
    assert warehouse.polars_sql(QUERY).collect().rows() == [(6, 12)]
    warehouse.close()


def test_opening_reads_the_configured_warehouse_and_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(tmp_path / "not yet"))
    warehouse = catalake.notebook.open()
    assert warehouse.location.uri == str(tmp_path / "not yet") and warehouse.names() == []


def test_the_notebook_module_imports_neither_dagster_nor_duckdb_nor_polars():
    probe = "import sys, catalake.notebook; print(sorted({'dagster', 'duckdb', 'polars'} & set(sys.modules)))"
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert imported.stdout.strip() == "[]"  # DuckDB and Polars too: imported by the first call that needs them


def test_spark_answers_by_name_registering_only_the_named_tables(spark, tmp_path):
    warehouse = catalake.notebook.open(small_warehouse(tmp_path / "warehouse"))
    assert [tuple(r) for r in warehouse.spark(QUERY, spark).collect()] == [(3, 6)]
    assert [tuple(r) for r in warehouse.spark(QUERY).collect()] == [(3, 6)]  # the active session
    assert spark.catalog.tableExists("shop__orders") and not spark.catalog.tableExists("shop__broken")
