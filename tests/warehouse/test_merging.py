"""Merges by the byte: many table-partitions' merges packed into few tasks by their
input bytes, each merge's rows kept (order, schema evolution, the row count checked), on the
driver's threads and in a Spark job alike; a full run's files bounded with several tasks, and a
compaction by Spark, leave every table's rows as they were."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalake.platform.errors import MergeError
from catalake.platform.uris import Location
from catalake.platform.warehouse.files import PARTITION_COLUMN, PartFile
from catalake.platform.warehouse.merging import Merge, file_bound, merge_files, merge_groups, merge_tasks, pack, run_merges

DAY = dt.date(2026, 11, 20)
FOLDER = f"{PARTITION_COLUMN}={DAY}"


def test_packing_puts_every_merge_in_one_task_in_order_with_balanced_bytes():
    rng = random.Random(52)
    for count in (1, 2, 3, 8, 50):
        sizes = [rng.choice([rng.randrange(1, 10_000), rng.randrange(1, 10_000_000)]) for _ in range(rng.randrange(1, 400))]
        bins = pack(sizes, count)
        assert sorted(i for b in bins for i in b) == list(range(len(sizes)))  # each exactly once
        assert all(b == sorted(b) and b for b in bins)  # a task runs its merges in their order
        assert len(bins) == min(count, len(sizes))
        loads = [sum(sizes[i] for i in b) for b in bins]
        assert max(loads) - min(loads) <= max(sizes)  # largest first into the lightest: within one merge
    assert pack([5, 5, 5, 5], 2) == [[0, 2], [1, 3]]
    assert pack([1, 100, 1, 1], 2) == [[1], [0, 2, 3]]


HOUR = dt.timedelta(hours=1)
MIDNIGHT = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.timezone.utc)


def hourly_parts(seed: int, hours: int) -> list[pa.Table]:
    """A table's rows of one day, a part per hour: its events in no order, of as many rows as the
    hour's traffic, and a few late ones of the hour before; every `time` distinct."""
    rng = random.Random(seed)
    parts = []
    for hour in range(hours):
        n = rng.randrange(20, 120)
        seconds = rng.sample(range(3600), n)
        late = [s - 3600 for s in rng.sample(range(3600), 3)] if hour else []
        times = [MIDNIGHT + hour * HOUR + dt.timedelta(seconds=s, microseconds=hour) for s in seconds + late]
        parts.append(pa.table({"id": pa.array([f"h{hour}-{k}" for k in range(len(times))]),
                               "time": pa.array(times, pa.timestamp("us", tz="UTC")),
                               "data": pa.array([{"x": rng.random()} for _ in times], pa.struct([("x", pa.float64())]))}))
    return parts


def in_time_order(rows: list[dict]) -> bool:
    return all(a["time"] <= b["time"] for a, b in zip(rows, rows[1:]))


def hours_of(files: list[PartFile], written: list[PartFile]) -> list[int]:
    """The hour (the part's index) each of `files` was written for."""
    return [written.index(f) for f in files]


def test_merge_groups_are_runs_of_files_adjacent_in_time_whatever_order_they_come_in(tmp_path):
    """A day's 24 hourly files listed in no time order (as a log or a run's tasks may list them),
    merged to a bound of 4 files: each group is files of consecutive hours (their footers' ranges
    of `time`), each merged file covers its stretch only."""
    from functools import partial

    from catalake.platform.warehouse.merging import time_order

    parts = hourly_parts(72, 24)
    written = write_parts(tmp_path, "messages/a", parts)
    listed = written[:]
    random.Random(5).shuffle(listed)
    target = math.ceil(sum(f.size for f in written) / 4)
    location = Location.of(tmp_path)
    groups = merge_groups(listed, target, partial(time_order, location, "messages/a"))
    assert len(written) - sum(len(g) for g in groups) + len(groups) <= file_bound(sum(f.size for f in written), target)
    hours = [hours_of(group, written) for group in groups]
    assert [h for group in hours for h in group] == list(range(24))  # in time order, every file once
    assert all(group == list(range(group[0], group[-1] + 1)) for group in hours), hours
    loads = [sum(f.size for f in group) for group in groups]
    assert max(loads) - min(loads) <= 2 * max(f.size for f in written), loads  # even, within a file or two
    merges = [Merge("messages/a", group, f"{FOLDER}/part-run-merged-{i}.zstd.parquet") for i, group in enumerate(groups)]
    for merge, output, group in zip(merges, run_merges(None, location, merges), hours):
        rows = read_merged(tmp_path, merge, output)
        assert rows == [r for h in group for r in parts[h].to_pylist()]  # the group's files, in time order
        low, high = MIDNIGHT + group[0] * HOUR, MIDNIGHT + (group[-1] + 1) * HOUR
        times = [r["time"] for r in rows]
        assert low - HOUR <= min(times) and max(times) < high  # its hours (and late events of one before)
    # files that carry their Delta statistics (a task's do) are ordered by them: no footer read
    from catalake.platform.warehouse.statistics import stats_json

    carried = [f._replace(path=f"not-read-{written.index(f)}",
                          stats=stats_json(pq.read_metadata(tmp_path / "messages/a" / f.path))) for f in listed]
    assert [f.path for f in time_order(location, "messages/a", carried)] == [f"not-read-{h}" for h in range(24)]
    # files without `time` (the dead-letter table) keep the order they come in
    plain = write_parts(tmp_path, "deadletter", evolving_parts(3, 12))
    assert time_order(location, "deadletter", plain[::-1]) == plain[::-1]


@pytest.mark.parametrize("whole", [True, False], ids=["read-whole", "streamed"])
def test_a_merged_file_holds_its_inputs_rows_in_order_and_the_statistics_of_its_footer(tmp_path, whole, monkeypatch):
    """Read whole or streamed (in row groups of about a hundred rows): the merged file is its
    inputs' rows in the order of the inputs, and its add action's statistics are its footer's,
    taken from the writer (no read of the file)."""
    from catalake.platform.warehouse import merging
    from catalake.platform.warehouse.statistics import stats_json

    parts = hourly_parts(9, 8)
    inputs = write_parts(tmp_path, "messages/a", parts)
    monkeypatch.setattr(merging, "ROW_GROUP_BYTES", 2048)
    merge = Merge("messages/a", inputs, f"{FOLDER}/part-run-merged-0.zstd.parquet")
    written = merge_files(Location.of(tmp_path), merge, whole_read_bytes=(1 << 30) if whole else 0)
    assert read_merged(tmp_path, merge, written) == [r for p in parts for r in p.to_pylist()]
    footer = pq.read_metadata(tmp_path / merge.table / written.path)
    assert footer.num_row_groups == 1 if whole else footer.num_row_groups >= 4
    assert written.stats == stats_json(footer)
    assert json.loads(written.stats)["minValues"]["time"].startswith(DAY.isoformat())


def merges_of(sizes: list[int]) -> list[Merge]:
    return [Merge(f"t{i}", [PartFile("a", size, 1)], f"o{i}") for i, size in enumerate(sizes)]


def test_many_small_merges_make_a_task_per_core_and_large_ones_a_task_per_target():
    small = merges_of([10_000] * 1000)
    tasks = merge_tasks(small, cores=2, task_bytes=128 << 20)
    assert len(tasks) == 2 and sorted(i for t in tasks for i in t) == list(range(1000))
    assert merge_tasks(small, cores=16, task_bytes=128 << 20).__len__() == 16
    large = merges_of([100 << 20] * 10)  # 1,000 MiB: ceil(1000 / 128) = 8 tasks on 2 cores
    assert len(merge_tasks(large, cores=2, task_bytes=128 << 20)) == math.ceil(10 * 100 / 128)
    assert len(merge_tasks(merges_of([1 << 30] * 3), cores=2, task_bytes=128 << 20)) == 3  # never more than merges


def write_parts(root: Path, table: str, parts: list[pa.Table]) -> list[PartFile]:
    folder = root / table / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i, part in enumerate(parts):
        path = folder / f"part-in-{i}.zstd.parquet"
        pq.write_table(part, path, compression="zstd", row_group_size=7)  # small row groups, as a task writes
        files.append(PartFile(f"{FOLDER}/{path.name}", path.stat().st_size, part.num_rows))
    return files


def evolving_parts(seed: int, pieces: int) -> list[pa.Table]:
    """Pieces of one table-partition; the later ones have a column added by schema evolution."""
    rng = random.Random(seed)
    parts, line = [], 0
    for i in range(pieces):
        n = rng.randrange(0, 40)
        columns = {"id": pa.array([f"e{line + k}" for k in range(n)]), "line": pa.array(range(line, line + n), pa.int64()),
                   "data": pa.array([{"x": rng.random(), "tags": ["a"] * (k % 3)} for k in range(n)],
                                    pa.struct([("x", pa.float64()), ("tags", pa.list_(pa.string()))]))}
        if i >= pieces // 2:
            columns["added"] = pa.array([f"v{k}" for k in range(n)])
        parts.append(pa.table(columns))
        line += n
    return parts


def expected_rows(parts: list[pa.Table]) -> list[dict]:
    return [{"added": None, **row} for part in parts for row in part.to_pylist()]


def read_merged(root: Path, merge: Merge, written: PartFile) -> list[dict]:
    table = pq.read_table(root / merge.table / written.path)
    assert table.num_rows == written.rows and (root / merge.table / written.path).stat().st_size == written.size
    return table.to_pylist()


@pytest.mark.parametrize("whole", [True, False], ids=["read-whole", "streamed"])
def test_a_merge_keeps_every_row_in_order_with_the_columns_added_since(tmp_path, whole):
    parts = evolving_parts(1, 9)
    inputs = write_parts(tmp_path, "messages/a", parts)
    merge = Merge("messages/a", inputs, f"{FOLDER}/part-run-merged-0.zstd.parquet")
    written = merge_files(Location.of(tmp_path), merge, whole_read_bytes=(1 << 30) if whole else 0)
    assert read_merged(tmp_path, merge, written) == expected_rows(parts)
    assert pq.ParquetFile(tmp_path / merge.table / written.path).metadata.num_row_groups == 1  # gathered


def test_a_merge_whose_inputs_hold_other_rows_than_the_log_says_writes_nothing(tmp_path):
    inputs = write_parts(tmp_path, "messages/a", evolving_parts(2, 3))
    wrong = [inputs[0]._replace(rows=inputs[0].rows + 1), *inputs[1:]]
    for whole in (1 << 30, 0):
        with pytest.raises(MergeError, match="rows, expected"):
            merge_files(Location.of(tmp_path), Merge("messages/a", wrong, f"{FOLDER}/out.zstd.parquet"), whole_read_bytes=whole)
        assert not (tmp_path / "messages/a" / FOLDER / "out.zstd.parquet").exists()


def many_merges(root: Path, tables: int) -> tuple[list[Merge], dict[str, list[pa.Table]]]:
    merges, parts = [], {}
    for t in range(tables):
        name = f"messages/t{t}"
        parts[name] = evolving_parts(100 + t, 2 + t % 5)
        merges.append(Merge(name, write_parts(root, name, parts[name]), f"{FOLDER}/part-run-merged-{t}.zstd.parquet"))
    return merges, parts


def test_merges_on_the_drivers_threads_return_each_merge_s_file_in_order(tmp_path):
    merges, parts = many_merges(tmp_path, 30)
    outputs = run_merges(None, Location.of(tmp_path), merges)
    assert [o.path for o in outputs] == [m.output for m in merges]
    for merge, output in zip(merges, outputs):
        assert read_merged(tmp_path, merge, output) == expected_rows(parts[merge.table])


@pytest.mark.spark
def test_a_spark_job_of_few_tasks_runs_many_merges_and_returns_each_merge_s_file(spark, tmp_path):
    merges, parts = many_merges(tmp_path, 40)
    jobs = spark.sparkContext.statusTracker()
    for task_bytes in (128 << 20, 1):  # a task per core; a task per merge
        for merge in merges:
            (tmp_path / merge.table / merge.output).unlink(missing_ok=True)
        spark.sparkContext.setJobGroup(f"merges-{task_bytes}", "merges")
        outputs = run_merges(spark, Location.of(tmp_path), merges, task_bytes=task_bytes, driver_bytes=0)
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        assert len(jobs.getJobIdsForGroup(f"merges-{task_bytes}")) == 1
        assert [o.path for o in outputs] == [m.output for m in merges]
        for merge, output in zip(merges, outputs):
            assert read_merged(tmp_path, merge, output) == expected_rows(parts[merge.table])
    stages = {jobs.getStageInfo(s).numTasks for j in jobs.getJobIdsForGroup("merges-134217728")
              for s in jobs.getJobInfo(j).stageIds}
    assert stages == {spark.sparkContext.defaultParallelism}
    # merges of a few kilobytes in all: on the driver's threads, no Spark job
    spark.sparkContext.setJobGroup("merges-small", "merges")
    outputs = run_merges(spark, Location.of(tmp_path), merges)
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert jobs.getJobIdsForGroup("merges-small") == [] and [o.path for o in outputs] == [m.output for m in merges]
    for merge, output in zip(merges, outputs):
        assert read_merged(tmp_path, merge, output) == expected_rows(parts[merge.table])


def layout(store) -> dict[str, list[PartFile]]:
    from catalake.platform.warehouse.queries import warehouse_tables

    names = [t for t in warehouse_tables(store.root).values() if t != "catalog/messages"]
    return {n: store.partition_files(n, PARTITION_COLUMN, DAY) for n in names}


def within_bound(store, target: int) -> bool:
    return all(len(found) <= file_bound(sum(f.size for f in found), target) for found in layout(store).values())


def wide_day(base: Path, definitions: int, records: int) -> tuple[Path, Path]:
    """A catalog of `definitions` types and a day of `records` records of about 2 KB over them:
    over 8 MiB, so that a Spark run cuts it into several tasks, each feeding every table."""
    schema = {"type": "object", "required": ["device"],
              "properties": {"device": {"type": "string"}, "reading": {"type": "number"}}}
    messages = {f"wide.T{i}": {
        "envelope": "CloudEvents/1.0",
        "envelopemetadata": {"type": {"value": f"wide.T{i}"}, "source": {"type": "uritemplate", "value": "/sites/{site}"}},
        "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema} for i in range(definitions)}
    catalog = base / "catalog"
    catalog.mkdir()
    (catalog / "wide.xreg.json").write_text(json.dumps({"specversion": "1.0-rc2", "messagegroups": {"wide": {"messages": messages}}}))
    landing = base / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    rng = random.Random(7)
    with open(landing / "day.jsonl", "w") as out:
        for n in range(records):
            out.write(json.dumps({"specversion": "1.0", "id": f"{n}", "source": f"/sites/s{n % 7}", "type": f"wide.T{n % definitions}",
                                  "data": {"device": f"d{n}-" + "x" * rng.randrange(1500, 2500), "reading": n % 100}}) + "\n")
    return catalog, landing.parent


@pytest.mark.spark
def test_a_full_run_of_several_spark_tasks_merges_each_table_within_the_bound_and_keeps_its_rows(spark, tmp_path):
    """Every table fed by each of the run's tasks: their files merged (in few tasks) to at most
    ceil(bytes / target) per table-partition, with the rows of a run that merged nothing."""
    from catalake.platform.catalog import load_catalog
    from catalake.platform.runs.day import classify_partition, conservation
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore
    from support.tables import table_hashes

    catalog_dir, landing = wide_day(tmp_path, 20, 5000)
    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, [catalog_dir])
    runs = {}
    for name, target in (("unmerged", 1), ("merged", 128 << 20)):  # a bound of 1 byte a file: nothing merged
        store = DeltaStore(spark, tmp_path / name)
        sync_message_tables(store, tables)
        said: list[str] = []
        result = classify_partition(spark, store, tables, str(landing), DAY, target_file_bytes=target,
                                    progress=said.append)
        assert result.tasks >= 2 and result.records == 5000
        assert conservation(store, tables, DAY, result.records, result.stored)[0]
        runs[name] = (store, said)
    merged, said = runs["merged"]
    assert any(" file(s) of 20 table(s) merged into 20 " in m for m in said), said  # every message table
    assert within_bound(merged, 128 << 20) and max(len(f) for f in layout(merged).values()) == 1
    assert max(len(f) for f in layout(runs["unmerged"][0]).values()) >= 2
    assert table_hashes(merged.root) == table_hashes(runs["unmerged"][0].root)
    # the merged-from files were swept after the commit: each partition folder holds what its table committed
    from deltalake import DeltaTable

    for folder in Path(merged.root).glob(f"**/event_date={DAY.isoformat()}"):
        committed = {Path(u).name for u in DeltaTable(str(folder.parent)).file_uris()}
        assert {p.name for p in folder.glob("*.parquet")} == committed, folder


@pytest.mark.spark
def test_a_day_of_increments_compacted_by_spark_keeps_its_rows_within_the_bound(spark, tmp_path):
    """The demo day landing in pieces, an increment each (a file per increment and table), then
    compacted by a Spark job of few tasks: one file per table-partition, the same rows."""
    from catalake.platform.catalog import load_catalog
    from catalake.platform.maintenance import compact_day
    from catalake.platform.runs.increment import classify_increment
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
    from catalake.platform.warehouse.store import DeltaStore
    from support.paths import DEMO_DIR
    from support.tables import table_hashes

    catalog = load_catalog([DEMO_DIR / "catalog"])
    tables, _ = message_tables(catalog, [DEMO_DIR / "catalog"])
    landing = tmp_path / "landing" / DAY.isoformat()
    landing.mkdir(parents=True)
    pieces = []
    for source in sorted((DEMO_DIR / "landing" / DAY.isoformat()).iterdir()):
        if source.suffix != ".jsonl":
            (landing / source.name).write_bytes(source.read_bytes())
            continue
        lines = source.read_text().splitlines(keepends=True)
        size = math.ceil(len(lines) / 4)
        pieces += [(landing / f"{source.stem}-{i}.jsonl", "".join(lines[i * size:(i + 1) * size])) for i in range(4)]
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    for path, text in pieces:
        path.write_text(text)
        classify_increment(spark, store, tables, str(landing.parent), DAY, local_bytes=1 << 30)
    before = table_hashes(store.root)
    many = {n: len(f) for n, f in layout(store).items()}
    assert max(many.values()) >= 4 and not within_bound(store, 128 << 20)
    names = list(many)
    said: list[str] = []
    done = compact_day(spark, store, names, DAY, target=128 << 20, progress=said.append)
    assert {c.table for c in done} == {n for n, count in many.items() if count > 1}
    assert all(c.skipped is None and c.files_after == 1 and c.files_before == many[c.table] for c in done)
    assert any(f"compacted {len(done)} table(s) in planning" in m for m in said), said
    assert within_bound(store, 128 << 20) and max(len(f) for f in layout(store).values()) == 1
    assert table_hashes(store.root) == before
