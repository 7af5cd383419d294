"""liveness.py: whether the process that owns a run lives, one notion for the Dagster runs of a
day and for the warehouse's run records (recovery.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time

from catalake.platform.runs import liveness, recovery
from catalake.platform.runs.liveness import Owner, judge
from catalake.platform.uris import Location

DAY = dt.date(2026, 11, 20)


def _reaped_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_process_of_this_host_lives_while_it_is_there_whatever_its_heartbeat():
    me = Owner.current()
    assert judge(me, heartbeat=0.0, since=None, lease=1).alive  # the process table is the truth here
    gone = Owner(me.host, _reaped_pid())
    verdict = judge(gone, heartbeat=time.time(), since=None, lease=1000)
    assert not verdict.alive and f"process {gone.pid} on {me.host} is gone" in verdict.reason


def test_a_pid_given_to_another_process_is_not_the_owner():
    me = Owner.current()
    assert me.identity  # this host has /proc: boot id and start time
    reused = Owner(me.host, me.pid, me.identity.rsplit("/", 1)[0] + "/1")  # same pid, started at another time
    assert not judge(reused, heartbeat=None, since=None, lease=1).alive


def test_a_process_of_another_boot_or_machine_of_the_same_name_is_judged_by_its_heartbeat():
    me = Owner.current()
    other_boot = Owner(me.host, me.pid, "another-boot/" + me.identity.rsplit("/", 1)[1])
    now = 1_000_000.0
    assert not other_boot.local
    assert judge(other_boot, heartbeat=now - 10, since=None, lease=60, now=now).alive
    assert not judge(other_boot, heartbeat=now - 100, since=None, lease=60, now=now).alive


def test_a_killed_process_not_yet_reaped_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        identity = liveness.process_identity(child.pid)
        assert liveness.alive(child.pid, identity)
        child.kill()
        deadline = time.monotonic() + 10
        while liveness.alive(child.pid, identity):  # a zombie until we reap it
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        child.wait()


def test_an_owner_elsewhere_lives_while_its_heartbeat_is_within_the_lease():
    elsewhere = Owner("another-host", os.getpid(), "x")
    now = 1_000_000.0
    assert judge(elsewhere, heartbeat=now - 50, since=None, lease=60, now=now).alive
    late = judge(elsewhere, heartbeat=now - 61, since=None, lease=60, now=now)
    assert not late.alive and "no heartbeat for 61 s, past the lease of 60 s" in late.reason
    assert "process" in late.reason and "another-host" in late.reason
    # one that never beat (an older release's) cannot be judged: it lives, as before
    assert judge(elsewhere, heartbeat=None, since=now - 10_000, lease=60, now=now).alive
    # a run that never said which process runs it: its age against the lease
    assert judge(None, heartbeat=None, since=now - 30, lease=60, now=now).alive
    assert not judge(None, heartbeat=None, since=now - 90, lease=60, now=now).alive


def _record(root, run: str, **fields) -> None:
    folder = root / recovery.RUNS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{run}.json").write_text(json.dumps({"run": run, "kind": "run", "day": DAY.isoformat(), **fields}))


def test_run_records_are_judged_as_runs_are(tmp_path):
    now = time.time()
    _record(tmp_path, "stale", host="another-host", pid=1, heartbeat=now - 600)
    _record(tmp_path, "beating", host="another-host", pid=1, heartbeat=now)
    _record(tmp_path, "legacy", host="another-host", pid=1)  # no heartbeat: left alone
    _record(tmp_path, "gone", host=Owner.current().host, pid=_reaped_pid(), heartbeat=now)
    _record(tmp_path, "here", **{k: v for k, v in vars(Owner.current()).items()}, heartbeat=now - 600)
    assert recovery.crashed(Location.of(tmp_path), DAY, lease=120) == ["gone", "stale"]
    keep = recovery.protected(Location.of(tmp_path), lease=120)
    assert [keep(f"x/part-{run}-0.parquet") for run in ("stale", "beating", "legacy", "gone", "here")] == [
        False, True, True, False, True]


def test_a_recorded_run_beats_its_heartbeat_and_its_record_goes_with_it(tmp_path):
    path = tmp_path / recovery.RUNS_DIR / "r1.json"
    with recovery.recorded(Location.of(tmp_path), "r1", DAY, lease=0.4):
        first = json.loads(path.read_text())
        assert (first["host"], first["pid"], first["identity"]) == tuple(vars(Owner.current()).values())
        deadline = time.monotonic() + 10
        while json.loads(path.read_text())["heartbeat"] == first["heartbeat"]:
            assert time.monotonic() < deadline, "no heartbeat"
            time.sleep(0.02)
        assert recovery.crashed(Location.of(tmp_path), DAY, lease=0.4) == []
    assert not path.exists() and not list(path.parent.iterdir())  # no partial record left either
