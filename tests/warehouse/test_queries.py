"""A query over the warehouse costs the tables it names (platform/warehouse/queries.py): DuckDB's
parser says which, and only those are looked up and read."""

import pyarrow as pa
from deltalake import write_deltalake

from catalake.platform.warehouse.queries import duckdb_sql, named_tables


def _warehouse(root):
    write_deltalake(str(root / "messages" / "shop__orders"), pa.table({"id": ["a", "b", "c"], "amount": [1, 2, 3]}))
    write_deltalake(str(root / "deadletter"), pa.table({"reason": ["no_match"]}))
    broken = root / "messages" / "shop__broken" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("{ not a delta log")  # read, it fails the query
    return root


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
