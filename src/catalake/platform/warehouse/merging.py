"""Fewer, larger Parquet files per table-partition: a table's files of one partition merged into
at most ceil(bytes / target) files, by executors.

A full run's tasks each write one file per table they feed, so a day of many tasks leaves many
files per table-partition; a day of increments leaves one per increment. Small files make every
query slower (a DuckDB query over all tables: 2.1 s over 100 files a partition, 1.4 s over one)
and compress worse. The same merge serves a full run before its commit (runs/day.py: the run's
own files, not yet committed) and the compaction of committed partitions (maintenance/).

Why not delta-rs' `optimize.compact`: it rewrites the files in the process that calls it, the
driver, and catalake's rule is that executors write data files and the driver commits (the files
may be gigabytes, on object storage). The commit of a compaction still goes through delta-rs'
transaction and its conflict checks (commit.py: `commit_compaction`).
"""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from .. import uris
from ..spark import is_session
from .files import PartFile, filesystem_of

TARGET_FILE_BYTES = 128 << 20  # CATALAKE_TARGET_FILE_BYTES: what Parquet readers read best
MERGE_OUTPUT = "task int, json string"
ROW_GROUP_BYTES = 128 << 20  # Arrow bytes gathered into one write (row groups of up to pyarrow's 1Mi rows)
LOCAL_THREADS = 4  # merges in the driver's process when there is no Spark session: pyarrow releases the GIL


class Merge(NamedTuple):
    """Files of one table-partition to become one file, `output` (paths relative to the table)."""

    table: str
    inputs: list[PartFile]
    output: str


def file_bound(size: int, target: int) -> int:
    """The most files a table-partition of `size` bytes should hold."""
    return max(1, math.ceil(size / target))


def merge_groups(files: Sequence[PartFile], target: int) -> list[list[PartFile]]:
    """The files of one table-partition to merge, in groups of two or more, so that it holds at
    most `file_bound(bytes, target)` files afterwards. Files of `target` bytes or more stay as
    they are; the others are spread over ceil(their bytes / target) groups, largest first into
    the lightest (each group keeps the files' order, so rows keep theirs). Empty when the
    partition is within its bound already."""
    if len(files) <= file_bound(sum(f.size for f in files), target):
        return []
    small = [(i, f) for i, f in enumerate(files) if f.size < target]
    count = file_bound(sum(f.size for _, f in small), target)
    groups: list[list[tuple[int, PartFile]]] = [[] for _ in range(count)]
    loads = [0] * count
    for i, f in sorted(small, key=lambda item: -item[1].size):
        lightest = loads.index(min(loads))
        groups[lightest].append((i, f))
        loads[lightest] += f.size
    return [[f for _, f in sorted(group)] for group in groups if len(group) > 1]


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch with the merged file's columns: a column an older file lacks (added by schema
    evolution since) is null."""
    if batch.schema.equals(schema):
        return batch
    columns = [batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
               for f in schema]
    return pa.record_batch(columns, schema=schema)


def merge_files(warehouse: str, merge: Merge) -> PartFile:
    """Executor side: the inputs streamed, in order, into one zstd Parquet file. Their small row
    groups are gathered into large ones (up to ROW_GROUP_BYTES of Arrow data in memory): a file
    of a hundred 1,000-row groups compresses a third worse and scans 2.5 times slower than one of
    the same rows in large groups (benchmarks/maintenance.py). Returns the written file; a
    failed merge removes what it wrote."""
    filesystem, base = filesystem_of(warehouse)
    root = "/".join([base.rstrip("/"), *merge.table.split("/")])
    schema = pa.unify_schemas([pq.read_schema(filesystem.open_input_file(f"{root}/{f.path}")) for f in merge.inputs],
                              promote_options="permissive")
    path = f"{root}/{merge.output}"
    rows = 0
    try:
        with filesystem.open_output_stream(path) as out:
            with pq.ParquetWriter(out, schema, compression="zstd") as writer:
                pending: list[pa.RecordBatch] = []
                held = 0
                for f in merge.inputs:
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
    except BaseException:
        try:
            filesystem.delete_file(path)
        except OSError:
            pass
        raise
    expected = sum(f.rows for f in merge.inputs)
    if rows != expected:  # the inputs' footers and the log disagree: merge nothing
        filesystem.delete_file(path)
        raise ValueError(f"{merge.table}: merging {len(merge.inputs)} file(s) read {rows} rows, expected {expected}")
    return PartFile(merge.output, size, rows)


def _spark_merges(warehouse: str, merges: list[Merge], storage: dict[str, str]):
    def run(batches):
        uris.adopt(storage)
        for batch in batches:
            for task in batch.column(0).to_pylist():
                written = merge_files(warehouse, merges[task])
                yield pa.record_batch([pa.array([task], pa.int32()), pa.array([json.dumps(list(written))])],
                                      names=["task", "json"])

    return run


def run_merges(spark, warehouse: str, merges: list[Merge]) -> list[PartFile]:
    """The merged files, in the order of `merges`: one Spark job of a task per merge when `spark`
    is a session, else threads of this process (the local engine)."""
    if not merges:
        return []
    if spark is None or not is_session(spark):
        with ThreadPoolExecutor(min(LOCAL_THREADS, len(merges))) as pool:
            return list(pool.map(lambda m: merge_files(warehouse, m), merges))
    n = len(merges)
    rows = spark.range(0, n, 1, n).mapInArrow(_spark_merges(warehouse, merges, uris.storage_environment()),
                                              MERGE_OUTPUT).collect()
    by_task = {r["task"]: PartFile(*json.loads(r["json"])) for r in rows}
    return [by_task[i] for i in range(n)]
