"""Delta tables for the warehouse.

Two interchangeable backends write standard Delta tables:

* ``delta-spark``: Spark's own Delta connector, used when its JVM classes can be loaded.
* ``delta-rs``: when they cannot (delta-spark's jars are not on the classpath and Maven may be
  unreachable), Spark executors write the Parquet data files with Spark's own Parquet writer
  and the driver commits them in one Delta transaction with ``deltalake`` (``_write_files``,
  ``_commit``). Event data never passes through the driver; only the list of written files does.

Either way every write is one Delta commit, and both kinds of table open with any Delta reader.

The warehouse root is a local folder or a URI (uris.py): on object storage (`s3://...`) Spark's
own file sources cannot be used (its `s3a://` jars are not installable here), so executors read
and write the data files through pyarrow (``FilesSource``, ``_write_files_remote``) and delta-rs
commits with the store's settings. On S3, delta-rs (1.x) makes each commit with a conditional put
(`If-None-Match`): two writers of one table never both create the same log entry, so no lock
table is needed. A partition overwrite that loses that race to another commit is made again on
the new snapshot (`_commit`): the partition ends with exactly one writer's files.

A partition run writes differently (classify.py): its executors write every table's Parquet
files themselves with pyarrow (``PartFiles``), straight into the partition folders under names
that carry the run, and the driver commits each table's files (``commit_partition``) through
delta-rs, on both backends: no Spark job per table. Files no commit took are removed by their
run (``remove_uncommitted``), or after a crash by the next run of the day (recovery.py).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
import uuid
import weakref
from dataclasses import dataclass
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.schema import Schema as DeltaSchema
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from . import uris
from .arrowschemas import arrow_schema, arrow_schema_with_metadata, spark_schema_of
from .sql import ident, string

log = logging.getLogger(__name__)

BACKENDS = ("delta-spark", "delta-rs")
_announced: set[str] = set()
_native_by_session: "weakref.WeakKeyDictionary[SparkSession, bool]" = weakref.WeakKeyDictionary()


# A day of increments commits to a table many times: a checkpoint every 10 commits keeps each load
# of the log to at most 10 JSON entries (Delta's default, 100, made an increment's loads grow to
# 0.5 s over a day of 100 increments; benchmarks/RESULTS.md)
TABLE_PROPERTIES = {"delta.checkpointInterval": "10"}


class StorageError(RuntimeError):
    """A table operation that cannot be carried out as asked."""


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
    from .spark import delta_jars_on_classpath

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


def backend_without_session(requested: str, root: str, master: str, conf: dict) -> str | None:
    """The backend when it is known without a Spark session (None: only the session can tell):
    delta-rs when asked for, on object storage, or for a local session whose settings name no
    delta-spark jars. Lets a step that only writes through delta-rs run before Spark is up."""
    if requested == "delta-rs" or (requested == "auto" and uris.is_remote(root)):
        return "delta-rs"
    if requested != "auto" or not master.startswith("local"):
        return None
    return None if _names_delta_jars(conf.get) else "delta-rs"


def choose_backend(spark: SparkSession, requested: str = "auto", root: str = "") -> str:
    """Resolve 'auto' to a concrete backend; an explicit choice is honoured (and checked). On
    object storage 'auto' is delta-rs: Spark's own connector would need the store's Hadoop jars."""
    if requested not in ("auto", *BACKENDS):
        raise StorageError(f"unknown Delta backend {requested!r}; use one of auto, {', '.join(BACKENDS)}")
    if requested == "auto" and uris.is_remote(root):
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


# --------------------------------------------------------------------------- delta-rs writer


@dataclass
class _WrittenFile:
    path: str  # relative to the table root, as Delta's add action wants it
    size: int
    partition_values: dict[str, str | None]
    num_records: int


def _partition_value(value) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


COMMIT_ATTEMPTS = 10  # a commit that keeps losing the race to other writers fails after these
STAGING_PREFIX = ".staging-"  # hidden: no Spark or Delta reader lists it
PARTITION_COLUMN = "event_date"  # the warehouse's tables are partitioned by day


def _write_files(df: DataFrame, root: str, partition_by: list[str]) -> list[_WrittenFile]:
    """Executors write the rows as Parquet (Spark's own writer) into a staging folder of the
    table; the driver then moves each file into its partition folder and reads its footer for
    the row count. No row passes through the driver."""
    if uris.is_remote(root):
        return _write_files_remote(df, root, partition_by)
    filesystem, base = filesystem_of(root)
    staging = f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    writer = df.write.mode("overwrite").option("compression", "zstd")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(f"{root.rstrip('/')}/{staging}")
    written: list[_WrittenFile] = []
    try:
        for info in filesystem.get_file_info(pafs.FileSelector(f"{base}/{staging}", recursive=True)):
            if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                continue  # _SUCCESS, .crc checksums
            folder = os.path.relpath(os.path.dirname(info.path), f"{base}/{staging}")
            parts = [] if folder == "." else folder.split("/")
            values = {k: (None if v == "__HIVE_DEFAULT_PARTITION__" else unquote(v)) for k, v in (x.split("=", 1) for x in parts)}
            rows = pq.read_metadata(info.path, filesystem=filesystem).num_rows
            if rows == 0:
                continue  # Spark writes an empty file for an empty unpartitioned DataFrame
            rel = "/".join([*parts, f"part-{uuid.uuid4().hex}.zstd.parquet"])
            filesystem.create_dir(os.path.dirname(f"{base}/{rel}"), recursive=True)
            filesystem.move(info.path, f"{base}/{rel}")
            written.append(_WrittenFile(path=rel, size=info.size, partition_values=values, num_records=rows))
    except BaseException:
        _remove_files(root, written)
        raise
    finally:
        filesystem.delete_dir(f"{base}/{staging}")
    return written


COMMIT_KEY = "catalake.commit"  # names a commit in the log's commitInfo, to find its version


def _committed_version(table: DeltaTable, commit: str) -> int:
    """The version a commit made: the snapshot a transaction starts from is not updated by it,
    and other writers may have committed since (the log's newest entries are searched)."""
    table.update_incremental()  # reads only the log entries added since the table was loaded
    for limit in (1, 50):  # almost always the newest: each entry read is one request on object storage
        for entry in table.history(limit):
            if entry.get(COMMIT_KEY) == commit:
                return int(entry["version"])
    return table.version()


def _remove_concurrent(root: str, table: DeltaTable, read_version: int, version: int, mine: set[str],
                       replace: dict) -> None:
    """After a partition overwrite committed at `version` from the snapshot `read_version`: the
    files another writer added to that partition in between were not in the snapshot, so the
    overwrite did not remove them (delta-rs checks a transaction of given actions as a blind
    append). They are removed now, in one more commit, so the partition holds exactly one
    writer's rows. A writer that commits later does the same for these files: the last one wins.
    `table` is left loaded at the newest version."""
    if version <= read_version + 1:
        return
    (column, value), = replace.items()
    filesystem, base = uris.filesystem(root)
    added: set[str] = set()
    for between in range(read_version + 1, version):
        with filesystem.open_input_stream(f"{base}/_delta_log/{between:020d}.json") as log:
            for line in log.read().splitlines():
                action = json.loads(line).get("add")
                if action and _partition_value((action.get("partitionValues") or {}).get(column)) == value:
                    added.add(unquote(action["path"]))
    for attempt in range(COMMIT_ATTEMPTS):
        table.update_incremental()
        current = pa.table(table.get_add_actions(flatten=True)).to_pydict()
        stale = [(p, n) for p, n in zip(current.get("path", []), current.get("size_bytes", [None] * len(current.get("path", []))))
                 if unquote(p) in added and unquote(p) not in mine]
        if not stale:
            return
        now = int(time.time() * 1000)
        removes = [RemoveAction(path=p, data_change=True, deletion_timestamp=now, size=n, partition_values={column: value})
                   for p, n in stale]
        try:
            table.create_write_transaction(removes, mode="append", schema=table.schema(),
                                           partition_by=list(table.metadata().partition_columns) or None)
            table.update_incremental()
            return
        except CommitFailedError:
            if attempt + 1 == COMMIT_ATTEMPTS:
                raise
            time.sleep(0.05 * (attempt + 1))


def _write_files_remote(df: DataFrame, root: str, partition_by: list[str]) -> list[_WrittenFile]:
    """Executors write the rows as Parquet with pyarrow straight into the table's partition
    folders on object storage (Spark's own writer would need the store's Hadoop jars); only
    the files' names, sizes and row counts come back. Files of failed task attempts, and of a
    failed write, are removed (their names carry the write)."""
    write_id = uuid.uuid4().hex[:12]
    schema = arrow_schema(df.schema, exclude=partition_by)
    storage = uris.storage_environment()

    def write(batches):
        from pyspark import TaskContext

        uris.adopt(storage)
        filesystem, base = uris.filesystem(root)
        context = TaskContext.get()
        task = f"{context.partitionId()}-{context.attemptNumber()}" if context is not None else "0-0"
        open_files: dict[tuple, list] = {}  # partition values -> [writer, stream, relative path, rows]
        try:
            for batch in batches:
                table = pa.Table.from_batches([batch])
                groups = [((), table)]
                if partition_by:
                    keys = table.select(partition_by).to_pylist()
                    found: dict[tuple, list[int]] = {}
                    for i, key in enumerate(keys):
                        found.setdefault(tuple(_partition_value(key[c]) for c in partition_by), []).append(i)
                    groups = [(k, table.take(pa.array(rows))) for k, rows in found.items()]
                for key, part in groups:
                    entry = open_files.get(key)
                    if entry is None:
                        folder = "/".join(f"{c}={v if v is not None else '__HIVE_DEFAULT_PARTITION__'}" for c, v in zip(partition_by, key))
                        rel = "/".join(x for x in (folder, f"part-{write_id}-{task}-{len(open_files)}.zstd.parquet") if x)
                        filesystem.create_dir(f"{base}/{rel}".rsplit("/", 1)[0], recursive=True)
                        stream = filesystem.open_output_stream(f"{base}/{rel}")
                        entry = open_files[key] = [pq.ParquetWriter(stream, schema, compression="zstd"), stream, rel, 0]
                    entry[0].write_table(part.select(schema.names).cast(schema))
                    entry[3] += part.num_rows
        finally:
            for writer, stream, _, _ in open_files.values():
                writer.close()
                stream.close()
        written = [[rel, filesystem.get_file_info(f"{base}/{rel}").size, rows, dict(zip(partition_by, key))]
                   for key, (_, _, rel, rows) in open_files.items()]
        yield pa.record_batch([pa.array([json.dumps(written)])], names=["files"])

    try:
        rows = df.mapInArrow(write, "files string").collect()
    except BaseException:
        _remove_write(root, write_id)
        raise
    written = [_WrittenFile(rel, size, values, n) for r in rows for rel, size, n, values in json.loads(r["files"])]
    _remove_write(root, write_id, keep={f.path for f in written})
    return written


def _remove_write(root: str, write_id: str, keep: set[str] = frozenset()) -> None:
    """The files of one executor write that are not in `keep` (failed attempts, a failed write)."""
    filesystem, base = filesystem_of(root)
    for info in filesystem.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True)):
        rel = info.path[len(base):].lstrip("/")
        if info.type == pafs.FileType.File and f"/part-{write_id}-" in f"/{rel}" and rel not in keep:
            filesystem.delete_file(info.path)


def filesystem_of(root: str):
    """(pyarrow filesystem, path inside it) of a table root: a local folder or a URI."""
    return uris.filesystem(root)


def _remove_files(root: str, files: Sequence[_WrittenFile]) -> None:
    filesystem, base = filesystem_of(root)
    for f in files:
        try:
            filesystem.delete_file(f"{base}/{f.path}")
        except OSError:
            pass


class PartFiles:
    """Executor side: Parquet files of one partition of several tables, written straight into
    each table's partition folder under names no other run uses (`part-<run>-<task>-<n>`). They
    are invisible to every reader until the driver commits them (`DeltaStore.commit_partition`)."""

    def __init__(self, warehouse: str, day, prefix: str):
        self.filesystem, self.base = filesystem_of(warehouse)
        self.folder = f"{PARTITION_COLUMN}={_partition_value(day)}"
        self.prefix = prefix
        self.files: dict[str, list] = {}  # table -> [[path relative to the table, size, rows], ...]
        self.count = 0

    def write(self, table: str, schema: pa.Schema, parts: Iterable[pa.Table]) -> None:
        """One Parquet file of the table's partition from its parts, streamed (memory holds one
        part at a time; each is one or more row groups)."""
        rel = f"{self.folder}/part-{self.prefix}-{self.count}.zstd.parquet"
        self.count += 1
        path = "/".join([self.base.rstrip("/"), *table.split("/"), rel])
        if table not in self.files:
            self.filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
        rows = 0
        with self.filesystem.open_output_stream(path) as out:
            with pq.ParquetWriter(out, schema, compression="zstd") as writer:
                for part in parts:
                    writer.write_table(part)
                    rows += part.num_rows
            size = out.tell()
        self.files.setdefault(table, []).append([rel, size, rows])

    def remove_written(self) -> None:
        for table, files in self.files.items():
            for rel, _, _ in files:
                try:
                    self.filesystem.delete_file("/".join([self.base.rstrip("/"), *table.split("/"), rel]))
                except OSError:
                    pass
        self.files = {}


def _commit(root: str, files: list[_WrittenFile], partition_by: list[str], replace: dict | None, overwrite: bool,
            table: DeltaTable | None = None, transaction: tuple[str, int] | None = None) -> tuple[int, DeltaTable]:
    """Driver side: one Delta transaction adding `files` (replacing the partition in `replace`);
    returns the table's new version and the table as loaded at it (or later). `table`: the
    table as just loaded (on object storage each load is several requests)."""
    if replace:
        (col, value), = replace.items()
        stray = {f.partition_values.get(col) for f in files} - {value}
        if stray:
            _remove_files(root, files)
            raise StorageError(f"overwrite of partition {col}={value} in {root} got rows for {sorted(map(str, stray))}")
    now = int(time.time() * 1000)
    actions = [
        AddAction(
            path=f.path,
            size=f.size,
            partition_values=f.partition_values,
            modification_time=now,
            data_change=True,
            stats=json.dumps({"numRecords": f.num_records}),
        )
        for f in files
    ]
    filters = [(col, "=", value) for col, value in (replace or {}).items()] or None
    commit = uuid.uuid4().hex
    for attempt in range(COMMIT_ATTEMPTS):
        if table is None or attempt:
            table = DeltaTable(root, storage_options=uris.delta_options(root))
        read_version = table.version()
        try:
            table.create_write_transaction(
                actions,
                mode="overwrite" if overwrite else "append",
                schema=table.schema(),
                partition_by=partition_by or None,
                partition_filters=filters,
                commit_properties=CommitProperties(
                    custom_metadata={COMMIT_KEY: commit},
                    app_transactions=[Transaction(*transaction)] if transaction else None),
            )
            version = _committed_version(table, commit)
            if overwrite and replace:
                _remove_concurrent(root, table, read_version, version, {f.path for f in files}, replace)
            return version, table
        except CommitFailedError:
            # another writer committed first (delta-rs retried what it could): an overwrite is
            # made again on the new snapshot, so the partition holds exactly these files; an
            # append of a transaction another writer committed meanwhile is not made again
            if transaction is not None:
                done = DeltaTable(root, storage_options=uris.delta_options(root)).transaction_version(transaction[0])
                if done is not None and done >= transaction[1]:
                    raise AlreadyCommitted(f"{root}: transaction {transaction[0]} {transaction[1]} is committed") from None
            if attempt + 1 == COMMIT_ATTEMPTS:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


class AlreadyCommitted(StorageError):
    """An append whose application transaction another writer committed first."""


# --------------------------------------------------------------------------- the store


def _local_path(uri: str) -> str:
    parsed = urlparse(uri)
    return parsed.path if parsed.scheme == "file" else uri


def _file_list(table: DeltaTable, root: str, partition_by: list[str]) -> list:
    """[uri, {partition column: value}] of every file of the table's snapshot."""
    actions = pa.table(table.get_add_actions(flatten=True)).to_pydict()  # arro3 -> pyarrow
    paths = actions.get("path", [])
    values = [{c: _partition_value(actions[f"partition.{c}"][i]) for c in partition_by} for i in range(len(paths))]
    return [[p if "://" in p else uris.join(root, p), v] for p, v in zip(paths, values)]


class DeltaStore:
    """The warehouse: named Delta tables (``catalog/messages``) under one root."""

    def __init__(self, spark: SparkSession | Callable[[], SparkSession], root: str | os.PathLike, backend: str = "auto",
                 *, master: str | None = None, conf: dict | None = None):
        """`spark`: the session, or a function starting it when first needed; with the session's
        `master` and `conf`, a store whose backend they decide (backend_without_session) does
        not wait for Spark until a table is read or written through it."""
        from .spark import is_session

        self._spark = spark if is_session(spark) else None
        self._start = None if self._spark is not None else spark
        self._configured = False
        self.root = uris.normalize(root)
        self.options = uris.delta_options(self.root)
        self._loaded: dict[str, DeltaTable] | None = None  # see loaded_once
        known = backend_without_session(backend, self.root, master, conf or {}) if master is not None else None
        self.backend = known or choose_backend(self._session(), backend, self.root)
        if self._spark is not None:
            self.spark  # noqa: B018 - the session's settings for this backend, before any write

    def _session(self) -> SparkSession:
        if self._spark is None:
            self._spark = self._start()
        return self._spark

    @property
    def spark(self) -> SparkSession:
        """The session, started now if it was not, with this backend's settings."""
        session = self._session()
        if not self._configured:
            self._configured = True
            if self.backend == "delta-rs":
                # Delta's Parquet timestamps are INT64 microseconds (Spark's default is INT96)
                session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        return session

    # -- naming
    def path(self, name: str) -> str:
        return uris.join(self.root, *name.split("/"))

    def exists(self, name: str) -> bool:
        if self._loaded is not None and name in self._loaded:
            return True
        return DeltaTable.is_deltatable(self.path(name), storage_options=self.options)

    def _table(self, name: str) -> DeltaTable:
        loaded = self._loaded
        if loaded is not None and name in loaded:
            return loaded[name]
        try:
            table = DeltaTable(self.path(name), storage_options=self.options)
        except Exception as exc:  # noqa: BLE001 - delta-rs says "not found" differently per store
            if isinstance(exc, TableNotFoundError) or not self.exists(name):
                raise StorageError(f"no Delta table {name!r} at {self.path(name)}") from None
            raise
        if loaded is not None:
            loaded[name] = table
        return table

    @contextmanager
    def loaded_once(self) -> Iterator[None]:
        """Within the block each table's log is loaded once and the same snapshot serves every
        read of it (a partition run's sync, commit and count: on object storage each load is
        several requests); a commit brings it up to date, and creating or evolving a table
        drops it."""
        self._loaded = {}
        try:
            yield
        finally:
            self._loaded = None

    def _forget(self, name: str) -> None:
        if self._loaded is not None:
            self._loaded.pop(name, None)

    # -- create
    def create(
        self,
        name: str,
        schema: StructType,
        partition_by: Sequence[str] = (),
        description: str | None = None,
    ) -> bool:
        """Create the table if it does not exist. Returns True when it was created.

        An existing table with a different schema is an error here; evolving a table is the
        caller's decision, never a side effect of create.
        """
        path = self.path(name)
        self._forget(name)
        if self.exists(name):
            current = self.spark_schema(name)
            if current.simpleString() != schema.simpleString():
                raise StorageError(
                    f"table {name!r} exists with schema {current.simpleString()}, asked for {schema.simpleString()}"
                )
            return False
        if not uris.is_remote(path):
            os.makedirs(path, exist_ok=True)
        if self.backend == "delta-spark":
            from delta.tables import DeltaTable as SparkDeltaTable

            builder = SparkDeltaTable.createIfNotExists(self.spark).location(path).addColumns(schema)
            if partition_by:
                builder = builder.partitionedBy(*partition_by)
            if description:
                builder = builder.comment(description)
            for key, value in TABLE_PROPERTIES.items():
                builder = builder.property(key, value)
            builder.execute()
        else:
            table_schema = arrow_schema_with_metadata(schema)
            try:
                create_table_with_add_actions(
                    path,
                    DeltaSchema.from_arrow(table_schema),
                    [],
                    mode="error",
                    partition_by=list(partition_by) or None,
                    name=name.replace("/", "."),
                    description=description,
                    configuration=TABLE_PROPERTIES,
                    storage_options=self.options,
                )
            except Exception:  # noqa: BLE001 - another run of the day created it first: checked as above
                self._forget(name)
                if not self.exists(name):
                    raise
                return self.create(name, schema, partition_by, description)
        return True

    def add_columns(self, name: str, schema: StructType) -> None:
        """Evolve the table to `schema` (its columns plus new nullable ones, at any depth) in one
        metadata-only commit. Which changes are allowed is decided before (platform.evolution)."""
        self._forget(name)
        if self.backend == "delta-spark":
            (
                self.spark.createDataFrame([], schema).write.format("delta")
                .mode("append").option("mergeSchema", "true").save(self.path(name))
            )
            return
        write_deltalake(self.path(name), arrow_schema_with_metadata(schema).empty_table(), mode="append", schema_mode="merge",
                        storage_options=self.options)

    # -- writes
    def append(self, name: str, df: DataFrame) -> None:
        self._write(name, df, mode="append")

    def overwrite(self, name: str, df: DataFrame) -> None:
        """Replace the whole table's content in one commit."""
        self._write(name, df, mode="overwrite")

    def overwrite_rows(self, name: str, rows: Sequence[dict]) -> None:
        """Replace a small metadata table's content (the catalog) with rows built on the driver,
        in one commit: no Spark job (and no wait for Spark) where delta-rs writes. Never for
        event data, which executors write."""
        if self.backend == "delta-spark":
            self.overwrite(name, self.spark.createDataFrame(list(rows), self.spark_schema(name)))
            return
        table = self._table(name)
        schema = arrow_schema_with_metadata(_spark_schema(table))
        write_deltalake(table, pa.Table.from_pylist(list(rows), schema=schema), mode="overwrite",
                        storage_options=self.options)

    def overwrite_partition(self, name: str, df: DataFrame, column: str, value) -> None:
        """Replace one partition (replaceWhere semantics); other partitions are untouched.

        Rows outside the partition are an error, and an empty DataFrame empties the partition.
        """
        self._write(name, df, mode="overwrite", replace={column: _partition_value(value)})

    def _write(self, name: str, df: DataFrame, mode: str, replace: dict | None = None) -> None:
        self.spark  # noqa: B018 - the session's settings for this backend (a lazy store's first use)
        table = self._table(name)  # one snapshot for schema, partitioning and the check below
        schema = _spark_schema(table)
        partition_by = list(table.metadata().partition_columns)
        if replace and next(iter(replace)) not in partition_by:
            raise StorageError(f"{next(iter(replace))!r} is not a partition column of {name!r}")
        missing = [f.name for f in schema if f.name not in df.columns]
        extra = [c for c in df.columns if c not in schema.fieldNames()]
        if missing or extra:
            raise StorageError(f"writing {name!r}: columns missing {missing}, not in table {extra}")
        # Align order and types with the table. Where only nullability differs nothing is cast:
        # rows read back from Parquet (a scratch spill) are nullable at every level, and Spark
        # cannot cast a nullable array element to a non-null one. The commit keeps the table's
        # own schema either way.
        given = {f.name: f.dataType for f in df.schema}
        df = df.select([
            F.col(ident(f.name)) if given[f.name].simpleString() == f.dataType.simpleString()
            else F.col(ident(f.name)).cast(f.dataType).alias(f.name)
            for f in schema
        ])
        path = self.path(name)
        if self.backend == "delta-spark":
            writer = df.write.format("delta").mode(mode)
            if replace:
                (col, val), = replace.items()
                writer = writer.option("replaceWhere", f"{ident(col)} = {string(val)}")
            writer.save(path)
            return
        files = _write_files(df, path, partition_by)
        _commit(path, files, partition_by, replace, overwrite=mode == "overwrite")

    def commit_partition(self, name: str, files: Sequence[Sequence], column: str, value, *,
                         keep_on_failure: bool = False) -> "Committed":
        """Replace partition `column=value` of a table with Parquet files already written into it
        (PartFiles: [path relative to the table, size, rows]), in one Delta commit; no files
        empties the partition. The files are removed when the commit fails, unless
        `keep_on_failure` (a replay's journal names them). Returns the new version and the
        partition's rows in the table as loaded after the commit (no log read again)."""
        written = [_WrittenFile(path, size, {column: _partition_value(value)}, rows) for path, size, rows in files]
        path = self.path(name)
        try:
            table = self._table(name)
            if column not in table.metadata().partition_columns:
                raise StorageError(f"{column!r} is not a partition column of {name!r}")
            version, table = _commit(path, written, [column], {column: _partition_value(value)}, overwrite=True,
                                     table=table)
        except BaseException:
            if not keep_on_failure:
                _remove_files(path, written)
            raise
        return Committed(version, _snapshot_rows(table, column, value))

    def append_partition(self, name: str, files: Sequence[Sequence], column: str, value, *,
                         keep_on_failure: bool = False, transaction: tuple[str, int] | None = None) -> "Committed | None":
        """Add Parquet files already written into partition `column=value` (PartFiles) to a
        table, in one Delta commit, keeping the rows there. The files are removed when the commit
        fails, unless `keep_on_failure`. `transaction`: (application id, version), recorded in
        the same commit (Delta's idempotent writes; transaction_version). Returns the new version
        and the partition's rows as loaded after the commit, or None when another writer committed
        that transaction first (this one's files removed)."""
        written = [_WrittenFile(path, size, {column: _partition_value(value)}, rows) for path, size, rows in files]
        path = self.path(name)
        try:
            version, table = _commit(path, written, [column], None, overwrite=False, transaction=transaction,
                                     table=self._table(name) if self._loaded is not None else None)
            return Committed(version, _snapshot_rows(table, column, value))
        except AlreadyCommitted:
            _remove_files(path, written)  # the rows are in the table: another run's copy of them
            return None
        except BaseException:
            if not keep_on_failure:
                _remove_files(path, written)
            raise

    def transaction_version(self, name: str, app_id: str) -> int | None:
        """The last version of application transaction `app_id` committed to a table, or None."""
        if not self.exists(name):
            return None
        return self._table(name).transaction_version(app_id)

    def remove_uncommitted(self, run: str, day, names: Sequence[str], keep: Iterable[str] = ()) -> None:
        """Remove the files run `run` wrote into partition `day` of these tables that no commit
        references (a failed run, a failed or duplicate task attempt), but for the file names in
        `keep` (those a replay's journal names: recovery.remove_orphans). Other runs' files are
        never touched: every file name carries its run."""
        keep = set(keep)
        folder = f"{PARTITION_COLUMN}={_partition_value(day)}"
        prefix = f"part-{run}-"
        for name in names:
            filesystem, base = filesystem_of(f"{self.path(name)}/{folder}")
            if filesystem.get_file_info(base).type != pafs.FileType.Directory:
                continue
            mine = [i for i in filesystem.get_file_info(pafs.FileSelector(base))
                    if i.base_name.startswith(prefix) and i.base_name not in keep]
            if not mine:
                continue
            live = {os.path.basename(u) for u in self._table(name).file_uris()} if self.exists(name) else set()
            for info in mine:
                if info.base_name not in live:
                    filesystem.delete_file(info.path)

    def has_partition(self, name: str, day: dt.date) -> bool:
        """Whether the table may hold rows of `day` (a cheap folder check on local warehouses; a
        false positive only costs an overwrite with nothing)."""
        filesystem, path = uris.filesystem(uris.join(self.path(name), f"{PARTITION_COLUMN}={day.isoformat()}"))
        return filesystem.get_file_info(path).type == pafs.FileType.Directory

    def partition_rows(self, name: str, column: str, value) -> int:
        """Rows in one partition, from the Delta log's per-file statistics (counted by Spark
        where a file has none)."""
        rows = _snapshot_rows(self._table(name), column, value)
        if rows is None:
            return self.read(name).where(F.col(column) == F.lit(_partition_value(value))).count()
        return rows

    # -- reads
    def partition_columns(self, name: str) -> list[str]:
        return list(self._table(name).metadata().partition_columns)

    def spark_schema(self, name: str) -> StructType:
        return _spark_schema(self._table(name))

    def read(self, name: str) -> DataFrame:
        """The table's current snapshot as a Spark DataFrame."""
        if self.backend == "delta-spark":
            return self.spark.read.format("delta").load(self.path(name))
        table = self._table(name)
        schema = _spark_schema(table)
        if uris.is_remote(self.root):
            from .filesource import NAME, register

            files = _file_list(table, self.path(name), list(table.metadata().partition_columns))
            if not files:
                return self.spark.createDataFrame([], schema)
            register(self.spark)
            return (self.spark.read.format(NAME).schema(schema)
                    .option("schema", schema.json()).option("files", json.dumps(files)).load())
        files = [_local_path(u) for u in table.file_uris()]
        if not files:
            return self.spark.createDataFrame([], schema)
        # Only the snapshot's files: a plain directory read would also see files that an
        # overwrite removed. The explicit schema keeps partition column types and order.
        df = self.spark.read.option("basePath", self.path(name)).schema(schema).parquet(*files)
        return df.select(schema.fieldNames())

    def read_arrow(self, name: str) -> pa.Table:
        return self._table(name).to_pyarrow_table()

    def history(self, name: str) -> list[dict]:
        """Commits, newest first (Delta's own commit info)."""
        return self._table(name).history()

    def version(self, name: str) -> int:
        return self._table(name).version()


@dataclass(frozen=True)
class Committed:
    version: int
    rows: int | None  # the partition's rows after the commit (None: a file without statistics)


def _snapshot_rows(table: DeltaTable, column: str, value) -> int | None:
    """Rows of one partition in a loaded snapshot, from the per-file statistics of its log."""
    value = _partition_value(value)
    actions = pa.table(table.get_add_actions(flatten=True)).to_pydict()  # arro3 -> pyarrow
    parts = actions.get(f"partition.{column}", [])
    counts = [n for n, v in zip(actions.get("num_records", []), parts) if _partition_value(v) == value]
    return None if any(n is None for n in counts) else int(sum(counts))



def _spark_schema(table: DeltaTable) -> StructType:
    return spark_schema_of(table.schema().to_json())


__all__ = ["BACKENDS", "DeltaStore", "StorageError", "choose_backend", "native_delta_available"]
