"""Fault injection: a partition run killed while it writes: the re-run gives the
tables a clean run gives, and nothing the killed run left stays behind; and the holes found
later (a replay whose commit fails or that is killed, files that grow or have non-UTF-8 names, runs
that share a new DAGSTER_HOME, unusual landing names), one test named after each point.

Tests that make a folder immutable (`chattr +i`) or kill a process clean up in a `finally`."""

import contextlib
import datetime as dt
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from catalake.platform.uris import Location

DAY = "2026-11-20"


def catalake_run(env: dict, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "catalake.cli", "run", "--date", DAY, "--json", "--no-analytics"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def part_files(warehouse: Path) -> set[Path]:
    return {p for p in warehouse.glob(f"*/*/event_date={DAY}/part-*.parquet")} | set(
        warehouse.glob(f"deadletter/event_date={DAY}/part-*.parquet"))


def committed(warehouse: Path) -> set[Path]:
    files = set()
    for log in warehouse.glob("**/_delta_log"):
        table = log.parent
        files |= {table / uri.split(str(table) + "/", 1)[-1] for uri in DeltaTable(str(table)).file_uris()}
    return {Path(os.path.normpath(f)) for f in files}


def ever_committed(warehouse: Path) -> set[Path]:
    """Every file any version of any table's Delta log added (replaced ones stay on disk until a
    vacuum: those are not orphans)."""
    files = set()
    for log in warehouse.glob("**/_delta_log"):
        for entry in log.glob("*.json"):
            for line in entry.read_text().splitlines():
                add = json.loads(line).get("add") if line.strip() else None
                if add:
                    files.add(Path(os.path.normpath(log.parent / add["path"])))
    return files


def day_rows(warehouse: Path) -> dict[str, list]:
    """Every table's rows of the day, without the run's timestamp, in a stable order."""
    out = {}
    for log in sorted(warehouse.glob("**/_delta_log")):
        table = log.parent
        if table.name == "catalog" or "expectations" in table.parts:
            continue
        rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
        rows = [{k: v for k, v in r.items() if k != "ingested_at"} for r in rows if str(r.get("event_date")) == DAY]
        out[str(table.relative_to(warehouse))] = sorted(rows, key=lambda r: (r["source_file"], r["source_line"]))
    return out


def group_alive(pgid: int) -> bool:
    """Whether any process of process group `pgid` still runs (zombies aside)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat", "rb").read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False


def dead_spills() -> list[str]:
    from catalake.platform.runs.liveness import alive
    from catalake.platform.runs.taskio import SPILL_PREFIX

    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(SPILL_PREFIX)
            and not alive(int(n[len(SPILL_PREFIX):].split("-", 1)[0]))]


@pytest.mark.jvm
def test_a_run_killed_while_writing_is_cleaned_by_the_rerun(tmp_path):
    landing = tmp_path / "landing"
    subprocess.run([sys.executable, "-m", "catalake.demo.generate", str(landing), "--start", DAY, "--days", "1",
                    "--rides", "40000"], check=True, capture_output=True)
    env = {**os.environ, "CATALAKE_LANDING": str(landing)}
    env.pop("DAGSTER_HOME", None)

    killed = tmp_path / "killed"
    run = catalake_run({**env, "CATALAKE_WAREHOUSE": str(killed)}, start_new_session=True)
    deadline = time.monotonic() + 300
    while not part_files(killed) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)  # the driver, the JVM and the Python workers
    run.wait()
    assert run.returncode == -signal.SIGKILL, "the run ended before it could be killed while writing"
    left = part_files(killed) - committed(killed)
    assert left, "the kill left no uncommitted file: nothing to prove"
    assert list((killed / "_catalake" / "runs").glob("*.json")), "the killed run's record is gone"

    rerun = catalake_run({**env, "CATALAKE_WAREHOUSE": str(killed)})
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err.decode()[-3000:]
    clean = catalake_run({**env, "CATALAKE_WAREHOUSE": str(tmp_path / "clean")})
    out, err = clean.communicate(timeout=600)
    assert clean.returncode == 0, err.decode()[-3000:]

    assert day_rows(killed) == day_rows(tmp_path / "clean")
    assert part_files(killed) <= committed(killed) and not (left & part_files(killed))
    assert not list((killed / "_catalake" / "runs").glob("*.json"))
    assert not dead_spills()


SESSION_REPLACED = """
import os, signal, time
from catalake.resources.spark_session import SparkSessionResource

resource = SparkSessionResource()
first = resource.session
assert first.range(3).count() == 3
pid = first._jvm.java.lang.ProcessHandle.current().pid()
os.kill(pid, signal.SIGKILL)  # as an OutOfMemoryError ends it
while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
    time.sleep(0.1)
second = resource.session
assert second.range(5).count() == 5
assert second._jvm.java.lang.ProcessHandle.current().pid() != pid
print("replaced")
"""


@pytest.mark.jvm
def test_a_dead_spark_session_is_replaced_on_next_use():
    out = subprocess.run([sys.executable, "-c", SESSION_REPLACED], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "replaced", out.stderr[-3000:]


# -- replays, growing files, shared DAGSTER_HOMEs, unusual landing names

def immutable(path: Path):
    """`chattr +i` on a folder for the block, undone in any case (skipped where chattr cannot)."""
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")

    @contextlib.contextmanager
    def block():
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i not possible here: {done.stderr.strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)

    return block()


def replay_ready(spark, tmp_path):
    """The evolution loop's day classified with one definition, and the catalog with the drift
    proposals (9 dead letters now match): (catalog dir, warehouse, store, tables, first result)."""
    from catalake.platform.catalog import load_catalog
    from catalake.platform.config import catalog_roots
    from catalake.platform.runs.drift import candidates, deadletter_rows, proposals_document
    from catalake.platform.warehouse.message_tables import message_tables
    from support.evolution import classified_day

    catalog_dir, warehouse, store, tables, first = classified_day(spark, tmp_path)
    day = dt.date.fromisoformat(DAY)
    (catalog_dir / "proposals.xreg.json").write_text(json.dumps(proposals_document(candidates(deadletter_rows(warehouse, day)), day)))
    tables, _ = message_tables(load_catalog([catalog_dir]), catalog_roots([catalog_dir]))
    return catalog_dir, warehouse, store, tables, first


MOVED = {"no_match -> messages/catalake_drift__shop_siteopened": 6, "no_match -> messages/catalake_drift__shop_refunded": 3}


def test_a_failed_replay_commit_keeps_what_its_journal_names_and_the_next_replay_finishes_it(spark, tmp_path):
    """The dead-letter commit of a replay fails (its `_delta_log` immutable) after the tables'
    appends: the journal and every file it names stay; the next replay rolls it forward into a
    dead-letter table every reader can read, conserved, with nothing left behind."""
    from catalake.platform.errors import StorageError
    from catalake.platform.runs import replay as recovery  # journal_of: here before recovery.py
    from catalake.platform.runs.day import conservation
    from catalake.platform.runs.recovery import RUNS_DIR
    from catalake.platform.runs.replay import replay_partition
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

    _, warehouse, store, tables, first = replay_ready(spark, tmp_path)
    day = dt.date.fromisoformat(DAY)
    with immutable(warehouse / DEADLETTER_TABLE / "_delta_log"):
        with pytest.raises(Exception) as failed:
            replay_partition(spark, store, tables, day)
    journal = recovery.journal_of(store.location, day)
    assert journal is not None
    named = [warehouse / c["table"] / rel for c in journal["commits"] for rel, *_ in c["files"]]
    assert named and all(p.is_file() for p in named), [str(p) for p in named if not p.is_file()]
    assert isinstance(failed.value, StorageError) and "stopped while it committed" in str(failed.value)
    assert list((warehouse / RUNS_DIR).glob("*.json")), "the stopped replay's record went with its journal left"

    again = replay_partition(spark, store, tables, day)
    assert again.moved == MOVED and recovery.journal_of(store.location, day) is None
    dead = DeltaTable(str(warehouse / DEADLETTER_TABLE)).to_pyarrow_table().to_pylist()  # every file there
    assert [d["reason"] for d in dead] == ["malformed_json"]
    ok, counts = conservation(store, tables, day, first.records)
    assert ok, counts
    assert part_files(warehouse) <= ever_committed(warehouse)
    assert not list((warehouse / RUNS_DIR).glob("*.json"))


class Killed(BaseException):
    """A process killed at this point: no `except Exception` handles it."""


def stopped_replay(spark, store, tables, monkeypatch):
    """A replay that dies before its dead-letter commit, cleaning nothing (as kill -9)."""
    from catalake.platform.runs.replay import replay_partition

    with monkeypatch.context() as m:
        def die(name, *args, **kwargs):
            raise Killed(name)
        m.setattr(store, "commit_partition", die)
        m.setattr(store, "remove_uncommitted", lambda *args, **kwargs: None)
        with pytest.raises(Killed):
            replay_partition(spark, store, tables, dt.date.fromisoformat(DAY))


def test_a_roll_forward_whose_file_is_gone_fails_naming_it_and_commits_nothing(spark, tmp_path, monkeypatch):
    from catalake.platform.errors import StorageError
    from catalake.platform.runs import replay as recovery  # journal_of: here before recovery.py
    from catalake.platform.runs.day import classify_partition, conservation
    from catalake.platform.runs.replay import replay_partition
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

    catalog_dir, warehouse, store, tables, first = replay_ready(spark, tmp_path)
    day = dt.date.fromisoformat(DAY)
    stopped_replay(spark, store, tables, monkeypatch)
    journal = recovery.journal_of(store.location, day)
    (commit,) = [c for c in journal["commits"] if c["table"] == DEADLETTER_TABLE]
    gone = commit["files"][0][0]
    (warehouse / DEADLETTER_TABLE / gone).unlink()
    version = store.version(DEADLETTER_TABLE)
    with pytest.raises(StorageError, match=f"{DEADLETTER_TABLE}/{gone}.*does not exist"):
        replay_partition(spark, store, tables, day)
    assert store.version(DEADLETTER_TABLE) == version  # no commit pointing at a missing file
    assert recovery.journal_of(store.location, day) is not None
    DeltaTable(str(warehouse / DEADLETTER_TABLE)).to_pyarrow_table()  # still readable
    # a partition run of the day replaces the tables and drops the journal
    rerun = classify_partition(spark, store, tables, tmp_path / "landing", day)
    assert recovery.journal_of(store.location, day) is None and conservation(store, tables, day, rerun.records)[0]
    assert rerun.deadletter == {"malformed_json": 1}


def test_a_replay_after_rolling_a_stopped_one_forward_reports_what_it_moved(spark, tmp_path, monkeypatch, capsys):
    from catalake import cli
    from catalake.platform.runs import replay as recovery  # journal_of: here before recovery.py

    catalog_dir, warehouse, store, tables, _ = replay_ready(spark, tmp_path)
    stopped_replay(spark, store, tables, monkeypatch)
    monkeypatch.setenv("CATALAKE_CATALOG", str(catalog_dir))
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("CATALAKE_LANDING", str(tmp_path / "landing"))
    monkeypatch.setenv("CATALAKE_SPARK_MASTER", "local[2]")
    capsys.readouterr()
    assert cli.main(["replay", "--from", DAY]) == 0
    out = capsys.readouterr().out
    assert "nothing moved" not in out, out
    for move, n in MOVED.items():
        assert any(move in line and line.split()[-1] == str(n) for line in out.splitlines()), out
    assert recovery.journal_of(Location.of(warehouse), dt.date.fromisoformat(DAY)) is None


SITE_OPENED = {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.SiteOpened"}},
               "dataschemaformat": "JsonSchema/draft-07",
               "dataschema": {"type": "object", "properties": {"site": {"type": "string"}, "n": {"type": "integer"},
                                                               "note": {"type": "string"}}}}


def shop_catalog(folder: Path, *definitions: str) -> Path:
    from support.evolution import KNOWN

    messages = {"OrderPlaced": KNOWN, "SiteOpened": SITE_OPENED}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shop.xreg.json").write_text(json.dumps({"messagegroups": {"shop": {"messages": {
        name: messages[name] for name in definitions}}}}))
    return folder


def site_events(first: int, count: int) -> bytes:
    return b"".join(json.dumps({
        "specversion": "1.0", "id": str(i), "source": "/sites", "type": "shop.SiteOpened", "time": "2026-11-20T10:00:00Z",
        "datacontenttype": "application/json", "data": {"site": f"s{i}", "n": i, "note": "x" * (i % 97)},
    }).encode() + b"\n" for i in range(first, first + count))


def classify(spark, store, catalog_dir: Path, landing: Path, progress=None):
    from catalake.platform.catalog import load_catalog
    from catalake.platform.config import catalog_roots
    from catalake.platform.runs.day import classify_partition
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables

    catalog = load_catalog([catalog_dir])
    tables, _ = message_tables(catalog, catalog_roots([catalog_dir]))
    sync_message_tables(store, tables)
    extra = {"progress": progress} if progress is not None else {}
    return tables, classify_partition(spark, store, tables, landing, dt.date.fromisoformat(DAY), **extra)


@pytest.mark.jvm
def test_a_replay_killed_while_writing_leaves_no_orphans(spark, tmp_path):
    """kill -9 of `catalake replay` after its part files appear, before its journal: the next
    replay removes them (the replay was recorded as a partition run is), and moves the rows."""
    from catalake.platform.catalog import load_catalog
    from catalake.platform.config import catalog_roots
    from catalake.platform.runs import replay as recovery  # journal_of: here before recovery.py
    from catalake.platform.runs.day import conservation
    from catalake.platform.runs.recovery import RUNS_DIR
    from catalake.platform.runs.replay import replay_partition
    from catalake.platform.warehouse.message_tables import message_tables
    from catalake.platform.warehouse.store import DeltaStore

    landing = tmp_path / "landing"
    (landing / DAY).mkdir(parents=True)
    (landing / DAY / "sites.jsonl").write_bytes(site_events(1, 300_000))
    warehouse = tmp_path / "warehouse"
    store = DeltaStore(spark, warehouse)
    _, first = classify(spark, store, shop_catalog(tmp_path / "before", "OrderPlaced"), landing)
    assert first.deadletter == {"no_match": 300_000}
    catalog_dir = shop_catalog(tmp_path / "after", "OrderPlaced", "SiteOpened")

    env = {**os.environ, "CATALAKE_CATALOG": str(catalog_dir), "CATALAKE_WAREHOUSE": str(warehouse),
           "CATALAKE_LANDING": str(landing), "CATALAKE_SPARK_MASTER": "local[2]"}
    before = part_files(warehouse)
    replay = subprocess.Popen([sys.executable, "-m", "catalake.cli", "replay", "--from", DAY], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (part_files(warehouse) - before) and replay.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(replay.pid, signal.SIGKILL)  # the driver, the JVM and the Python workers
        replay.wait()
    assert replay.returncode == -signal.SIGKILL, "the replay ended before it could be killed while writing"
    gone_by = time.monotonic() + 180  # its JVM's Python workers die with it, but not at the same instant
    while group_alive(replay.pid) and time.monotonic() < gone_by:
        time.sleep(0.1)
    assert not group_alive(replay.pid), "a process of the killed replay still runs"
    assert recovery.journal_of(Location.of(warehouse), dt.date.fromisoformat(DAY)) is None, "killed after its journal: not the write phase"
    left = part_files(warehouse) - committed(warehouse)
    assert left, "the kill left no uncommitted file: nothing to prove"

    tables, _ = message_tables(load_catalog([catalog_dir]), catalog_roots([catalog_dir]))
    again = replay_partition(spark, store, tables, dt.date.fromisoformat(DAY))
    assert again.moved_rows == 300_000 and again.conserved
    assert not (left & part_files(warehouse)), sorted(map(str, left & part_files(warehouse)))[:3]
    assert part_files(warehouse) <= ever_committed(warehouse)
    assert not list((warehouse / RUNS_DIR).glob("*.json"))
    assert conservation(store, tables, dt.date.fromisoformat(DAY), 300_000)[0]
    assert not dead_spills()


def test_a_large_file_that_grows_during_the_run_is_read_up_to_its_listed_size(spark, tmp_path, monkeypatch):
    """A JSON lines file cut into two tasks, its last line half written when listed, grows while
    the run reads it: the run reads the complete lines of its listed size; the next run the rest."""
    from catalake.platform.landing.planning import MIN_TASK_BYTES
    from catalake.platform.runs import day as classify_module
    from catalake.platform.runs.day import conservation
    from catalake.platform.warehouse.store import DeltaStore

    landing = tmp_path / "landing"
    (landing / DAY).mkdir(parents=True)
    bulk = landing / DAY / "bulk.jsonl"
    listed = 0
    lines = site_events(1, 60_000)
    assert len(lines) > 2 * MIN_TASK_BYTES  # cut into two tasks
    whole = site_events(60_001, 1)
    bulk.write_bytes(lines + whole[:40])  # a line being written
    real = classify_module.tiling_faults

    def grow_then_check(files, tasks):
        nonlocal listed
        listed = len({p.path for t in tasks for p in t})
        assert sum(len(t) for t in tasks) >= 2, "the file was not cut"
        with open(bulk, "ab") as f:  # the writer goes on while the run reads
            f.write(whole[40:] + site_events(60_002, 500))
        return real(files, tasks)

    monkeypatch.setattr(classify_module, "tiling_faults", grow_then_check)
    store = DeltaStore(spark, tmp_path / "warehouse")
    catalog_dir = shop_catalog(tmp_path / "catalog", "SiteOpened")
    tables, result = classify(spark, store, catalog_dir, landing)
    assert listed == 1
    assert result.records == 60_000 and result.deadletter == {}
    assert conservation(store, tables, dt.date.fromisoformat(DAY), result.records)[0]
    monkeypatch.setattr(classify_module, "tiling_faults", real)
    _, rest = classify(spark, store, catalog_dir, landing)  # the next run reads what landed since
    assert rest.records == 60_501 and rest.deadletter == {}


def test_a_file_name_not_utf8_is_read_and_stored_escaped(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    landing = tmp_path / "landing"
    (landing / DAY).mkdir(parents=True)
    name = os.fsdecode(b"sites-\xff\xfe.jsonl")
    (landing / DAY / name).write_bytes(site_events(1, 3))
    (landing / DAY / "plain.jsonl").write_bytes(site_events(4, 2))
    store = DeltaStore(spark, tmp_path / "warehouse")
    _, result = classify(spark, store, shop_catalog(tmp_path / "catalog", "SiteOpened"), landing)
    assert result.records == 5 and result.deadletter == {}
    rows = DeltaTable(str(tmp_path / "warehouse" / "messages" / "shop__siteopened")).to_pyarrow_table().to_pylist()
    shown = sorted({r["source_file"].rsplit("/", 1)[-1] for r in rows})
    assert shown == ["plain.jsonl", "sites-\\xff\\xfe.jsonl"]


def test_upper_case_extensions_are_read_and_a_day_file_is_reported(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    landing = tmp_path / "landing"
    (landing / DAY).mkdir(parents=True)
    (landing / DAY / "a.JSONL").write_bytes(site_events(1, 2))
    (landing / DAY / "b.JSONL.GZ").write_bytes(gzip.compress(site_events(3, 3)))
    (landing / DAY / "c.jsonl.GZ").write_bytes(gzip.compress(site_events(6, 1)))
    (landing / DAY / "d.JSON").write_bytes(site_events(7, 1).strip())
    (landing / f"dt={DAY}").write_bytes(site_events(8, 1))  # a file where the day's other folder belongs
    messages = []
    store = DeltaStore(spark, tmp_path / "warehouse")
    _, result = classify(spark, store, shop_catalog(tmp_path / "catalog", "SiteOpened"), landing, messages.append)
    assert result.records == 7 and result.deadletter == {}
    assert any(f"dt={DAY}" in m and "a file where the day's folder belongs" in m for m in messages), messages


RACE = """
import os, sys, time
from catalake.instance import dagster_instance

ready, go = sys.argv[1:3]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
instance = dagster_instance()
instance.get_runs(limit=1)
print("ok")
"""


def test_runs_started_together_with_a_new_dagster_home_all_get_its_instance(tmp_path):
    """Processes that create the instance of the same new DAGSTER_HOME at the same moment (as
    two `catalake run` do) all succeed: no `table ... already exists`."""
    script = tmp_path / "race.py"
    script.write_text(RACE)
    for round_ in range(2):
        home = tmp_path / f"home{round_}"
        home.mkdir()
        # every process imports Dagster and says it is ready, then they go together
        go = tmp_path / f"go{round_}"
        ready = [tmp_path / f"ready{round_}-{i}" for i in range(3)]
        procs = [subprocess.Popen([sys.executable, str(script), str(flag), str(go)], env={**os.environ, "DAGSTER_HOME": str(home)},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for flag in ready]
        deadline = time.monotonic() + 120
        while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
            if any(proc.poll() is not None for proc in procs):
                break  # one failed before the start: its error is asserted below
            time.sleep(0.01)
        go.touch()
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and out.strip() == "ok", err[-2000:]
