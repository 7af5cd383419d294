"""The warehouse in a notebook: its tables by their SQL names in DuckDB, Polars and Spark.

    import catalake.notebook

    warehouse = catalake.notebook.open()  # CATALAKE_WAREHOUSE, as the command line reads it
    warehouse.duckdb("SELECT count(*) FROM deadletter").fetchall()
    warehouse.polars("bikeshare_rides__rideended").filter(...).collect()
    warehouse.polars_sql("SELECT city, count(*) FROM bikeshare_rides__rideended GROUP BY city").collect()
    warehouse.spark("SELECT ... FROM bikeshare_rides__rideended").show()

The names are those of `catalake tables`, Spark SQL and the dbt sources: `<group>__<message>`,
`deadletter`, `catalog_messages` (platform/warehouse/queries.py). Nothing is listed or read when
the warehouse is opened: a query costs the tables it names, each looked up by its name and loaded
when a query first names it (DuckDB's parser says which; Polars SQL and Spark SQL: the query's
words), so a warehouse of 5,000 tables opens as fast as one of 10. `names()` is the one call that
lists them all. DuckDB and Polars read through deltalake (no JVM, object storage included, with
the storage options of CATALAKE_STORAGE_OPTIONS); Spark starts only when `spark()` is called.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from deltalake import DeltaTable

from .platform.config import Settings
from .platform.errors import StorageError
from .platform.uris import Location
from .platform.warehouse.queries import named_tables, register_duckdb, sql, tables_in_words, warehouse_tables

if TYPE_CHECKING:
    import duckdb
    import polars as pl
    from pyspark.sql import DataFrame, SparkSession

    from .platform.warehouse.store import DeltaStore

__all__ = ["Warehouse", "open"]


def open(path_or_uri: str | os.PathLike | None = None, *, settings: Settings | None = None) -> Warehouse:
    """The warehouse at `path_or_uri` (a folder or a URI such as `s3://bucket/warehouse`), by
    default the configured one: CATALAKE_WAREHOUSE, read with every `CATALAKE_*` setting as the
    command line reads them (`settings` to give them instead). Lists and loads nothing."""
    settings = settings if settings is not None else Settings.from_env()
    return Warehouse(settings.warehouse if path_or_uri is None else path_or_uri, delta_backend=settings.delta_backend)


class Warehouse:
    """The warehouse's tables by their SQL names, each loaded when a query first names it.

    DuckDB and Polars SQL keep what they registered: a table is read at the snapshot of the query
    that first named it, until `refresh()`. `polars(name)`, `table(name)` and `spark(query)` read
    the current snapshot at each call."""

    def __init__(self, path_or_uri: str | os.PathLike | Location, *, delta_backend: str = "auto"):
        """`delta_backend`: how Spark reads the tables (CATALAKE_DELTA_BACKEND; see DeltaStore)."""
        self.location = Location.of(path_or_uri)
        self.delta_backend = delta_backend
        self._duckdb: duckdb.DuckDBPyConnection | None = None
        self._duckdb_tables: dict[str, str] = {}  # SQL name -> warehouse table, registered on _duckdb
        self._polars: pl.SQLContext | None = None
        self._spark: tuple[SparkSession, DeltaStore] | None = None

    def __repr__(self) -> str:
        return f"catalake.notebook.Warehouse({self.location.uri!r})"

    def names(self) -> list[str]:
        """Every table's SQL name (`catalog_messages`, `deadletter`, then `<group>__<message>`
        in order): the one call that lists the warehouse."""
        return list(warehouse_tables(self.location))

    def path(self, name: str) -> str:
        """Where table `name` (its SQL name) is: a local path or a URI."""
        return self._location(name).uri

    def table(self, name: str) -> DeltaTable:
        """Table `name` (its SQL name) as a `deltalake.DeltaTable` at its current version."""
        return DeltaTable(self.path(name), storage_options=self.location.delta_options())

    def duckdb(self, query: str) -> duckdb.DuckDBPyRelation | None:
        """A DuckDB relation of `query` (None for a statement that returns nothing), on a
        connection this warehouse keeps: the tables the query names are registered on it first,
        those not registered yet, as the Arrow datasets of their Delta snapshots."""
        if self._duckdb is None:
            import duckdb

            self._duckdb = duckdb.connect()
        self._duckdb_tables |= register_duckdb(self._duckdb, self.location, query, self._duckdb_tables)
        return self._duckdb.sql(query)

    def polars(self, name: str) -> pl.LazyFrame:
        """Table `name` (its SQL name) as a Polars LazyFrame (`pl.scan_delta`): read when collected."""
        return self._scan(self.path(name))

    def polars_sql(self, query: str) -> pl.LazyFrame:
        """`query` in Polars SQL as a LazyFrame, on an SQLContext this warehouse keeps: the
        tables the query names (its words) are registered on it first, those not registered yet."""
        if self._polars is None:
            import polars as pl

            self._polars = pl.SQLContext()
        registered = set(self._polars.tables())
        for name, table in tables_in_words(self.location, query).items():
            if name not in registered:
                self._polars.register(name, self._scan(self.location.child(*table.split("/")).uri))
        return self._polars.execute(query)

    def spark(self, query: str, spark: SparkSession | None = None) -> DataFrame:
        """`query` in Spark SQL as a DataFrame, the tables it names (its words) registered first
        as temporary views under their SQL names, at their current snapshots. `spark`: the session
        to use, else `SparkSession.builder.getOrCreate()` (the active one, or a new one)."""
        from pyspark.sql import SparkSession

        from .platform.warehouse.store import DeltaStore

        session = spark if spark is not None else SparkSession.builder.getOrCreate()
        if self._spark is None or self._spark[0] is not session:
            self._spark = session, DeltaStore(session, self.location, self.delta_backend)
        return sql(session, self._spark[1], query)

    def refresh(self) -> None:
        """Forget what DuckDB and Polars SQL registered: the next query reads current snapshots."""
        if self._duckdb is not None:
            for name in self._duckdb_tables:
                self._duckdb.unregister(name)
        self._duckdb_tables = {}
        self._polars = None

    def close(self) -> None:
        """Close the DuckDB connection (relations from it can no longer be read)."""
        if self._duckdb is not None:
            self._duckdb.close()
        self._duckdb, self._duckdb_tables, self._polars = None, {}, None

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _location(self, name: str) -> Location:
        table = named_tables(self.location, [name]).get(name)
        if table is None:
            raise StorageError(f"no warehouse table named {name!r} under {self.location.uri} "
                               "(`names()` or `catalake tables` lists them)")
        return self.location.child(*table.split("/"))

    def _scan(self, uri: str) -> pl.LazyFrame:
        import polars as pl

        return pl.scan_delta(uri, storage_options=self.location.delta_options())
