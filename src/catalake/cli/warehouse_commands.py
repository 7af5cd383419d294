"""`catalake tables`, `catalake sql` and `catalake dbt project`: the warehouse's tables, a query
over them, and the dbt project that builds on them."""

from __future__ import annotations

import sys

from catalake.display import text_table
from catalake.platform import uris

from .context import Context
from .usage import UsageError


def tables(args, context: Context) -> int:
    """The warehouse's tables under their SQL names (Spark SQL, dbt sources, DuckDB, Polars), each
    with its Delta version and how many of its live files carry column statistics."""
    from deltalake import DeltaTable

    from catalake.platform.warehouse.queries import warehouse_tables
    from catalake.platform.warehouse.store import statistics_coverage

    warehouse = context.settings.warehouse
    tables = warehouse_tables(warehouse)
    if not tables:
        print(f"no Delta tables under {warehouse} (run `catalake run` first)", file=sys.stderr)
        return 1
    options = uris.delta_options(warehouse)
    rows, lacking = [], 0
    for name, table in tables.items():
        delta = DeltaTable(uris.join(warehouse, table), storage_options=options)
        with_statistics, live = statistics_coverage(delta)
        lacking += with_statistics < live
        rows.append([name, uris.join(warehouse, table), delta.version(), f"{with_statistics}/{live} files"])
    print(text_table(["table", "path", "delta version", "statistics"], rows))
    if lacking:
        print(f"{lacking} table(s) have files without column statistics (a filter cannot skip those): "
              "run `catalake maintain --statistics` to record them")
    return 0


def sql(args, context: Context) -> int:
    """A SQL query over the warehouse tables, printed as a table: DuckDB over the tables' Arrow
    datasets (no JVM, about a second), or Spark SQL with `--engine spark`."""
    if args.engine == "duckdb":
        import duckdb

        from catalake.platform.warehouse.queries import duckdb_sql

        try:
            columns, rows = duckdb_sql(context.settings.warehouse, args.query, args.limit)
        except duckdb.Error as exc:
            raise UsageError(f"sql: {str(exc).strip().splitlines()[0]}") from None
    else:
        from pyspark.errors import PySparkException

        from catalake.platform.warehouse.queries import sql

        try:
            frame = sql(context.spark, context.store, args.query)
            columns, rows = frame.columns, frame.limit(args.limit).collect()
        except PySparkException as exc:
            raise UsageError(f"sql: {str(exc).strip().splitlines()[0]}") from None
    print(text_table(columns, [["" if v is None else v for v in row] for row in rows]))
    return 0


def dbt_project(args, context: Context) -> int:
    """Prepare the configured catalog's dbt project (what the analytics assets run) and print
    where it is, e.g. to run dbt by hand there."""
    from catalake.defs.analytics.dbt_assets import dbt_project
    from catalake.defs.catalog.messages import catalog_at_load

    tables = catalog_at_load(context.configured.catalog_source).tables  # none while the catalog is invalid
    print(dbt_project(context.configured.warehouse, tables).project_dir)
    return 0
