"""The Delta backends of the warehouse, and the choice between them.

Two interchangeable backends write standard Delta tables:

* ``delta-spark``: Spark's own Delta connector, used when its JVM classes can be loaded.
* ``delta-rs``: when they cannot (delta-spark's jars are not on the classpath and Maven may be
  unreachable), Spark executors write the Parquet data files with Spark's own Parquet writer
  and the driver commits them in one Delta transaction with ``deltalake`` (files.py,
  commit.py). Event data never passes through the driver; only the list of written files does.

Either way every write is one Delta commit, and both kinds of table open with any Delta reader.
Each backend is a small class (``DeltaSparkBackend``, ``DeltaRsBackend``) with the few
operations they do differently; the store (store.py) does the rest with delta-rs on both.
"""

from __future__ import annotations

import json
import logging
import uuid
import weakref
from abc import ABC, abstractmethod
from typing import Callable, Sequence
from urllib.parse import urlparse

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.schema import Schema as DeltaSchema
from deltalake.transaction import create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from ..errors import StorageError
from ..sql import ident, string
from ..uris import Location
from .arrowschemas import arrow_schema_with_metadata, spark_schema_of
from .commit import NO_HOOKS, commit
from .files import partition_value, write_files

log = logging.getLogger(__name__)

BACKENDS = ("delta-spark", "delta-rs")
_announced: set[str] = set()
_native_by_session: "weakref.WeakKeyDictionary[SparkSession, bool]" = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------- backend choice


def native_delta_available(spark: SparkSession) -> bool:
    """True when Spark can load its Delta data source (delta-spark jars present); probed once per
    session, and only where the jars could be (the probe is the session's first query: seconds)."""
    if spark not in _native_by_session:
        _native_by_session[spark] = _delta_jars_possible(spark) and _probe_delta_source(spark)
    return _native_by_session[spark]


def _delta_jars_possible(spark: SparkSession) -> bool:
    """False only for a local session whose classpath and settings name no delta-spark jars."""
    try:
        conf = spark.sparkContext.getConf()
    except Exception:  # noqa: BLE001 - Spark Connect: the server's classpath is not ours to see
        return True
    return _names_delta_jars(lambda key: conf.get(key, ""))


def _names_delta_jars(setting) -> bool:
    """Whether a local session's settings (`setting`: key -> value or None) or its classpath
    bring delta-spark's jars."""
    from ..spark import delta_jars_on_classpath

    named = " ".join(str(setting(k) or "") for k in ("spark.jars.packages", "spark.driver.extraClassPath"))
    return "delta" in named or delta_jars_on_classpath(str(setting("spark.jars") or ""))


def _probe_delta_source(spark: SparkSession) -> bool:
    probe = f"/nonexistent/catalake-delta-probe-{uuid.uuid4().hex}"
    try:
        spark.read.format("delta").load(probe).schema  # noqa: B018 - forces analysis
    except Exception as exc:  # noqa: BLE001 - Spark raises several exception families here
        text = str(exc)
        return not ("DATA_SOURCE_NOT_FOUND" in text or "Failed to find data source" in text)
    return True


def backend_without_session(requested: str, root: Location, master: str, conf: dict) -> str | None:
    """The backend when it is known without a Spark session (None: only the session can tell):
    delta-rs when asked for, on object storage, or for a local session whose settings name no
    delta-spark jars. Lets a step that only writes through delta-rs run before Spark is up."""
    if requested == "delta-rs" or (requested == "auto" and root.remote):
        return "delta-rs"
    if requested != "auto" or not master.startswith("local"):
        return None
    return None if _names_delta_jars(conf.get) else "delta-rs"


def choose_backend(spark: SparkSession, requested: str = "auto", root: Location | None = None) -> str:
    """Resolve 'auto' to a concrete backend; an explicit choice is honoured (and checked). On
    object storage 'auto' is delta-rs: Spark's own connector would need the store's Hadoop jars."""
    if requested not in ("auto", *BACKENDS):
        raise StorageError(f"unknown Delta backend {requested!r}; use one of auto, {', '.join(BACKENDS)}")
    if requested == "auto" and root is not None and root.remote:
        return "delta-rs"
    native = native_delta_available(spark) if requested in ("auto", "delta-spark") else False
    if requested == "delta-spark" and not native:
        raise StorageError(
            "CATALAKE_DELTA_BACKEND=delta-spark but Spark cannot load the Delta data source: "
            "put delta-spark's jars on the classpath (spark.jars) or use 'auto'"
        )
    backend = "delta-spark" if native else "delta-rs"
    if backend not in _announced:
        _announced.add(backend)
        reason = "Delta JVM classes found" if native else "Delta JVM classes not loadable; Spark writes Parquet, delta-rs commits"
        log.info("catalake storage backend: %s (%s)", backend, reason)
    return backend


# --------------------------------------------------------------------------- the backends


class Backend(ABC):
    """What the two backends do differently. Each works on a table's `location`; the
    store names the tables, holds their snapshots and checks every write before it asks."""

    name: str  # one of BACKENDS

    def __init__(self, session: Callable[[], SparkSession], options: dict):
        self.session = session  # the store's session, started and configured when first called
        self.options = options  # delta-rs storage options of the warehouse

    def configure(self, session: SparkSession) -> None:
        """Set what the backend needs in the session, once, before its first use (nothing by default)."""
        return None

    @abstractmethod
    def create(self, location: Location, name: str, schema: StructType, partition_by: Sequence[str],
               description: str | None, properties: dict) -> bool:
        """Create the empty table; False when another writer created it first."""

    @abstractmethod
    def add_columns(self, location: Location, schema: StructType) -> None:
        """Evolve the table to `schema` in one metadata-only commit."""

    @abstractmethod
    def set_properties(self, location: Location, table: DeltaTable, properties: dict[str, str]) -> None:
        """Set table properties in one metadata-only commit (`table`: its snapshot)."""

    @abstractmethod
    def write(self, df: DataFrame, location: Location, partition_by: list[str], mode: str, replace: dict | None) -> None:
        """Write `df` (aligned with the table) in one commit: appended (`mode` "append"), or
        replacing the whole table or the partition in `replace` ("overwrite")."""

    @abstractmethod
    def overwrite_rows(self, table: DeltaTable, location: Location, rows: list[dict]) -> None:
        """Replace a small table's content with rows built on the driver, in one commit."""

    @abstractmethod
    def read(self, location: Location, load: Callable[[], DeltaTable]) -> DataFrame:
        """The table's current snapshot as a Spark DataFrame (`load`: the table's snapshot)."""


class DeltaSparkBackend(Backend):
    """Spark's own Delta connector writes, evolves and reads the tables."""

    name = "delta-spark"

    def create(self, location: Location, name: str, schema: StructType, partition_by: Sequence[str],
               description: str | None, properties: dict) -> bool:
        from delta.tables import DeltaTable as SparkDeltaTable

        builder = SparkDeltaTable.createIfNotExists(self.session()).location(location.uri).addColumns(schema)
        if partition_by:
            builder = builder.partitionedBy(*partition_by)
        if description:
            builder = builder.comment(description)
        for key, value in properties.items():
            builder = builder.property(key, value)
        builder.execute()
        return True

    def add_columns(self, location: Location, schema: StructType) -> None:
        (
            self.session().createDataFrame([], schema).write.format("delta")
            .mode("append").option("mergeSchema", "true").save(location.uri)
        )

    def set_properties(self, location: Location, table: DeltaTable, properties: dict[str, str]) -> None:
        settings = ", ".join(f"{string(k)} = {string(v)}" for k, v in properties.items())
        self.session().sql(f"ALTER TABLE delta.`{location.uri}` SET TBLPROPERTIES ({settings})")

    def write(self, df: DataFrame, location: Location, partition_by: list[str], mode: str, replace: dict | None) -> None:
        writer = df.write.format("delta").mode(mode)
        if replace:
            (col, val), = replace.items()
            writer = writer.option("replaceWhere", f"{ident(col)} = {string(val)}")
        writer.save(location.uri)

    def overwrite_rows(self, table: DeltaTable, location: Location, rows: list[dict]) -> None:
        self.write(self.session().createDataFrame(rows, spark_schema(table)), location, [], "overwrite", None)

    def read(self, location: Location, load: Callable[[], DeltaTable]) -> DataFrame:
        return self.session().read.format("delta").load(location.uri)


class DeltaRsBackend(Backend):
    """Spark executors (or the driver, for a few rows) write Parquet files; delta-rs commits them
    and reads the log. Tables are read by Spark from the snapshot's files."""

    name = "delta-rs"

    def configure(self, session: SparkSession) -> None:
        # Delta's Parquet timestamps are INT64 microseconds (Spark's default is INT96)
        session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")

    def create(self, location: Location, name: str, schema: StructType, partition_by: Sequence[str],
               description: str | None, properties: dict) -> bool:
        table_schema = arrow_schema_with_metadata(schema)
        try:
            create_table_with_add_actions(
                location.uri,
                DeltaSchema.from_arrow(table_schema),
                [],
                mode="error",
                partition_by=list(partition_by) or None,
                name=name.replace("/", "."),
                description=description,
                configuration=properties,
                storage_options=self.options,
            )
        except Exception:
            if not DeltaTable.is_deltatable(location.uri, storage_options=self.options):
                raise
            return False
        return True

    def add_columns(self, location: Location, schema: StructType) -> None:
        write_deltalake(location.uri, arrow_schema_with_metadata(schema).empty_table(), mode="append", schema_mode="merge",
                        storage_options=self.options, post_commithook_properties=NO_HOOKS)

    def set_properties(self, location: Location, table: DeltaTable, properties: dict[str, str]) -> None:
        table.alter.set_table_properties(properties, post_commithook_properties=NO_HOOKS)

    def write(self, df: DataFrame, location: Location, partition_by: list[str], mode: str, replace: dict | None) -> None:
        files = write_files(df, location, partition_by)
        commit(location, files, partition_by, replace, overwrite=mode == "overwrite")

    def overwrite_rows(self, table: DeltaTable, location: Location, rows: list[dict]) -> None:
        schema = arrow_schema_with_metadata(spark_schema(table))
        write_deltalake(table, pa.Table.from_pylist(rows, schema=schema), mode="overwrite",
                        storage_options=self.options, post_commithook_properties=NO_HOOKS)

    def read(self, location: Location, load: Callable[[], DeltaTable]) -> DataFrame:
        table = load()
        schema = spark_schema(table)
        if location.remote:
            from .filesource import NAME, register

            files = _file_list(table, list(table.metadata().partition_columns))
            if not files:
                return self.session().createDataFrame([], schema)
            register(self.session())
            return (self.session().read.format(NAME).schema(schema)
                    .option("schema", schema.json()).option("table", location.uri).option("files", json.dumps(files)).load())
        files = [_local_path(u) for u in table.file_uris()]
        if not files:
            return self.session().createDataFrame([], schema)
        # Only the snapshot's files: a plain directory read would also see files that an
        # overwrite removed. The explicit schema keeps partition column types and order.
        df = self.session().read.option("basePath", location.uri).schema(schema).parquet(*files)
        return df.select(schema.fieldNames())


def backend_for(name: str, session: Callable[[], SparkSession], options: dict) -> Backend:
    """The backend `name` (one of BACKENDS) for a store's session and storage options."""
    return {b.name: b for b in (DeltaSparkBackend, DeltaRsBackend)}[name](session, options)


def spark_schema(table: DeltaTable) -> StructType:
    return spark_schema_of(table.schema().to_json())


def _local_path(uri: str) -> str:
    parsed = urlparse(uri)
    return parsed.path if parsed.scheme == "file" else uri


def _file_list(table: DeltaTable, partition_by: list[str]) -> list:
    """[path as the log names it, {partition column: value}] of every file of the table's snapshot."""
    actions = pa.table(table.get_add_actions(flatten=True)).to_pydict()  # arro3 -> pyarrow
    paths = actions.get("path", [])
    values = [{c: partition_value(actions[f"partition.{c}"][i]) for c in partition_by} for i in range(len(paths))]
    return [[p, v] for p, v in zip(paths, values)]


__all__ = ["BACKENDS", "Backend", "DeltaRsBackend", "DeltaSparkBackend", "backend_for", "backend_without_session",
           "choose_backend", "native_delta_available"]
