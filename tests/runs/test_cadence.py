"""Each table's cadence (issue 65): an increment commits a table when it is due and stages its
files otherwise; an append at a version the ledger knows writes the log entry without reading
the log. Real Delta tables in local processes, read back with delta-rs; the clock is given, the
landing's modification times set."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from catalake.demo.generate import day_records
from catalake.platform.catalog import load_catalog
from catalake.platform.maintenance import checkpoints
from catalake.platform.maintenance.vacuuming import vacuum_warehouse
from catalake.platform.runs import ledger
from catalake.platform.config import parse_freshness
from catalake.platform.runs.cadence import Cadence
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.increment import classify_increment
from catalake.platform.runs.recovery import remove_orphans
from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.paths import DEMO_CATALOG, REPO
from support.runs import no_spark

DAY = dt.date(2026, 11, 21)
T0 = 1_800_000_000.0  # the landing's files are dated from here; increments are given a clock after it
STAGING = Cadence(freshness=60.0, interval=10.0)  # due when age + 10 s + the last increment's seconds reach 60 s


@pytest.fixture(scope="module")
def demo():
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    return tables


@pytest.fixture(scope="module")
def records():
    files = day_records(DAY, 60)  # 123 lines, 30 of them RideStarted
    return [json.dumps(r, separators=(",", ":")) if not isinstance(r, str) else r for r in files["rides-http.jsonl"]]


def store_for(path: Path, tables) -> DeltaStore:
    store = DeltaStore(no_spark, path, "delta-rs", master="local[2]")
    sync_message_tables(store, tables)
    return store


def land(folder: Path, name: str, lines: list[str], at: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")
    os.utime(folder / name, (at, at))


def run(store, tables, landing: Path, at: float, cadence: Cadence = STAGING):
    """An increment at time `at`, its day's conservation checked with what it staged."""
    result = classify_increment(no_spark, store, tables, str(landing), DAY, local_bytes=1 << 30, cadence=cadence,
                                clock=lambda: at)
    ok, counts = conservation(store, tables, DAY, result.records_of_day, result.stored, result.held, result.staged)
    assert ok, counts
    return result


def day_rows(store: DeltaStore, tables) -> dict[str, list[str]]:
    """Per table, the sorted hashes of the day's committed rows, `ingested_at` left out."""
    out = {}
    for name in [t.name for t in tables] + [DEADLETTER_TABLE]:
        if store.exists(name):
            rows = DeltaTable(store.path(name)).to_pyarrow_table().drop_columns(["ingested_at"]).to_pylist()
            found = sorted(hashlib.sha256(json.dumps(r, sort_keys=True, default=str).encode()).hexdigest()
                           for r in rows if r["event_date"] == DAY)
            if found:
                out[name] = found
    return out


def full_run_rows(tmp_path: Path, tables, landing: Path) -> dict[str, list[str]]:
    full = store_for(tmp_path / "full", tables)
    classify_partition(no_spark, full, tables, str(landing), DAY, local_bytes=1 << 30)
    return day_rows(full, tables)


def staged_files(store: DeltaStore) -> list[Path]:
    day_ledger = ledger.load(store.location, DAY) or {}
    return [Path(store.path(name)) / f["path"] for name, files in day_ledger.get("staged", {}).items() for f in files]


def assert_each_file_once_and_no_orphans(store: DeltaStore, tables) -> None:
    """Every Parquet file of the day in a table's folder is in its log once, or staged."""
    staged = {p.name for p in staged_files(store)}
    for name in [t.name for t in tables] + [DEADLETTER_TABLE]:
        if not store.exists(name):
            continue
        uris = [os.path.basename(u) for u in DeltaTable(store.path(name)).file_uris()]
        assert len(uris) == len(set(uris)), f"{name}: a file committed twice"
        found = {p.name for p in Path(store.path(name)).glob(f"event_date={DAY}/*.parquet")}
        assert found - staged == {u for u in uris if u in found}, name


@pytest.fixture
def started(tmp_path, demo, records):
    """A day with a full run of its first 10 records, the landing then given 10 more at T0."""
    landing = tmp_path / "landing" / DAY.isoformat()
    land(landing, "a.jsonl", records[:10], T0 - 600)
    store = store_for(tmp_path / "warehouse", demo)
    assert run(store, demo, tmp_path / "landing", T0 - 590).kind == "full"
    land(landing, "b.jsonl", records[10:20], T0)
    return store, landing


def test_a_cold_table_stays_staged_until_due_and_no_reader_sees_it_before(tmp_path, demo, started):
    store, landing = started
    before = day_rows(store, demo)
    first = run(store, demo, tmp_path / "landing", T0 + 5)  # 5 s old: due at 60 - 10 - its seconds
    assert first.records == 10 and first.written == [] and sum(first.staged.values()) == 10
    assert day_rows(store, demo) == before  # written, not committed: no reader sees a row of it
    assert all(p.exists() for p in staged_files(store)) and staged_files(store)
    assert {f.due for f in first.freshness.values()} == {None}
    assert all(f.lag == 5.0 and f.committed_lag is None and f.fresh for f in first.freshness.values())
    assert ledger.next_due(store.location, DAY) == T0 + 50  # landed + 60 - 10 - no increment's seconds yet

    idle = run(store, demo, tmp_path / "landing", T0 + 20)  # nothing new, none due: nothing written
    assert idle.records == 0 and idle.written == [] and sum(idle.staged.values()) == 10
    assert [i["n"] for i in ledger.load(store.location, DAY)["increments"]] == [1, 2]

    due = run(store, demo, tmp_path / "landing", T0 + 52)  # nothing new landed; the staged rows are due
    assert due.records == 0 and due.written and due.staged == {}
    assert all(f.due == "freshness" and f.committed_lag == 52.0 and f.lag == 0.0 for f in due.freshness.values())
    assert staged_files(store) == [] and ledger.next_due(store.location, DAY) is None
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")
    assert_each_file_once_and_no_orphans(store, demo)


def test_a_table_past_its_target_fails_freshness_and_a_full_table_commits_at_once(tmp_path, demo, started):
    store, landing = started
    late = run(store, demo, tmp_path / "landing", T0 + 75)  # the increment ran late: committed 75 s after landing
    assert late.staged == {} and all(not f.fresh and f.committed_lag == 75.0 for f in late.freshness.values())
    land(landing, "c.jsonl", ["x" * 10] * 3, T0 + 80)  # dead letters, a few bytes: the size target is 1 byte
    sized = run(store, demo, tmp_path / "landing", T0 + 81, Cadence(freshness=600, interval=0, target_bytes=1))
    assert sized.freshness[DEADLETTER_TABLE].due == "size" and sized.staged == {}


def of_one_table(records: list[str]) -> tuple[str, list[str]]:
    """The table of RideStarted events, and the records of it (well-formed ones)."""
    def started(line: str) -> bool:
        try:
            return json.loads(line)["type"] == "bikeshare.rides.RideStarted"
        except (ValueError, KeyError, TypeError):
            return False

    return "messages/bikeshare_rides__ridestarted", [r for r in records if started(r)]


def test_appends_at_a_known_version_write_valid_delta_entries_and_yield_to_any_other_writer(tmp_path, demo, records):
    landing = tmp_path / "landing" / DAY.isoformat()
    store = store_for(tmp_path / "warehouse", demo)
    name, started = of_one_table(records)
    every = Cadence(stage=False)
    for i in range(4):  # a full run, then increments: the first commits through delta-rs, the others at the tip
        land(landing, f"{i}.jsonl", started[i * 2:(i + 1) * 2], T0 + i)
        result = run(store, demo, tmp_path / "landing", T0 + i + 1, every)
    assert "appends" in result.seconds and "logs" not in result.seconds  # no log read
    table = DeltaTable(store.path(name))
    newest = table.history(1)[0]
    assert newest["engineInfo"] == "catalake" and newest["operation"] == "WRITE" and newest["isBlindAppend"]
    assert table.version() == result.versions[name]
    app = ledger.app_id(DAY, ledger.load(store.location, DAY)["epoch"])
    assert table.transaction_version(app) == 4
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")

    # another writer commits in between (here a property set): the append yields and goes through delta-rs
    table.alter.set_table_properties({"delta.logRetentionDuration": "interval 31 days"})
    land(landing, "4.jsonl", started[8:10], T0 + 10)
    yielded = run(store, demo, tmp_path / "landing", T0 + 11, every)
    assert yielded.versions[name] == DeltaTable(store.path(name)).version() == table.version() + 1
    assert "logs" in yielded.seconds and DeltaTable(store.path(name)).history(1)[0]["engineInfo"] != "catalake"

    # the table made again since its tip (its log restarts): the tip's entry is gone, the append yields
    folder = Path(store.path(name))
    for entry in sorted((folder / "_delta_log").glob("*.json"))[1:]:
        entry.unlink()
    land(landing, "5.jsonl", started[10:12], T0 + 20)
    again = classify_increment(no_spark, store, demo, str(tmp_path / "landing"), DAY, local_bytes=1 << 30,
                               cadence=every, clock=lambda: T0 + 21)
    versions = sorted(int(p.stem) for p in (folder / "_delta_log").glob("*.json"))
    assert versions == [0, 1] and again.versions[name] == 1
    assert DeltaTable(store.path(name)).to_pyarrow_table().num_rows == 2


def test_checkpoints_come_at_the_tables_own_interval_on_a_cadence_of_their_own(tmp_path, demo, records):
    landing = tmp_path / "landing" / DAY.isoformat()
    store = store_for(tmp_path / "warehouse", demo)
    name, started = of_one_table(records)
    DeltaTable(store.path(name)).alter.set_table_properties({"delta.checkpointInterval": "3"})
    last = Path(store.path(name)) / "_delta_log" / "_last_checkpoint"
    every = Cadence(stage=False)
    for i in range(5):
        land(landing, f"{i}.jsonl", started[i:i + 1], T0 + i)
        run(store, demo, tmp_path / "landing", T0 + i + 1, every)
    assert not last.exists()  # no commit checkpoints on its path
    tip = ledger.load(store.location, DAY)["tips"][name]
    assert tip["checkpoint_interval"] == 3
    assert checkpoints.due(store.location, [DAY]) == {name: tip["version"] + 1}  # never checkpointed
    done = checkpoints.checkpoint_tables(store, [name])
    assert [(c.table, c.version) for c in done] == [(name, tip["version"])]
    assert json.loads(last.read_text())["version"] == tip["version"] and checkpoints.due(store.location, [DAY]) == {}
    for i in range(5, 8):
        land(landing, f"{i}.jsonl", started[i:i + 1], T0 + i)
        run(store, demo, tmp_path / "landing", T0 + i + 1, every)
    assert checkpoints.due(store.location, [DAY]) == {name: 3}
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")


def test_the_vacuum_and_recovery_never_take_a_staged_file_and_a_full_run_removes_them(tmp_path, demo, started):
    store, landing = started
    run(store, demo, tmp_path / "landing", T0 + 5)
    staged = staged_files(store)
    assert staged
    for path in staged:  # older than any retention
        os.utime(path, (T0 - 10 * 86400, T0 - 10 * 86400))
    vacuum_warehouse(store, [t.name for t in demo] + [DEADLETTER_TABLE], retention_hours=0.0)
    day_ledger = ledger.load(store.location, DAY)
    remove_orphans(store, day_ledger["increments"][-1]["run"], DAY, [t.name for t in demo] + [DEADLETTER_TABLE])
    assert all(p.exists() for p in staged)

    full = classify_partition(no_spark, store, demo, str(tmp_path / "landing"), DAY, local_bytes=1 << 30)
    assert full.records == 20 and not any(p.exists() for p in staged)
    assert ledger.load(store.location, DAY).get("staged", {}) == {}
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")


def test_freshness_targets_are_set_per_group_and_message():
    default, by_name = parse_freshness("45, bikeshare.rides=30, bikeshare.rides/bikeshare.rides.RideEnded=10")
    cadence = Cadence(freshness=default, by_name=by_name)
    assert (cadence.target("other"), cadence.target("bikeshare.rides"),
            cadence.target("bikeshare.rides", "bikeshare.rides.RideEnded"), cadence.target(None)) == (45, 30, 10, 45)
    for bad in ("soon", "g=", "=5", "-3"):
        with pytest.raises(ValueError, match="neither"):
            parse_freshness(bad)


KILLED_AFTER_FIRST_APPEND = """
import os, sys, datetime as dt
from catalake.platform.warehouse import store as storage
from catalake.platform.catalog import load_catalog
from catalake.platform.runs.cadence import Cadence
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.message_tables import message_tables

real = storage.DeltaStore.append_at
def append_then_die(self, *args, **kwargs):  # killed right after its first append at a known version
    tip = real(self, *args, **kwargs)
    os._exit(137)
storage.DeltaStore.append_at = append_then_die

tables, _ = message_tables(load_catalog([sys.argv[1]]), [sys.argv[1]])
store = storage.DeltaStore(lambda: None, sys.argv[2], "delta-rs", master="local[2]")
classify_increment(lambda: None, store, tables, sys.argv[3], dt.date(2026, 11, 21), local_bytes=1 << 30,
                   cadence=Cadence(freshness=60.0, interval=10.0), clock=lambda: float(sys.argv[4]))
"""


def test_an_increment_killed_between_its_appends_is_finished_once_with_its_staged_files(tmp_path, demo, started,
                                                                                          records):
    store, landing = started
    run(store, demo, tmp_path / "landing", T0 + 1, Cadence(stage=False))  # every table fed has a tip now
    land(landing, "c.jsonl", records[20:30], T0 + 10)
    assert run(store, demo, tmp_path / "landing", T0 + 12).staged  # staged
    land(landing, "d.jsonl", records[30:40], T0 + 60)
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_FIRST_APPEND, str(DEMO_CATALOG),
                             str(tmp_path / "warehouse"), str(tmp_path / "landing"), str(T0 + 61)],
                            capture_output=True, text=True, cwd=REPO, timeout=300)
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert not ledger.load(store.location, DAY)["increments"][-1]["done"]  # stopped between its appends
    finished = run(store, demo, tmp_path / "landing", T0 + 62, Cadence(stage=False))
    assert finished.staged == {} and staged_files(store) == []
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")
    assert_each_file_once_and_no_orphans(store, demo)


KILLED_AT_RANDOM = """
import sys, datetime as dt
from catalake.platform.warehouse.store import DeltaStore
from catalake.platform.catalog import load_catalog
from catalake.platform.runs.cadence import Cadence
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.message_tables import message_tables

tables, _ = message_tables(load_catalog([sys.argv[1]]), [sys.argv[1]])
store = DeltaStore(lambda: None, sys.argv[2], "delta-rs", master="local[2]")
classify_increment(lambda: None, store, tables, sys.argv[3], dt.date(2026, 11, 21), local_bytes=1 << 30,
                   cadence=Cadence(freshness=60.0, interval=10.0), clock=lambda: float(sys.argv[4]))
print("done")
"""


STOPPED_AFTER_ITS_ENTRY = """
import datetime as dt, os, sys
from catalake.platform.catalog import load_catalog
from catalake.platform.runs import increment
from catalake.platform.runs.cadence import Cadence
from catalake.platform.warehouse.message_tables import message_tables
from catalake.platform.warehouse.store import DeltaStore
increment._run_increment = lambda *args, **kwargs: os._exit(137)  # killed once its entry is saved
tables, _ = message_tables(load_catalog([sys.argv[1]]), [sys.argv[1]])
store = DeltaStore(lambda: None, sys.argv[2], "delta-rs", master="local[2]")
increment.classify_increment(lambda: None, store, tables, sys.argv[3], dt.date(2026, 11, 21), local_bytes=1 << 30,
                             cadence=Cadence(stage=False), clock=lambda: float(sys.argv[4]))
"""


def test_finishing_a_stopped_increment_makes_the_day_due_for_what_landed_after_it(tmp_path, demo, records):
    """An increment that finds one stopped reads that one's pieces only (its commits carry its
    number); a file that landed after it planned is read by the next increment, and the day is
    due at once so that the landing sensor asks for it (it already saw that landing change)."""
    landing = tmp_path / "landing" / DAY.isoformat()
    land(landing, "a.jsonl", records[:10], T0 - 600)
    store = store_for(tmp_path / "warehouse", demo)
    run(store, demo, tmp_path / "landing", T0 - 590, Cadence(stage=False))
    land(landing, "b.jsonl", records[10:20], T0)
    killed = subprocess.run([sys.executable, "-c", STOPPED_AFTER_ITS_ENTRY, str(DEMO_CATALOG), str(tmp_path / "warehouse"),
                             str(tmp_path / "landing"), str(T0 + 1)], cwd=REPO)
    assert killed.returncode == 137
    assert [i["done"] for i in ledger.load(store.location, DAY)["increments"]] == [True, False]
    land(landing, "c.jsonl", records[20:40], T0 + 20)

    finishing = run(store, demo, tmp_path / "landing", T0 + 21, Cadence(stage=False))
    assert finishing.read["files"] == 1 and finishing.records == 10  # b.jsonl, the stopped one's
    assert ledger.next_due(store.location, DAY) == T0 + 21  # due now: c.jsonl waits unread
    after = run(store, demo, tmp_path / "landing", T0 + 22, Cadence(stage=False))
    assert after.read["files"] == 1 and after.records == 20
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")
    assert ledger.next_due(store.location, DAY) is None  # nothing staged, nothing unread


@pytest.mark.repeated
def test_increments_killed_at_random_moments_commit_each_row_once_and_leave_nothing_staged(tmp_path, demo, records):
    """Cadenced increments, each a process killed after a random delay (or not), 20 s apart in the
    given clock, new lines landing before each; then one increment that commits what is staged
    (after one that finishes the last, should it have been stopped: an increment that finds a
    stopped one reads its pieces only, what landed since is the next one's): the tables of one
    full run, each file committed once, nothing staged or orphaned."""
    landing = tmp_path / "landing" / DAY.isoformat()
    land(landing, "a.jsonl", records[:5], T0 - 600)
    store = store_for(tmp_path / "warehouse", demo)
    run(store, demo, tmp_path / "landing", T0 - 590)
    rng, killed, step, whole = random.Random(65), 0, 0, None
    while step < 20 or killed < 5:
        at = T0 + 20 * step
        land(landing, f"{step:02d}.jsonl", records[5 + 4 * (step % 10):9 + 4 * (step % 10)], at)
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", KILLED_AT_RANDOM, str(DEMO_CATALOG), str(tmp_path / "warehouse"),
                                    str(tmp_path / "landing"), str(at + 1)], cwd=REPO, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        if whole is None:  # the first run is whole: how long one takes
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err.decode()[-2000:]
            whole = time.monotonic() - started
        else:
            try:
                process.wait(timeout=rng.uniform(0.3, 1.1) * whole)
            except subprocess.TimeoutExpired:
                process.kill()
                killed += 1
            process.communicate(timeout=300)
        step += 1
        assert step < 40, f"only {killed} of {step} runs were killed"
    if not ledger.load(store.location, DAY)["increments"][-1]["done"]:
        run(store, demo, tmp_path / "landing", T0 + 20 * step + 60, Cadence(stage=False))
    final = run(store, demo, tmp_path / "landing", T0 + 20 * step + 120, Cadence(stage=False))
    assert final.staged == {} and staged_files(store) == []
    assert day_rows(store, demo) == full_run_rows(tmp_path, demo, tmp_path / "landing")
    assert_each_file_once_and_no_orphans(store, demo)
