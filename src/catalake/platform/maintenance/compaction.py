"""Compaction of a day's table-partitions: the files a day of increments (or an older release's
full run) left, merged into at most ceil(bytes / target) files by executors, many
table-partitions a task (warehouse/merging.py), committed per table as one Delta transaction that
changes no data, the tables' commits in threads.

Safe beside the day's other runs: the commit names exactly the files it merged, and delta-rs
refuses it when a commit since the snapshot removed one of them (a full run replaced the
partition, another compaction took them): that table is skipped and its merged files removed.
Increments that appended meanwhile keep their files and their application transactions (a
compaction never touches either). While it runs, the compaction is recorded like any run of the
day (runs/recovery.py), so a vacuum leaves its files alone and a killed one is cleaned up by the
day's next run.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from typing import Callable, Sequence

from ..runs import recovery
from ..spark import is_session
from ..warehouse.commit import Conflict
from ..warehouse.files import PARTITION_COLUMN, PartFile
from ..warehouse.merging import DRIVER_MERGE_BYTES, Merge, merge_bytes, merge_groups, run_merges, time_order
from ..warehouse.store import DeltaStore


@dataclass
class Compaction:
    """One table-partition's compaction: files and bytes before and after, the rows merged (the
    same rows were read and written), and why nothing was committed when it was not."""

    table: str
    partition: str
    files_before: int
    bytes_before: int
    files_after: int
    bytes_after: int
    rows_merged: int = 0
    version: int | None = None
    skipped: str | None = None

    def as_json(self) -> dict:
        return asdict(self)


def compact_day(spark, store: DeltaStore, names: Sequence[str], day: dt.date, *, target: int, min_files: int = 2,
                progress: Callable[[str], None] = lambda message: None) -> list[Compaction]:
    """Compact partition `day` of each table in `names` that holds at least `min_files` files
    and more than ceil(bytes / target). `spark`: a session, a function starting one (called only
    when there is more to merge than the driver's threads take: merging.DRIVER_MERGE_BYTES) or
    None (merged by threads of this process). Returns a
    Compaction for each table-partition looked at that needed one."""
    run = uuid.uuid4().hex[:12]
    clock = time.perf_counter()
    held = [name for name in names if store.has_partition(name, day)]  # a folder check: cheap
    with recovery.recorded(store.location, run, day, kind="compaction"), store.loaded_once():
        plans = _plans(store, held, day, run, target, min_files)
        if not plans:
            return []
        merges = [m for _, _, planned in plans.values() for m in planned]
        progress(f"{day}: compacting {sum(len(m.inputs) for m in merges)} file(s) of {len(plans)} table(s) into {len(merges)}")
        seconds = {"planning": time.perf_counter() - clock}
        clock = time.perf_counter()
        outputs = _merged(spark, store, merges, run, day, list(plans))
        seconds["merges"] = time.perf_counter() - clock
        clock = time.perf_counter()
        # one Delta transaction per table, in threads (as a full run commits: runs/day.py)
        with ThreadPoolExecutor(min(store.commit_threads, len(plans))) as pool:
            done = list(pool.map(lambda item: _commit(store, item[0], day, *item[1], outputs, run, progress),
                                 plans.items()))
        seconds["commits"] = time.perf_counter() - clock
        progress(f"{day}: compacted {sum(1 for c in done if c.skipped is None)} table(s) in "
                 + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items()))
        return done


def _plans(store: DeltaStore, held: list[str], day: dt.date, run: str, target: int,
           min_files: int) -> dict[str, tuple[int, list[PartFile], list[Merge]]]:
    """Per table of `held` that needs a compaction: the version looked at, its files of the
    partition, and the merges that bound them."""
    folder = f"{PARTITION_COLUMN}={day.isoformat()}"

    def look(name: str) -> tuple[int, list[PartFile]] | None:
        if not store.exists(name):
            return None
        return store.version(name), store.partition_files(name, PARTITION_COLUMN, day)

    # each log loaded once, in threads (delta-rs releases the GIL for part of a load): at a
    # thousand tables the loads, not the merges, were most of a compaction's driver time
    with ThreadPoolExecutor(max(1, min(store.commit_threads, len(held)))) as pool:
        looked = list(pool.map(look, held))
    plans: dict[str, tuple[int, list[PartFile], list[Merge]]] = {}
    count = 0
    for name, found in zip(held, looked):
        if found is None or len(found[1]) < min_files:
            continue
        version, files = found
        groups = merge_groups(files, target, partial(time_order, store.location, name))
        if groups:
            plans[name] = (version, files, [Merge(name, g, f"{folder}/part-{run}-compacted-{count + i}.zstd.parquet")
                                            for i, g in enumerate(groups)])
            count += len(groups)
    return plans


def _merged(spark, store: DeltaStore, merges: list[Merge], run: str, day: dt.date,
            tables: list[str]) -> dict[str, PartFile]:
    """Each merge's output file by its path, merged by threads of this process or a Spark job;
    a failure removes the merges' files of `tables`."""
    # merges the driver's threads do (merging.DRIVER_MERGE_BYTES) start no Spark session
    small = sum(merge_bytes(m) for m in merges) <= DRIVER_MERGE_BYTES
    session = None if spark is None or small else (spark if is_session(spark) else spark())
    try:
        return dict(zip([m.output for m in merges], run_merges(session, store.location, merges)))
    except BaseException:
        store.remove_uncommitted(run, day, tables)
        raise


def _commit(store: DeltaStore, name: str, day: dt.date, read_version: int, files: list[PartFile], planned: list[Merge],
            outputs: dict[str, PartFile], run: str, progress) -> Compaction:
    removed = [f for m in planned for f in m.inputs]
    added = [outputs[m.output] for m in planned]
    result = Compaction(name, day.isoformat(), len(files), sum(f.size for f in files),
                        len(files) - len(removed) + len(added),
                        sum(f.size for f in files) - sum(f.size for f in removed) + sum(f.size for f in added),
                        rows_merged=sum(f.rows for f in added))
    try:
        result.version = store.replace_files(name, removed, added, PARTITION_COLUMN, day, read_version,
                                             {"catalake.operation": "compaction", "catalake.run": run})
    except Conflict as exc:
        result.skipped = f"a concurrent commit changed the partition: {exc}"
        result.files_after, result.bytes_after = result.files_before, result.bytes_before
        progress(f"{day}: {name}: compaction skipped: {result.skipped}")
    return result
