"""dbt-duckdb's plugin for catalake's Delta sources: each source a view over the table's snapshot,
read through delta-rs where the query reads it, never copied into the models' DuckDB file.

dbt-duckdb's own `delta` plugin is the model; what it does not do, and this one does:
* the views live in a database the plugin attaches in memory (its `database` setting in
  profiles.yml, the database dbt_sources.py gives every source), so `analytics.duckdb` holds
  the models' tables only and a plain `duckdb` opens every object in it (the plugin's views read
  an Arrow dataset registered inside dbt's process, which no other process has; its `table`
  materialization copies the whole source into the file at every build). The sources' columns
  are kept as empty tables in a file of dbt's `target/` (its `path` setting), where dagster-dbt
  finds them for the models' column lineage;
* a table is loaded once per dbt process, however many models read it (dbt-duckdb loads a
  source at each `source()` call);
* the storage options are catalake's own (`CATALAKE_STORAGE_OPTIONS` beside the store's
  environment), as every other reader of the warehouse uses them.

A model reads the days it needs with a `where event_date ...` (macros/partition_filter.sql): DuckDB
pushes that filter into the dataset's scan, and the dataset's fragments carry their partition
values, so only the files of those days are opened. A model built whole (a full refresh, or its
first build) reads every day.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from dbt.adapters.duckdb.utils import SourceConfig

from .. import uris
from ..sql import ansi_ident, ansi_string


class Plugin(BasePlugin):
    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.database, self.columns_file = plugin_config["database"], Path(plugin_config["path"])
        self._datasets: dict[str, Any] = {}
        self._columns = None  # the connection to `columns_file`, opened at the first source loaded
        self._kept: dict[str, str] = {}

    def configure_connection(self, conn) -> None:
        """The database of the sources' views: in memory, so nothing of theirs is written. A
        read-only connection (dagster-dbt's, reading the models' columns and column lineage) reads
        no source and cannot attach one in memory: there it is the file of the sources' columns."""
        if str((self.creds.config_options or {}).get("access_mode", "")).upper() != "READ_ONLY":
            conn.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {self.database}")
        elif self.columns_file.exists():
            conn.execute(f"ATTACH IF NOT EXISTS {ansi_string(str(self.columns_file))} AS {self.database} (READ_ONLY)")

    def load(self, source_config: SourceConfig):
        """The source's Delta table as a pyarrow dataset of its current snapshot, whose files
        the models' filters rule out by the log's statistics (datasets.snapshot_dataset)."""
        from deltalake import DeltaTable

        from .datasets import snapshot_dataset

        path = source_config["delta_table_path"]
        if path not in self._datasets:
            table = DeltaTable(path, storage_options=uris.delta_options(path))
            self._datasets[path] = snapshot_dataset(table, uris.Location.of(path))
            self._keep_columns(source_config.identifier, self._datasets[path].schema)
        return self._datasets[path]

    def _keep_columns(self, name: str, schema) -> None:
        """The source's columns, as an empty table in the columns file (written when they
        changed): dagster-dbt describes each model's parents in a connection of its own, where a
        view over a dataset registered in this process cannot be described."""
        import duckdb

        if self._columns is None:
            self.columns_file.parent.mkdir(parents=True, exist_ok=True)
            self._columns = duckdb.connect(str(self.columns_file))
            atexit.register(self._columns.close)  # a clean close: the next reader finds no WAL
            self._columns.execute("create table if not exists catalake_columns (name varchar primary key, arrow varchar)")
            self._kept = dict(self._columns.execute("select name, arrow from catalake_columns").fetchall())
        arrow = schema.to_string(show_schema_metadata=False)
        if self._kept.get(name) == arrow:
            return
        self._columns.register("catalake_empty", schema.empty_table())
        self._columns.execute(f"create or replace table main.{ansi_ident(name)} as select * from catalake_empty")
        self._columns.unregister("catalake_empty")
        self._columns.execute("insert or replace into catalake_columns values (?, ?)", [name, arrow])
        self._kept[name] = arrow

    def default_materialization(self) -> str:
        return "view"
