"""Delta tables for the warehouse: ``DeltaStore``, named tables under one root (a local folder
or a URI, held as a ``uris.Location``).

The store names the tables, holds their snapshots (``loaded_once``) and checks every write; its
backend (backends.py: delta-spark or delta-rs) creates, evolves, writes and reads them. Either
way every write is one Delta commit. On object storage delta-rs commits with the store's
settings (commit.py).

A partition run's executors write every table's Parquet files themselves (files.py:
``PartFiles``), and the driver commits each table's files (``commit_partition``,
``append_partition``) through delta-rs, on both backends: no Spark job per table. Files no commit
took are removed by their run (``remove_uncommitted``), or after a crash by the next run of the
day (runs/recovery.py).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession, functions as F
from pyspark.sql.types import StructType

from ..defaults import COMMIT_THREADS, DELTA_BACKEND
from ..errors import StorageError
from ..sql import ident
from ..uris import Location
from .appends import Tip, append, honoured, new_commit_key, tip_of
from .arrowschemas import arrow_schema, schema_value
from .backends import backend_for, backend_without_session, choose_backend, spark_schema
from .commit import AlreadyCommitted, commit, commit_compaction, commit_statistics
from .files import PARTITION_COLUMN, PartFile, WrittenFile, partition_value, read_snapshot, remove_files
from .statistics import stats_json, table_properties

# Delta's default: increments append at the tip without loading the log (appends.py), and a
# checkpoint costs about 4 requests a commit whatever the interval (maintenance/checkpoints.py),
# so the interval only bounds what a reader loads after the last checkpoint
TABLE_PROPERTIES = {"delta.checkpointInterval": "100"}


class DeltaStore:
    """The warehouse: named Delta tables (``catalog/messages``) under one root."""

    def __init__(self, spark: SparkSession | Callable[[], SparkSession], root: str | os.PathLike, backend: str = DELTA_BACKEND,
                 *, master: str | None = None, conf: dict | None = None, commit_threads: int = COMMIT_THREADS):
        """`spark`: the session, or a function starting it when first needed; with the session's
        `master` and `conf`, a store whose backend they decide (backend_without_session) does
        not wait for Spark until a table is read or written through it. `commit_threads`: how
        many tables a run loads and commits at once (CATALAKE_COMMIT_THREADS)."""
        from ..spark import is_session

        self._spark = spark if is_session(spark) else None
        self._start = None if self._spark is not None else spark
        self._configured = False
        self.location = Location.of(root)  # the warehouse root, opened once: every table is below it
        self.commit_threads = max(1, commit_threads)
        self.options = self.location.delta_options()
        self._loaded: dict[str, DeltaTable] | None = None  # see loaded_once
        known = backend_without_session(backend, self.location, master, conf or {}) if master is not None else None
        self._backend = backend_for(known or choose_backend(self._session(), backend, self.location), lambda: self.spark,
                                    self.options)
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
            self._backend.configure(session)
        return session

    @property
    def root(self) -> str:
        """The warehouse root as shown and configured: a local path or a URI."""
        return self.location.uri

    @property
    def backend(self) -> str:
        """The backend's name: one of backends.BACKENDS."""
        return self._backend.name

    # -- naming
    def table_location(self, name: str) -> Location:
        """Where table `name` is, on the warehouse's filesystem."""
        return self.location.child(*name.split("/"))

    def path(self, name: str) -> str:
        return self.table_location(name).uri

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
        except Exception as exc:
            if isinstance(exc, TableNotFoundError) or not self.exists(name):
                raise StorageError(f"no Delta table {name!r} at {self.path(name)}") from None
            raise
        if loaded is not None:
            loaded[name] = table
        return table

    @contextmanager
    def loaded_once(self, names: Sequence[str] = (), threads: int = 1) -> Iterator[None]:
        """Within the block each table's log is loaded once and the same snapshot serves every
        read of it (a partition run's sync, commit and count: on object storage each load is
        several requests); a commit brings it up to date, and creating or evolving a table
        drops it. The existing tables among `names` are loaded first, by `threads` threads
        (delta-rs releases the GIL for part of a load: 5.3 ms a table alone, 4 ms in threads)."""
        self._loaded = {}
        try:
            if names:
                with ThreadPoolExecutor(max(1, min(threads, len(names)))) as pool:
                    list(pool.map(self._preload, names))
            yield
        finally:
            self._loaded = None

    def _preload(self, name: str) -> None:
        try:
            self._table(name)
        except StorageError:
            pass  # not created yet: the sync creates it

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
        location = self.table_location(name)
        self._forget(name)
        if self.exists(name):
            current = self.spark_schema(name)
            if current.simpleString() != schema.simpleString():
                raise StorageError(
                    f"table {name!r} exists with schema {current.simpleString()}, asked for {schema.simpleString()}"
                )
            return False
        if not location.remote:
            os.makedirs(location.path, exist_ok=True)
        properties = {**TABLE_PROPERTIES, **table_properties(arrow_schema(schema), partition_by)}
        if not self._backend.create(location, name, schema, partition_by, description, properties):
            # another run of the day created it first: checked as above
            return self.create(name, schema, partition_by, description)
        return True

    def add_columns(self, name: str, schema: StructType) -> None:
        """Evolve the table to `schema` (its columns plus new nullable ones, at any depth) in one
        metadata-only commit. Which changes are allowed is decided before (platform.evolution).
        The new columns' leaves become stats columns where the bound leaves room (one more
        commit of the table's properties)."""
        self._forget(name)
        location = self.table_location(name)
        self._backend.add_columns(location, schema)
        self.update_stats_columns(name, schema)

    def update_stats_columns(self, name: str, schema: StructType | None = None) -> bool:
        """Record the table's stats columns (statistics.py) in its properties when they are not
        what its schema makes them; returns whether a commit was made."""
        table = self._table(name)
        wanted = table_properties(arrow_schema(schema or spark_schema(table)), table.metadata().partition_columns)
        if all(table.metadata().configuration.get(k) == v for k, v in wanted.items()):
            return False
        self._forget(name)
        self._backend.set_properties(self.table_location(name), table, wanted)
        return True

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
        self._backend.overwrite_rows(self._table(name), self.table_location(name), list(rows))

    def overwrite_partition(self, name: str, df: DataFrame, column: str, value) -> None:
        """Replace one partition (replaceWhere semantics); other partitions are untouched.

        Rows outside the partition are an error, and an empty DataFrame empties the partition.
        """
        self._write(name, df, mode="overwrite", replace={column: partition_value(value)})

    def _write(self, name: str, df: DataFrame, mode: str, replace: dict | None = None) -> None:
        self.spark  # noqa: B018 - the session's settings for this backend (a lazy store's first use)
        table = self._table(name)  # one snapshot for schema, partitioning and the check below
        schema = spark_schema(table)
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
        self._backend.write(df, self.table_location(name), partition_by, mode, replace)

    def commit_partition(self, name: str, files: Sequence[PartFile], column: str, value, *,
                         keep_on_failure: bool = False) -> "Committed":
        """Replace partition `column=value` of a table with Parquet files already written into it
        (`PartFile`s), in one Delta commit; no files
        empties the partition. The files are removed when the commit fails, unless
        `keep_on_failure` (a replay's journal names them). Returns the new version and the
        partition's rows in the table as loaded after the commit (no log read again)."""
        return self.commit_partitions(name, {value: files}, column, keep_on_failure=keep_on_failure)[value]

    def commit_partitions(self, name: str, files: Mapping[Any, Sequence[PartFile]], column: str, *,
                          keep_on_failure: bool = False) -> "dict[Any, Committed]":
        """Replace partitions `column=value` of a table, each with the Parquet files already
        written into it (`files`: value -> PartFiles; none empties that partition), in one Delta
        commit: a run of a range of days commits each table once. The files are removed when the
        commit fails, unless `keep_on_failure`. Returns, per value, the new version and the
        partition's rows and files in the table as loaded after the commit (no log read again)."""
        written = [WrittenFile(f.path, f.size, {column: partition_value(value)}, f.rows, f.stats)
                   for value, part in files.items() for f in map(_part_file, part)]
        location = self.table_location(name)
        try:
            table = self._table(name)
            if column not in table.metadata().partition_columns:
                raise StorageError(f"{column!r} is not a partition column of {name!r}")
            version, table, reloaded = commit(location, written, [column], {column: [partition_value(v) for v in files]},
                                              overwrite=True, table=table)
        except BaseException:
            if not keep_on_failure:
                remove_files(location, written)
            raise
        if reloaded:
            counts = _partition_counts(table, column)
            return {value: Committed(version, *counts.get(partition_value(value), (0, 0))) for value in files}
        self._forget(name)  # the snapshot before the commit: loaded again when next read
        # each partition is these files
        return {value: Committed(version, _rows([w for w in written if w.partition_values[column] == partition_value(value)]),
                                 len(part)) for value, part in files.items()}

    def append_partition(self, name: str, files: Sequence[PartFile], column: str, value, *,
                         keep_on_failure: bool = False, transaction: tuple[str, int] | None = None,
                         staged: Sequence[PartFile] = ()) -> "Committed | None":
        """Add Parquet files already written into partition `column=value` (PartFiles) to a
        table, in one Delta commit, keeping the rows there. The files are removed when the commit
        fails, unless `keep_on_failure`. `transaction`: (application id, version), recorded in
        the same commit (Delta's idempotent writes; transaction_version). `staged`: files of
        earlier runs added in the same commit, never removed here (the day's ledger names them).
        Returns the new version and the partition's rows as loaded after the commit, or None when
        another writer committed that transaction first (this one's files removed)."""
        values = {column: partition_value(value)}
        own = [WrittenFile(f.path, f.size, values, f.rows, f.stats) for f in map(_part_file, files)]
        written = [WrittenFile(f.path, f.size, values, f.rows, f.stats) for f in map(_part_file, staged)] + own
        location = self.table_location(name)
        try:
            version, table, reloaded = commit(location, written, [column], None, overwrite=False, transaction=transaction,
                                              table=self._table(name) if self._loaded is not None else None)
            if reloaded:
                return _committed(version, table, column, value)
            self._forget(name)  # the snapshot before the commit: loaded again when next read
            before, added = _committed(version, table, column, value), _rows(written)
            return Committed(version, None if before.rows is None or added is None else before.rows + added,
                             before.files + len(written))
        except AlreadyCommitted:
            remove_files(location, own)  # the rows are in the table: another run's copy of them
            return None
        except BaseException:
            if not keep_on_failure:
                remove_files(location, own)
            raise

    def honours_blind_appends(self, name: str) -> int | None:
        """The table's checkpoint interval when it takes appends at a known version, else None
        (appends.honoured)."""
        return honoured(self._table(name))

    def append_at(self, name: str, files: Sequence[PartFile], column: str, value, tip: Tip,
                  transaction: tuple[str, int] | None) -> Tip | None:
        """Add files to partition `column=value` as version `tip.version + 1`, without reading
        the table's log (appends.py): the new tip, or None when the table is not as `tip` says
        (nothing written: the caller commits through delta-rs)."""
        values = {column: partition_value(value)}
        new = append(self.location, self.table_location(name), tip,
                     [WrittenFile(f.path, f.size, values, f.rows, f.stats) for f in files], transaction,
                     new_commit_key())
        if new is not None:
            self._forget(name)
        return new

    def tip_after(self, name: str, committed: "Committed", schema: str, checkpoint_interval: int) -> Tip | None:
        """The tip a commit through delta-rs left (the table's protocol `honoured`): one HEAD."""
        return tip_of(self.location, self.table_location(name), committed.version, schema, committed.rows,
                      committed.files, checkpoint_interval)

    def checkpoint(self, name: str) -> None:
        """A checkpoint of the table's current version (its log loaded once)."""
        DeltaTable(self.path(name), storage_options=self.options).create_checkpoint()
        self._forget(name)

    def partition_files(self, name: str, column: str, value) -> list[PartFile]:
        """The files of one partition as the table's current snapshot lists them (path relative
        to the table, bytes, rows), in the log's order."""
        value = partition_value(value)
        # not flattened: the per-column statistics stay one struct each (2.2 ms a table of 28
        # columns flattened, 0.9 ms not; a compaction asks this of every table)
        actions = pa.table(self._table(name).get_add_actions(flatten=False))
        if not actions.num_rows or "partition" not in actions.column_names:
            return []
        partitions = actions.column("partition").combine_chunks()
        if not pa.types.is_struct(partitions.type) or partitions.type.get_field_index(column) < 0:
            return []
        listed = actions.select(["path", "size_bytes", "num_records"]).to_pydict()
        return [PartFile(unquote(path), int(size), int(rows or 0))
                for path, size, rows, v in zip(listed["path"], listed["size_bytes"], listed["num_records"],
                                               partitions.field(column).to_pylist())
                if partition_value(v) == value]

    def statistics_coverage(self, name: str) -> tuple[int, int]:
        """(live files whose add action carries column statistics, live files)."""
        return statistics_coverage(self._table(name))

    def files_without_statistics(self, name: str) -> list[WrittenFile]:
        """The live files whose add action carries no column statistics (only `numRecords`, or
        nothing): files written before catalake recorded them, or by another writer."""
        return without_statistics(self._table(name))[0]

    def add_statistics(self, name: str, files: Sequence[WrittenFile], threads: int = 8) -> int | None:
        """Record the column statistics of `files` (live files of the table, from
        `files_without_statistics`) in one commit that adds each again with them and
        `dataChange: false`; each is read from the file's Parquet footer. A footer whose row
        count is not the log's is refused (StorageError naming the file): no row may change.
        Returns the version, or None when there was nothing to do."""
        if not files:
            return None
        location = self.table_location(name)
        partition_by = self._table(name).metadata().partition_columns

        def footer(f: WrittenFile) -> WrittenFile:
            metadata = pq.read_metadata(location.child(f.path).path, filesystem=location.filesystem)
            if f.num_records is not None and metadata.num_rows != f.num_records:
                raise StorageError(f"{name}: {f.path} holds {metadata.num_rows} rows, its add action says "
                                   f"{f.num_records}; its statistics are not recorded")
            return f._replace(num_records=metadata.num_rows, stats=stats_json(metadata, partition_by))

        with ThreadPoolExecutor(max(1, min(threads, len(files)))) as pool:  # a footer is a request or two each
            analyzed = list(pool.map(footer, files))
        table = self._table(name)
        self._forget(name)
        return commit_statistics(location, table, analyzed)

    def replace_files(self, name: str, removed: Sequence[PartFile], added: Sequence[PartFile], column: str, value,
                      read_version: int, operation: dict[str, str]) -> int:
        """A compaction's commit: `added` (already written into the partition, merged from
        `removed`, as the table was at `read_version`) replaces `removed`, changing no row
        (commit.commit_compaction, checked against every commit since `read_version`). Returns
        the new version. A partition another writer changed raises `Conflict` and `added` is
        removed; so is it on any failure. Within `loaded_once` the snapshot loaded at
        `read_version` serves the commit and is then the current one (no log loaded again)."""
        values = {column: partition_value(value)}
        written = [WrittenFile(f.path, f.size, values, f.rows, f.stats) for f in added]
        location = self.table_location(name)
        try:
            loaded = self._loaded.get(name) if self._loaded is not None else None
            # the snapshot loaded_once holds, when it is the one read (no log load again)
            table = loaded if loaded is not None and loaded.version() == read_version else \
                DeltaTable(location.uri, version=read_version, storage_options=self.options)
            version = commit_compaction(location, [WrittenFile(f.path, f.size, values, f.rows) for f in removed], written,
                                        table, operation)
        except BaseException:
            self._forget(name)
            remove_files(location, written)
            raise
        # commit_compaction left `table` at the newest version (read incrementally): the current snapshot
        if self._loaded is not None:
            self._loaded[name] = table
        return version

    def vacuum(self, name: str, retention_hours: float, protect: Callable[[str], bool], dry_run: bool) -> list[tuple[str, int]]:
        """The files no version inside `retention_hours` references, with their bytes: files
        removed by a commit more than that ago, and files no commit ever took (failed or killed
        runs) last modified more than that ago (delta-rs' full vacuum lists them). Kept whatever
        their age: a file for which `protect(path)` is true (the caller's runs in flight, taken
        before this call), a file the table references now (a run that committed since the
        listing) and a file written since this call began. Unless `dry_run` they are deleted.
        Below Delta's 7 days the retention check is off: the caller decides."""
        began = time.time()
        listed = self._table(name).vacuum(retention_hours=max(int(retention_hours), 0), dry_run=True,
                                          enforce_retention_duration=False, full=True)
        root = self.table_location(name)
        live = {unquote(p) for p in pa.table(DeltaTable(root.uri, storage_options=self.options)
                                             .get_add_actions(flatten=True)).column("path").to_pylist()}
        filesystem, base = root.filesystem, root.path
        found = []
        for uri in listed:
            rel = unquote(uri[len(root.uri):].lstrip("/") if uri.startswith(root.uri) else uri)
            if rel in live or protect(rel):
                continue
            info = filesystem.get_file_info(f"{base}/{rel}")
            if info.type != pafs.FileType.File or (info.mtime is not None and info.mtime.timestamp() >= began):
                continue
            found.append((rel, int(info.size or 0)))
        if not dry_run:
            for rel, _ in found:  # what delta-rs listed, less what must stay: deleted here
                filesystem.delete_file(f"{base}/{rel}")
        self._forget(name)
        return found

    def tidy_log(self, name: str) -> None:
        """A checkpoint of the current version, then the log entries older than the table's
        `delta.logRetentionDuration` (Delta's 30 days) that a checkpoint covers are removed."""
        table = self._table(name)
        table.create_checkpoint()
        table.cleanup_metadata()
        self._forget(name)

    def transaction_version(self, name: str, app_id: str) -> int | None:
        """The last version of application transaction `app_id` committed to a table, or None."""
        if not self.exists(name):
            return None
        return self._table(name).transaction_version(app_id)

    def remove_uncommitted(self, run: str, day, names: Sequence[str], keep: Iterable[str] = (),
                           committed: Iterable[str] | None = None) -> None:
        """Remove the files run `run` wrote into partition `day` of these tables that no commit
        references (a failed run, a failed or duplicate task attempt), but for the file names in
        `keep` (those a replay's journal names: recovery.remove_orphans). `committed`: the names
        of every file the run committed, when the caller knows them (a run that just committed):
        then no table's log is read. Other runs' files are never touched: every file name carries
        its run."""
        keep = set(keep) | set(committed or ())
        folder = f"{PARTITION_COLUMN}={partition_value(day)}"
        prefix = f"part-{run}-"
        for name in names:
            partition = self.table_location(name).child(folder)
            filesystem, base = partition.filesystem, partition.path
            if filesystem.get_file_info(base).type != pafs.FileType.Directory:
                continue
            mine = [i for i in filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
                    if i.base_name.startswith(prefix) and i.base_name not in keep]
            if not mine:
                continue
            if committed is not None:
                live: set[str] = set()
            else:
                live = {os.path.basename(u) for u in self._table(name).file_uris()} if self.exists(name) else set()
            for info in mine:
                if info.base_name not in live:
                    filesystem.delete_file(info.path)

    def has_partition(self, name: str, day: dt.date) -> bool:
        """Whether the table may hold rows of `day` (a cheap folder check on local warehouses; a
        false positive only costs an overwrite with nothing)."""
        partition = self.table_location(name).child(f"{PARTITION_COLUMN}={day.isoformat()}")
        return partition.filesystem.get_file_info(partition.path).type == pafs.FileType.Directory

    def partition_days(self, name: str) -> set[dt.date]:
        """The days the table may hold rows of: its partition folders, in one listing (a run of a
        range asks this once a table, not once a table and day)."""
        table = self.table_location(name)
        filesystem, path = table.filesystem, table.path
        prefix = f"{PARTITION_COLUMN}="
        days = set()
        for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
            if info.type == pafs.FileType.Directory and info.base_name.startswith(prefix):
                try:
                    days.add(dt.date.fromisoformat(info.base_name[len(prefix):]))
                except ValueError:
                    continue
        return days

    def partition_rows(self, name: str, column: str, value) -> int:
        """Rows in one partition, from the Delta log's per-file statistics (counted by Spark
        where a file has none)."""
        rows = _snapshot_rows(self._table(name), column, value)
        if rows is None:
            return self.read(name).where(F.col(column) == F.lit(partition_value(value))).count()
        return rows

    # -- reads
    def partition_columns(self, name: str) -> list[str]:
        return list(self._table(name).metadata().partition_columns)

    def spark_schema(self, name: str) -> StructType:
        return spark_schema(self._table(name))

    def has_schema(self, name: str, schema: StructType) -> bool:
        """Whether the table's schema is `schema` exactly, metadata included (its Delta JSON
        compared, without building Spark's schema: a sync of thousands of tables asks this)."""
        return schema_value(self._table(name).schema().to_json()) == schema.jsonValue()

    def read(self, name: str) -> DataFrame:
        """The table's current snapshot as a Spark DataFrame."""
        return self._backend.read(self.table_location(name), lambda: self._table(name))

    def read_arrow(self, name: str) -> pa.Table:
        return read_snapshot(self._table(name), self.table_location(name))

    def history(self, name: str) -> list[dict]:
        """Commits, newest first (Delta's own commit info)."""
        return self._table(name).history()

    def version(self, name: str) -> int:
        return self._table(name).version()


@dataclass(frozen=True)
class Committed:
    version: int
    rows: int | None  # the partition's rows after the commit (None: a file without statistics)
    files: int = 0  # the partition's files after the commit


def statistics_coverage(table: DeltaTable) -> tuple[int, int]:
    """(live files whose add action carries column statistics, live files) of a table's snapshot:
    what `catalake tables` shows and `catalake maintain --statistics` completes."""
    missing, files = without_statistics(table)
    return files - len(missing), files


def without_statistics(table: DeltaTable) -> tuple[list[WrittenFile], int]:
    """(the live files whose add action carries no column statistics, the number of live files):
    a file without them has a null `null_count` in delta-rs' add actions."""
    actions = pa.table(table.get_add_actions(flatten=False))
    if not actions.num_rows:
        return [], 0
    count = actions.num_rows
    nulls = actions.column("null_count").to_pylist() if "null_count" in actions.column_names else [None] * count
    partitions = actions.column("partition").to_pylist() if "partition" in actions.column_names else [None] * count
    listed = actions.select(["path", "size_bytes", "num_records"]).to_pydict()
    return [WrittenFile(unquote(path), int(size), {k: partition_value(v) for k, v in (values or {}).items()},
                        None if rows is None else int(rows))
            for path, size, rows, counted, values in zip(listed["path"], listed["size_bytes"],
                                                         listed["num_records"], nulls, partitions)
            if not counted], count


def _partition_counts(table: DeltaTable, column: str) -> dict[str, tuple[int | None, int]]:
    """Each partition's rows and files in a loaded snapshot, from the per-file statistics of its
    log (no data read; rows None where a file has no count), counted in Arrow."""
    actions = pa.table(table.get_add_actions(flatten=True))  # arro3 -> pyarrow
    if actions.num_rows == 0 or f"partition.{column}" not in actions.column_names:
        return {}
    parts = actions.column(f"partition.{column}")
    parts = parts if pa.types.is_string(parts.type) else pc.cast(parts, pa.string())
    rows = actions.column("num_records")
    grouped = pa.table({"part": parts, "rows": rows, "missing": pc.is_null(rows)}).group_by("part").aggregate(
        [("rows", "sum"), ("missing", "any"), ("missing", "count")])
    return {part: (None if missing else int(total or 0), files) for part, total, missing, files in zip(
        *(grouped.column(c).to_pylist() for c in ("part", "rows_sum", "missing_any", "missing_count")))}


def _committed(version: int, table: DeltaTable, column: str, value) -> Committed:
    """A commit's version, with the partition's rows and files in the snapshot it left loaded
    (from the per-file statistics of its log: no data read)."""
    return Committed(version, *_partition_counts(table, column).get(partition_value(value), (0, 0)))


def _part_file(value) -> PartFile:
    """A PartFile, or one as a task's summary or a journal lists it (`[path, size, rows, stats]`)."""
    return value if isinstance(value, PartFile) else PartFile(*value)


def _rows(files: Sequence[WrittenFile]) -> int | None:
    """The rows of written files (None: one without a count)."""
    counts = [f.num_records for f in files]
    return None if any(n is None for n in counts) else int(sum(counts))


def _snapshot_rows(table: DeltaTable, column: str, value) -> int | None:
    """Rows of one partition in a loaded snapshot, from the per-file statistics of its log."""
    return _committed(0, table, column, value).rows


__all__ = ["COMMIT_THREADS", "Committed", "DeltaStore", "TABLE_PROPERTIES"]
