"""A query over the warehouse costs the tables it names (platform/warehouse/queries.py): DuckDB's
parser says which, and only those are looked up and read."""

from catalake.platform.warehouse.queries import duckdb_sql, named_tables
from support.tables import small_warehouse as _warehouse  # shop__broken: read, it fails the query


def test_only_the_tables_a_query_names_are_looked_up(tmp_path):
    root = _warehouse(tmp_path)
    assert named_tables(root, ["shop__orders", "deadletter", "missing", "select", "x.y"]) == {
        "shop__orders": "messages/shop__orders", "deadletter": "deadletter"}
    columns, rows = duckdb_sql(root, "SELECT count(*) AS n, sum(amount) FROM shop__orders")
    assert columns[0] == "n" and rows == [(3, 6)]


def test_a_cte_that_shadows_a_table_reads_no_table(tmp_path):
    root = _warehouse(tmp_path)
    _, rows = duckdb_sql(root, "WITH shop__broken AS (SELECT 1 AS x) SELECT x FROM shop__broken")
    assert rows == [(1,)]
