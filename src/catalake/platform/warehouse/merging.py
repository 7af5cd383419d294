"""Fewer, larger Parquet files per table-partition: a table's files of one partition merged into
at most ceil(bytes / target) files, by executors (a few MiB of merges in all: the driver's threads).

A full run's tasks each write one file per table they feed, so a day of many tasks leaves many
files per table-partition; a day of increments leaves one per increment. Small files make every
query slower (a DuckDB query over all tables: 2.1 s over 100 files a partition, 1.4 s over one)
and compress worse. The same merge serves a full run before its commit (runs/day.py: the run's
own files, not yet committed) and the compaction of committed partitions (maintenance/).

Merges are packed into few Spark tasks by their input bytes (merge_tasks: a task per core, or
per TASK_BYTES of input, whichever is more), as Delta's OPTIMIZE and Databricks' auto compaction
bin-pack small files, never a job or a task per partition: a Spark task costs about 250 ms here
whatever its bytes, and a day over 1,000 tables spent 249 s of 302 s in a task per merge (issue
52). A task runs its merges one after another, each as cheap as its bytes allow (merge_files).

Why not delta-rs' `optimize.compact`: it rewrites the files in the process that calls it, the
driver, and catalake's rule is that executors write data files and the driver commits (the files
may be gigabytes, on object storage). The commit of a compaction still goes through delta-rs'
transaction and its conflict checks (commit.py: `commit_compaction`).

Merges keep a partition in time order, so that the statistics of each file on `time` let a query
for an hour open only the files of that hour: a group merges files adjacent in time (their ranges
of `time`: `time_order`), read in that order, so a merged file holds a stretch of the day. Rows
are not sorted within a file: the files' ranges are what a query's planner rules files out by,
and sorting a run's merged files cost a day at 1M records / 10 definitions about a second of six
(benchmarks/RESULTS.md, session 28).
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import MergeError
from ..landing.planning import contiguous_runs
from ..spark import is_session
from ..uris import Location
from .files import TIME_COLUMN, PartFile
from .statistics import stats_json

MERGE_OUTPUT = "merge int, json string"
ROW_GROUP_BYTES = 128 << 20  # Arrow bytes gathered into one write (row groups of up to pyarrow's 1Mi rows)
LOCAL_THREADS = 4  # merges in the driver's process when there is no Spark session: pyarrow releases the GIL
TASK_BYTES = 128 << 20  # input bytes a merge task aims at (merge_tasks): a task per core at least
WHOLE_READ_BYTES = 16 << 20  # a merge of inputs up to this reads each whole (merge_files)
# All merges of a call whose inputs come to at most this run on the driver's threads, no Spark job:
# the one exception to "executors write data files, the driver commits", for small merges only. A
# Spark job costs about 0.3-0.4 s here before its first merge (benchmarks/merging.py driver, 2
# cores, RESULTS session 19): 10 merges of 0.2 MiB took 0.05-0.12 s on threads against 0.46 s as a
# job, 100 of 1.8 MiB 0.25-0.30 s against 0.50-0.59 s; from about 5 MiB the two are even (300 of
# 5.3 MiB 0.76-1.20 s against 0.98-1.02 s; 1,000 of 17.7 MiB 2.5-2.8 s both), and past that the
# executors' cores (more than the driver's on a cluster) should do it. The driver holds at most
# this much Parquet at once, as a local increment (CATALAKE_LOCAL_TASK_BYTES) does.
DRIVER_MERGE_BYTES = 8 << 20
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
FOOTER_THREADS = 8  # footers read at once to order a partition's files by time (a request each on object storage)


class Merge(NamedTuple):
    """Files of one table-partition to become one file, `output` (paths relative to the table)."""

    table: str
    inputs: list[PartFile]
    output: str


def file_bound(size: int, target: int) -> int:
    """The most files a table-partition of `size` bytes should hold."""
    return max(1, math.ceil(size / target))


def merge_groups(files: Sequence[PartFile], target: int,
                 in_order: Callable[[list[PartFile]], list[PartFile]] | None = None) -> list[list[PartFile]]:
    """The files of one table-partition to merge, in groups of two or more, so that it holds at
    most `file_bound(bytes, target)` files afterwards. Files of `target` bytes or more stay as
    they are; the others are cut into ceil(their bytes / target) groups of consecutive files, of
    bytes as even as that allows (contiguous_runs), the files first put in time order by
    `in_order` (`time_order`; None: they come in it), so that each group, and the file it
    becomes, holds a stretch of time rather than pieces of the whole day. Empty when the
    partition is within its bound already."""
    if len(files) <= file_bound(sum(f.size for f in files), target):
        return []
    small = [f for f in files if f.size < target]
    count = file_bound(sum(f.size for f in small), target)
    if in_order is not None and len(small) > 1:
        small = in_order(small)
    return [small[run.start:run.stop] for run in contiguous_runs([f.size for f in small], count) if len(run) > 1]


def time_order(warehouse: Location, table: str, files: Sequence[PartFile]) -> list[PartFile]:
    """The files of a table-partition (paths relative to the table) by their range of `time`:
    least, then greatest; from a file's Delta statistics where it carries them (`stats`, as a
    task's files do), else from the same statistics of its footer. A file whose range is not known
    (no `time`, no statistics) comes after the others, in the order it came (the sort is stable,
    so a table without `time` keeps its files' order)."""
    filesystem = warehouse.filesystem
    root = warehouse.child(*table.split("/")).path

    def key(f: PartFile) -> tuple:
        found = stats_time_range(getattr(f, "stats", None))
        if found is None:
            with filesystem.open_input_file(f"{root}/{f.path}") as source:
                found = stats_time_range(stats_json(pq.ParquetFile(source).metadata))
        return _time_key(found)

    with ThreadPoolExecutor(max(1, min(FOOTER_THREADS, len(files)))) as pool:
        keys = list(pool.map(key, files))
    return [f for _, f in sorted(zip(keys, files), key=lambda pair: pair[0])]


def stats_time_range(stats: str | None) -> tuple[int, int] | None:
    """The least and greatest `time` (microseconds since the epoch) of an add action's `stats`
    (statistics.py: ISO timestamps to the millisecond, the least cut down, the greatest rounded
    up); None when they bound no `time`."""
    if not stats:
        return None
    parsed = json.loads(stats)
    bounds = [(parsed.get(side) or {}).get(TIME_COLUMN) for side in ("minValues", "maxValues")]
    if not all(isinstance(b, str) for b in bounds):
        return None
    moments = [dt.datetime.fromisoformat(b.replace("Z", "+00:00")) for b in bounds]
    low, high = ((m if m.tzinfo else m.replace(tzinfo=dt.timezone.utc)) - EPOCH for m in moments)
    return low // dt.timedelta(microseconds=1), high // dt.timedelta(microseconds=1)


def _time_key(found: tuple[int, int] | None) -> tuple:
    """How a file sorts by its range of `time`: by least, then greatest; an unknown range last."""
    return (0, *found) if found is not None else (1,)


def merge_bytes(merge: Merge) -> int:
    return sum(f.size for f in merge.inputs)


def pack(sizes: Sequence[int], count: int) -> list[list[int]]:
    """Indices of `sizes` in at most `count` bins of balanced sums: largest first into the
    lightest bin (ties to the earlier index and bin); each bin lists its indices in order, and
    no bin is empty. Delta's OPTIMIZE and auto compaction pack small files into tasks alike."""
    count = max(1, min(count, len(sizes)))
    bins: list[list[int]] = [[] for _ in range(count)]
    lightest = [(0, b) for b in range(count)]  # (load, bin): a heap
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        load, b = heapq.heappop(lightest)
        bins[b].append(i)
        heapq.heappush(lightest, (load + sizes[i], b))
    return [sorted(b) for b in bins if b]


def merge_tasks(merges: Sequence[Merge], cores: int, task_bytes: int = TASK_BYTES) -> list[list[int]]:
    """The merges (their indices) of each Spark task: min(merges, max(cores, ceil(input bytes /
    task_bytes))) tasks, packed by input bytes (pack). A task runs its merges one after another,
    so a thousand merges of a few kilobytes cost a task per core, not a task each (about 250 ms
    a task here, whatever its bytes: issue 52), and large merges still spread over every core."""
    sizes = [merge_bytes(m) for m in merges]
    return pack(sizes, max(cores, math.ceil(sum(sizes) / task_bytes)))


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch with the merged file's columns: a column an older file lacks (added by schema
    evolution since) is null."""
    if batch.schema.equals(schema):
        return batch
    columns = [batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
               for f in schema]
    return pa.record_batch(columns, schema=schema)


def _conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    if table.schema.equals(schema):
        return table
    columns = [table.column(f.name).cast(f.type) if f.name in table.schema.names else pa.nulls(table.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _unified(schemas: list[pa.Schema]) -> pa.Schema:
    first = schemas[0]
    if all(s.equals(first) for s in schemas[1:]):
        return first  # the common case: no schema evolution within the partition
    return pa.unify_schemas(schemas, promote_options="permissive")


def merge_files(warehouse: Location, merge: Merge, *, whole_read_bytes: int = WHOLE_READ_BYTES) -> PartFile:
    """Executor side (or the driver's, for small merges: run_merges): the inputs, in order (a
    group of merge_groups: in time order), into one zstd Parquet file. Inputs of at most
    WHOLE_READ_BYTES in all are read whole, one pyarrow call a file, and written at once: a merge
    of a few kilobytes then costs a few milliseconds (here about 1.3 ms a file read and 3 ms the
    write, for 28 columns; the streamed path costs a schema read and a batch loop more a file).
    Larger ones are streamed, their small row groups gathered into large ones (up to
    ROW_GROUP_BYTES of Arrow data in memory): a file of a hundred 1,000-row groups compresses a
    third worse and scans 2.5 times slower than one of the same rows in large groups
    (benchmarks/maintenance.py). Either way the rows read are counted against the inputs' rows,
    and the file's column statistics come from the footer just written (statistics.py).
    Returns the written file; a failed merge removes what it wrote."""
    filesystem = warehouse.filesystem
    root = warehouse.child(*merge.table.split("/")).path
    path = f"{root}/{merge.output}"
    try:
        if merge_bytes(merge) <= whole_read_bytes:
            rows, size, footer = _merge_whole(filesystem, root, merge.inputs, path)
        else:
            rows, size, footer = _merge_streamed(filesystem, root, merge.inputs, path)
    except BaseException:
        try:
            filesystem.delete_file(path)
        except OSError:
            pass
        raise
    expected = sum(f.rows for f in merge.inputs)
    if rows != expected:  # the inputs' footers and the log disagree: merge nothing
        filesystem.delete_file(path)
        raise MergeError(f"{merge.table}: merging {len(merge.inputs)} file(s) read {rows} rows, expected {expected}")
    return PartFile(merge.output, size, rows, stats_json(footer))


def _merge_whole(filesystem, root: str, inputs: list[PartFile], path: str) -> tuple[int, int, pq.FileMetaData]:
    """The inputs read whole, one pyarrow call a file, and written at once to `path`. Returns
    the rows read, the bytes written and the written file's footer."""
    tables = []
    for f in inputs:
        with filesystem.open_input_file(f"{root}/{f.path}") as source:  # not read_table: no dataset
            tables.append(pq.ParquetFile(source).read(use_threads=False))
    schema = _unified([t.schema for t in tables])
    merged = pa.concat_tables([_conform_table(t, schema) for t in tables])
    footers: list[pq.FileMetaData] = []
    with filesystem.open_output_stream(path) as out:
        pq.write_table(merged, out, compression="zstd", metadata_collector=footers)
        size = out.tell()
    return merged.num_rows, size, footers[0]


def _merge_streamed(filesystem, root: str, inputs: list[PartFile], path: str) -> tuple[int, int, pq.FileMetaData]:
    """The inputs streamed to `path`, their row groups gathered into groups of up to
    ROW_GROUP_BYTES of Arrow data. Returns the rows read, the bytes written and the written
    file's footer."""
    rows = 0
    schema = _unified([pq.read_schema(filesystem.open_input_file(f"{root}/{f.path}")) for f in inputs])
    with filesystem.open_output_stream(path) as out:
        with pq.ParquetWriter(out, schema, compression="zstd") as writer:
            pending: list[pa.RecordBatch] = []
            held = 0
            for f in inputs:
                with filesystem.open_input_file(f"{root}/{f.path}") as source:
                    for batch in pq.ParquetFile(source).iter_batches(batch_size=65_536):
                        pending.append(_conform(batch, schema))
                        rows, held = rows + batch.num_rows, held + pending[-1].nbytes
                        if held >= ROW_GROUP_BYTES:
                            writer.write_table(pa.Table.from_batches(pending, schema=schema))
                            pending, held = [], 0
            if pending:
                writer.write_table(pa.Table.from_batches(pending, schema=schema))
        size = out.tell()
    return rows, size, writer.writer.metadata


def _spark_merges(warehouse: Location, tasks: list[list[tuple[int, Merge]]]):
    """The function of a merge job; `warehouse` travels with the driver's storage settings (uris.Location)."""
    def run(batches):
        for batch in batches:
            for task in batch.column(0).to_pylist():
                done = [(i, merge_files(warehouse, merge)) for i, merge in tasks[task]]
                yield pa.record_batch([pa.array([i for i, _ in done], pa.int32()),
                                       pa.array([json.dumps(list(written)) for _, written in done])],
                                      names=["merge", "json"])

    return run


def _cores(spark) -> int:
    try:
        return max(int(spark.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return os.cpu_count() or 2


def _local_merges(warehouse: Location, merges: list[Merge]) -> list[PartFile]:
    with ThreadPoolExecutor(min(LOCAL_THREADS, len(merges))) as pool:
        return list(pool.map(lambda m: merge_files(warehouse, m), merges))


def run_merges(spark, warehouse: Location, merges: list[Merge], *, task_bytes: int = TASK_BYTES,
               driver_bytes: int = DRIVER_MERGE_BYTES) -> list[PartFile]:
    """The merged files, in the order of `merges`. With a Spark session: one Spark job whose
    tasks each run many merges one after another (merge_tasks: packed by input bytes), unless
    all the merges' inputs come to at most `driver_bytes`; those, and every merge when `spark`
    is not a session (the local engine), run on threads of this process."""
    if not merges:
        return []
    if spark is None or not is_session(spark) or sum(merge_bytes(m) for m in merges) <= driver_bytes:
        return _local_merges(warehouse, merges)
    tasks = [[(i, merges[i]) for i in task] for task in merge_tasks(merges, _cores(spark), task_bytes)]
    n = len(tasks)
    rows = spark.range(0, n, 1, n).mapInArrow(_spark_merges(warehouse, tasks), MERGE_OUTPUT).collect()
    by_merge = {r["merge"]: PartFile(*json.loads(r["json"])) for r in rows}
    return [by_merge[i] for i in range(len(merges))]
