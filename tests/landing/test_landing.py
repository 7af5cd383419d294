"""The landing zone read as an operator would hope: literal file names,
a jail for the landing root, bounded records, corrupt compressed files; in plain Python."""

import datetime as dt
import gzip
import json
import os

from catalake.platform.catalog import load_catalog
from catalake.platform.landing.listing import Landed, partition_files
from catalake.platform.landing.planning import plan_tasks
from catalake.platform.landing.reading import MAX_RECORD_BYTES, read_piece
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.message_tables import message_tables
from support.paths import DEMO_CATALOG
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)


def event(n: int) -> str:
    return json.dumps({"specversion": "1.0", "id": f"e{n}", "source": "/x", "type": "unknown.Type"})


def classify(root, tmp_path):
    """The day through the classifier, in this process: (TaskResult, dead-letter rows by reason)."""
    tables, _ = message_tables(load_catalog([DEMO_CATALOG]), [DEMO_CATALOG])
    plan = plan_for(tables, tmp_path / "warehouse", DAY)
    classifier = Classifier(plan)
    pieces = [p for task in plan_tasks(None, partition_files(root, DAY), 1) for p in task]
    result = classifier.run("0.0", pieces)
    import pyarrow.parquet as pq

    rows = [r for rel, *_ in result.files.get("deadletter", [])
            for r in pq.read_table(tmp_path / "warehouse" / "deadletter" / rel).to_pylist()]
    return result, rows


def test_file_names_are_literal_paths_each_read_once(tmp_path):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    names = ["rides.jsonl", "rides-*.jsonl", "b21-[x].jsonl", "with space %20.jsonl"]
    for i, name in enumerate(names):
        (day / name).write_text("".join(event(10 * i + k) + "\n" for k in range(3)))
    result, rows = classify(tmp_path / "landing", tmp_path)
    assert result.records == 12 and result.per_file == {str(day / n): 3 for n in names}
    # lineage names the file as it is on disk (no URL encoding)
    assert {r["source_file"] for r in rows} == {str(day / n) for n in names}


def test_symbolic_links_are_skipped_and_reported(tmp_path):
    root = tmp_path / "landing"
    day = root / DAY.isoformat()
    day.mkdir(parents=True)
    (day / "good.jsonl").write_text(event(1) + "\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text(event(2) + "\n")
    (day / "passwd.jsonl").symlink_to(outside / "secret.jsonl")
    (day / "linked").symlink_to(outside, target_is_directory=True)
    skipped = []
    assert [f.path for f in partition_files(root, DAY, skipped)] == [str(day / "good.jsonl")]
    assert sorted(os.path.basename(p) for p in skipped) == ["linked", "passwd.jsonl"]
    # a day folder that is itself a link is not read either
    other = root / "2026-11-21"
    other.symlink_to(outside, target_is_directory=True)
    skipped = []
    assert partition_files(root, dt.date(2026, 11, 21), skipped) == [] and skipped == [str(other)]


def test_a_record_over_the_limit_is_dead_lettered_without_reading_it_whole(tmp_path):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    big = '{"specversion": "1.0", "id": "big", "data": "' + "x" * (MAX_RECORD_BYTES + 10) + '"}'
    (day / "mixed.jsonl").write_text(event(1) + "\n" + big + "\n" + event(3) + "\n")
    result, rows = classify(tmp_path / "landing", tmp_path)
    assert result.records == 3 and result.deadletter == {"record_too_large": 1, "no_match": 2}
    too_large = next(r for r in rows if r["reason"] == "record_too_large")
    assert too_large["source_line"] == 2 and len(too_large["raw"]) == 4096
    assert str(len(big)) in too_large["detail"]


def test_a_truncated_gzip_file_dead_letters_its_break_and_keeps_its_lines(tmp_path):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    whole = gzip.compress("".join(event(n) + "\n" for n in range(200)).encode())
    (day / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (day / "fine.jsonl").write_text(event(999) + "\n")
    cut = day / "cut.jsonl.gz"
    lines = list(read_piece(None, plan_tasks(None, [Landed(str(cut), cut.stat().st_size)], 1)[0][0]))
    assert 0 < len(lines) - 1 < 200 and type(lines[-1][1]).__name__ == "Corrupt"
    result, rows = classify(tmp_path / "landing", tmp_path)
    corrupt = next(r for r in rows if r["reason"] == "corrupt_file")
    assert corrupt["source_file"].endswith("cut.jsonl.gz") and "breaks off at line" in corrupt["detail"]
    assert result.deadletter == {"corrupt_file": 1, "no_match": len(lines) - 1 + 1}


def test_json_is_read_strictly_with_a_reason_per_fault(tmp_path):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    lines = [
        event(1).encode(),
        b'{"specversion": "1.0", "id": "n", "source": "/x", "type": "t", "data": {"v": NaN}}',
        b'{"specversion": "1.0", "id": "d", "source": "/x", "type": "t", "data": {"v": 1, "v": 2}}',
        b'{"specversion": "1.0", "id": "b", "source": "/x", "type": "t", "data": {"v": 123456789012345678901234}}',
        b'{"specversion": "1.0", "id": "u", "source": "/x", "type": "t", "data": "caf\xe9"}',
        b'{"specversion": "1.0", "id": "deep", "data": ' + b"[" * 2000 + b"]" * 2000 + b"}",
        b'{"specversion": "1.0", "id": "deep", "data": ' + b"[" * 200 + b"]" * 200 + b"}",
        event(8).encode(),
    ]
    (day / "faults.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result, rows = classify(tmp_path / "landing", tmp_path)
    assert result.records == 8
    assert result.deadletter == {"no_match": 2, "malformed_json": 3, "invalid_utf8": 1, "too_deep": 2}
    detail = {r["source_line"]: (r["reason"], r["detail"]) for r in rows}
    assert "NaN is not a JSON number" in detail[2][1]
    assert detail[3][1] == "duplicate key 'v' in the object at /data"
    assert detail[4][1] == "integer 123456789012345678901234 at /data/v is outside the 64-bit range"
    assert detail[5][0] == "invalid_utf8" and "UTF-8" in detail[5][1]
    assert detail[7][1] == "nested 201 levels deep; the limit is 128"
    # every line is in exactly one place, with its line number
    assert sorted(detail) == list(range(1, 9))


def test_an_invalid_envelope_is_dead_lettered_naming_the_attribute(tmp_path):
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    base = {"specversion": "1.0", "id": "e", "source": "/x", "type": "unknown.Type"}
    lines = [
        {**base, "time": "2026-11-20T10:46:30"},  # no offset
        {**base, "time": "yesterday"},
        {**base, "time": "2026-11-20"},  # a date is not a timestamp
        {**base, "id": ""},
        {**base, "source": ""},
        {**base, "time": "2026-11-20t10:46:30z"},  # RFC 3339 allows lower-case t and z
    ]
    (day / "envelopes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result, rows = classify(tmp_path / "landing", tmp_path)
    assert result.deadletter == {"invalid_attribute": 5, "no_match": 1}
    detail = {r["source_line"]: r["detail"] for r in rows}
    assert all(detail[n].startswith("time '") and "RFC 3339" in detail[n] for n in (1, 2, 3))
    assert detail[4].startswith("empty CloudEvents attribute(s): id") and "source" in detail[5]


def test_the_plan_reads_every_landed_byte_exactly_once(tmp_path):
    from catalake.platform.landing.planning import Piece, tiling_faults

    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True)
    (day / "big.jsonl").write_text("".join(event(n) + "\n" for n in range(2000)))
    (day / "small.jsonl").write_text(event(1) + "\n")
    files = partition_files(tmp_path / "landing", DAY)
    tasks = plan_tasks(None, files, 2, target=10_000)  # the big file cut in pieces
    assert len([p for t in tasks for p in t if p.path.endswith("big.jsonl")]) > 5
    assert tiling_faults(files, tasks) == []
    big = str(day / "big.jsonl")
    first = next(p for t in tasks for p in t if p.path == big and p.start == 0)
    assert tiling_faults(files, tasks + [[first]]) == [f"{big}: bytes 0-{first.end} read twice"]
    rest = [[p for p in t if p is not first] for t in tasks]
    assert tiling_faults(files, rest) == [f"{big}: bytes 0-{first.end} read never"]
    small = str(day / "small.jsonl")
    assert tiling_faults(files, tasks + [[Piece(small)]]) == [f"{small}: read 2 times"]
    assert tiling_faults(files + [files[0]], tasks) == [f"{files[0].path}: listed 2 times"]


def test_each_task_reads_the_next_stretch_of_the_day_in_path_order_with_even_bytes(tmp_path):
    """Landed paths sort by arrival: each task reads the next run of pieces in path order (so
    that the files it writes hold the events of that stretch of the day, not of the whole day),
    with bytes within one piece of the even share; a file larger than a task's share is cut and
    its pieces follow one another."""
    import random

    from catalake.platform.landing.planning import tiling_faults

    day = tmp_path / "landing" / DAY.isoformat()
    rng = random.Random(72)
    for minute in range(0, 24 * 60, 12):  # a sink's file every 12 minutes, busier by day, one burst
        hour = day / f"hour={minute // 60:02d}"
        hour.mkdir(parents=True, exist_ok=True)
        lines = 900 if minute == 14 * 60 else rng.randrange(5, 40) * (3 if 8 <= minute // 60 < 20 else 1)
        (hour / f"part-{minute:04d}.jsonl").write_text("".join(event(minute * 1000 + k) + "\n" for k in range(lines)))
    files = partition_files(tmp_path / "landing", DAY)
    total = sum(f.size for f in files)
    tasks = plan_tasks(None, files, 4, target=-(-total // 16))
    assert len(tasks) == 16 and tiling_faults(files, tasks) == []
    read = [(p.path, p.start) for task in tasks for p in task]
    assert read == sorted(read)  # task after task, the pieces in path order: each task a stretch
    burst = [i for i, task in enumerate(tasks) for p in task if p.path.endswith("part-0840.jsonl")]
    assert len(burst) >= 3 and burst == list(range(burst[0], burst[-1] + 1))  # cut, its pieces in a row
    loads = [sum(p.length for p in task) for task in tasks]
    largest = max(p.length for task in tasks for p in task)
    assert all(abs(load - total / len(tasks)) <= largest for load in loads), (loads, largest)


def test_tasks_follow_the_files_arrival_where_paths_sort_by_source_first(tmp_path):
    """Paths that sort by source before time (a capture tool's `<partition>/<hour>/...`): the
    tasks take the files in the order they arrived (their modification times), so each reads a
    stretch of the day across the sources, not one source's whole day."""
    day = tmp_path / "landing" / DAY.isoformat()
    arrived = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.timezone.utc).timestamp()
    for hour in range(24):
        for source in ("a", "b", "c"):
            path = day / f"partition={source}" / f"hour={hour:02d}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(event(hour * 100 + k) + "\n" for k in range(20)))
            stamp = arrived + hour * 3600 + ord(source)
            os.utime(path, (stamp, stamp))
    files = partition_files(tmp_path / "landing", DAY)
    tasks = plan_tasks(None, files, 4, target=-(-sum(f.size for f in files) // 8))
    hours = [sorted({int(p.path.rsplit("hour=", 1)[1][:2]) for p in task}) for task in tasks]
    assert len(tasks) == 8 and all(h[-1] - h[0] <= 3 for h in hours), hours  # a stretch of about 3 hours each
    assert [h for task in hours for h in task] == sorted(h for task in hours for h in task)


def test_partitions_start_at_the_first_landed_day_unless_configured(tmp_path):
    from catalake.defs.catalog.state import start_date
    from catalake.platform.config import Settings
    from catalake.platform.landing.listing import DEFAULT_START
    from catalake.resources import Configured

    def first(**env) -> str:
        settings = Settings.from_env({"CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"), **env})
        return start_date(Configured.from_settings(settings), None)

    for name in ("2026-10-05", "dt=2026-09-30", "notes", "2026-13-99x"):
        (tmp_path / name).mkdir()
    assert first(CATALAKE_LANDING=str(tmp_path)) == "2026-09-30"
    assert first(CATALAKE_LANDING=str(tmp_path), CATALAKE_START_DATE="2026-01-01") == "2026-01-01"
    assert first(CATALAKE_LANDING=str(tmp_path / "none")) == DEFAULT_START
