"""The Parquet files of a Delta table that executors write, before the driver commits them
(commit.py).

Where the delta-rs backend writes a DataFrame (``write_files``), Spark executors write its Parquet
files with Spark's own Parquet writer, and the driver moves them into the table's partition
folders; event data never passes through the driver, only the list of written files does. On
object storage (`s3://...`) Spark's own file sources cannot be used (its `s3a://` jars are not
installable here), so executors write the files through pyarrow (``_write_files_remote``).

A partition run writes differently (runs/day.py): its executors write every table's Parquet
files themselves with pyarrow (``PartFiles``), straight into the partition folders under names
that carry the run, and the driver commits each table's files (``DeltaStore.commit_partition``).
Such a file travels to the driver as JSON in the task's summary, `[path relative to the table,
size, rows]`, and becomes a ``WrittenFile`` where the store commits it.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Iterable, NamedTuple, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import DataFrame

from .. import uris
from ..uris import Location
from .arrowschemas import arrow_schema
from .statistics import stats_json

STAGING_PREFIX = ".staging-"  # hidden: no Spark or Delta reader lists it
PARTITION_COLUMN = "event_date"  # the warehouse's tables are partitioned by day
TIME_COLUMN = "time"  # the CloudEvents time of a message table's row: a day's files follow it


class PartFile(NamedTuple):
    """A Parquet file an executor wrote into a table's partition folder. It travels in a task's
    JSON summary and a replay's journal as `[path, size, rows, stats]` (a named tuple is written
    as a list; a journal of an older release has no stats)."""

    path: str  # relative to the table root
    size: int
    rows: int
    stats: str | None = None  # the add action's `stats` from the file's footer (statistics.py)


class WrittenFile(NamedTuple):
    """A Parquet file written into a table's folder, as its Delta add action names it."""

    path: str  # relative to the table root, as Delta's add action wants it
    size: int
    partition_values: dict[str, str | None]
    num_records: int
    stats: str | None = None  # the add action's `stats` (statistics.py); None: the row count only


def partition_value(value) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def write_files(df: DataFrame, root: Location, partition_by: list[str]) -> list[WrittenFile]:
    """Executors write the rows as Parquet (Spark's own writer) into a staging folder of the
    table at `root`; the driver then moves each file into its partition folder and reads its
    footer for the row count. No row passes through the driver."""
    if root.remote:
        return _write_files_remote(df, root, partition_by)
    filesystem, base = root.filesystem, root.path
    staging = f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    writer = df.write.mode("overwrite").option("compression", "zstd")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(f"{base}/{staging}")
    written: list[WrittenFile] = []
    try:
        for info in filesystem.get_file_info(pafs.FileSelector(f"{base}/{staging}", recursive=True)):
            if info.type != pafs.FileType.File or not info.base_name.endswith(".parquet"):
                continue  # _SUCCESS, .crc checksums
            folder = os.path.relpath(os.path.dirname(info.path), f"{base}/{staging}")
            parts = [] if folder == "." else folder.split("/")
            values = {k: (None if v == "__HIVE_DEFAULT_PARTITION__" else unquote(v)) for k, v in (x.split("=", 1) for x in parts)}
            footer = pq.read_metadata(info.path, filesystem=filesystem)
            rows = footer.num_rows
            if rows == 0:
                continue  # Spark writes an empty file for an empty unpartitioned DataFrame
            rel = "/".join([*parts, f"part-{uuid.uuid4().hex}.zstd.parquet"])
            uris.make_folders(filesystem, os.path.dirname(f"{base}/{rel}"))
            filesystem.move(info.path, f"{base}/{rel}")
            written.append(WrittenFile(path=rel, size=info.size, partition_values=values, num_records=rows,
                                       stats=stats_json(footer)))
    except BaseException:
        remove_files(root, written)
        raise
    finally:
        filesystem.delete_dir(f"{base}/{staging}")
    return written


def _write_files_remote(df: DataFrame, root: Location, partition_by: list[str]) -> list[WrittenFile]:
    """Executors write the rows as Parquet with pyarrow straight into the table's partition
    folders on object storage (Spark's own writer would need the store's Hadoop jars); only
    the files' names, sizes and row counts come back. Files of failed task attempts, and of a
    failed write, are removed (their names carry the write). `root` travels to the executors with
    the driver's storage settings (uris.Location)."""
    write_id = uuid.uuid4().hex[:12]
    schema = arrow_schema(df.schema, exclude=partition_by)
    try:
        rows = df.mapInArrow(_remote_writer(root, partition_by, schema, write_id), "files string").collect()
    except BaseException:
        _remove_write(root, write_id)
        raise
    written = [WrittenFile(rel, size, values, n, stats) for r in rows for rel, size, n, values, stats in json.loads(r["files"])]
    _remove_write(root, write_id, keep={f.path for f in written})
    return written


def _remote_writer(root: Location, partition_by: list[str], schema: pa.Schema, write_id: str):
    """The function of a remote write's Spark job: a task's rows into one Parquet file per
    partition value it meets, named by the write, the task and its attempt; yields the files'
    `[path, size, rows, partition values, stats]` as JSON."""
    def write(batches):
        from pyspark import TaskContext

        filesystem, base = root.filesystem, root.path
        context = TaskContext.get()
        task = f"{context.partitionId()}-{context.attemptNumber()}" if context is not None else "0-0"
        open_files: dict[tuple, list] = {}  # partition values -> [writer, stream, relative path, rows]
        footers: dict[tuple, str] = {}
        try:
            for batch in batches:
                for key, part in _partition_groups(pa.Table.from_batches([batch]), partition_by):
                    entry = open_files.get(key)
                    if entry is None:
                        name = f"part-{write_id}-{task}-{len(open_files)}.zstd.parquet"
                        entry = open_files[key] = _open_part(filesystem, base, partition_by, key, name, schema)
                    entry[0].write_table(part.select(schema.names).cast(schema))
                    entry[3] += part.num_rows
        finally:
            for key, (writer, stream, _, _) in open_files.items():
                writer.close()
                stream.close()
                footers[key] = stats_json(writer.writer.metadata)
        written = [[rel, filesystem.get_file_info(f"{base}/{rel}").size, rows, dict(zip(partition_by, key)), footers[key]]
                   for key, (_, _, rel, rows) in open_files.items()]
        yield pa.record_batch([pa.array([json.dumps(written)])], names=["files"])

    return write


def _partition_groups(table: pa.Table, partition_by: list[str]) -> list[tuple[tuple, pa.Table]]:
    """The table's rows grouped by their partition values (one group when not partitioned)."""
    if not partition_by:
        return [((), table)]
    keys = table.select(partition_by).to_pylist()
    found: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        found.setdefault(tuple(partition_value(key[c]) for c in partition_by), []).append(i)
    return [(k, table.take(pa.array(rows))) for k, rows in found.items()]


def _open_part(filesystem, base: str, partition_by: list[str], key: tuple, name: str, schema: pa.Schema) -> list:
    """A new file `name` in the partition folder of `key`, open for writing: [writer, stream,
    relative path, rows]."""
    folder = "/".join(f"{c}={v if v is not None else '__HIVE_DEFAULT_PARTITION__'}" for c, v in zip(partition_by, key))
    rel = "/".join(x for x in (folder, name) if x)
    uris.make_folders(filesystem, f"{base}/{rel}".rsplit("/", 1)[0])
    stream = filesystem.open_output_stream(f"{base}/{rel}")
    return [pq.ParquetWriter(stream, schema, compression="zstd"), stream, rel, 0]


def _remove_write(root: Location, write_id: str, keep: set[str] = frozenset()) -> None:
    """The files of one executor write that are not in `keep` (failed attempts, a failed write)."""
    filesystem, base = root.filesystem, root.path
    for info in filesystem.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True)):
        rel = info.path[len(base):].lstrip("/")
        if info.type == pafs.FileType.File and f"/part-{write_id}-" in f"/{rel}" and rel not in keep:
            filesystem.delete_file(info.path)


def remove_files(root: Location, files: Sequence[WrittenFile]) -> None:
    """Written files of the table at `root` removed (those already gone are passed over)."""
    for f in files:
        try:
            root.filesystem.delete_file(f"{root.path}/{f.path}")
        except OSError:
            pass


class PartFiles:
    """Executor side: Parquet files of one partition of several tables, written straight into
    each table's partition folder under names no other run uses (`part-<run>-<task>-<n>`). They
    are invisible to every reader until the driver commits them (`DeltaStore.commit_partition`)."""

    def __init__(self, warehouse: Location, day, prefix: str):
        self.filesystem, self.base = warehouse.filesystem, warehouse.path
        self.folder = f"{PARTITION_COLUMN}={partition_value(day)}"
        self.prefix = prefix
        self.files: dict[str, list[PartFile]] = {}
        self.count = 0

    def write(self, table: str, schema: pa.Schema, parts: Iterable[pa.Table]) -> None:
        """One Parquet file of the table's partition from its parts, streamed (memory holds one
        part at a time; each is one or more row groups)."""
        rel = f"{self.folder}/part-{self.prefix}-{self.count}.zstd.parquet"
        self.count += 1
        path = "/".join([self.base.rstrip("/"), *table.split("/"), rel])
        if table not in self.files:
            uris.make_folders(self.filesystem, path.rsplit("/", 1)[0])
        rows = 0
        with self.filesystem.open_output_stream(path) as out:
            with pq.ParquetWriter(out, schema, compression="zstd") as writer:
                for part in parts:
                    writer.write_table(part)
                    rows += part.num_rows
            size = out.tell()
        self.files.setdefault(table, []).append(PartFile(rel, size, rows, stats_json(writer.writer.metadata)))

    def remove_written(self) -> None:
        for table, files in self.files.items():
            for written in files:
                try:
                    self.filesystem.delete_file("/".join([self.base.rstrip("/"), *table.split("/"), written.path]))
                except OSError:
                    pass
        self.files = {}


def read_snapshot(table, location: Location, columns: list[str] | None = None, partitions=None, filters=None) -> pa.Table:
    """The snapshot's rows as one Arrow table, read through pyarrow's own filesystem
    (datasets.snapshot_dataset says why), with deltalake's
    `to_pyarrow_table` arguments."""
    return table.to_pyarrow_table(partitions=partitions, columns=columns, filters=filters, filesystem=_rooted(location))


def _rooted(location: Location) -> pafs.FileSystem:
    """pyarrow's filesystem of `location`, with the paths below it (what a Delta log names)."""
    return pafs.SubTreeFileSystem(location.path, location.filesystem)
