"""A crash never locks a day (leases.py): a run whose process is killed with SIGKILL is found by
the day's next command, marked failed with what was lost, and passed; a live run is still waited
for. Every command runs as a person runs it: a process of its own, on a DAGSTER_HOME."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from catalake.platform.config import DEMO_DIR
from support.tables import table_hashes

pytestmark = pytest.mark.spark

DAY = "2026-11-20"
LANDED = sorted(p.name for p in (DEMO_DIR / "landing" / DAY).iterdir() if not p.name.startswith("_"))


def _env(tmp_path: Path, landing: Path | None = None, **more) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_"))}
    env.update(DAGSTER_HOME=str(home), CATALAKE_WAREHOUSE=str(tmp_path / "warehouse"),
               CATALAKE_START_DATE="2026-11-01", CATALAKE_SPARK_MASTER="local[2]", PYSPARK_PYTHON=sys.executable,
               **({"CATALAKE_LANDING": str(landing)} if landing else {}), **more)
    return env


def _start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "catalake.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(process: subprocess.Popen, timeout: float = 600) -> tuple[str, str]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, f"{out}\n{err[-4000:]}"
    return out, err


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL to the command and everything it started (its Spark JVM, its task processes)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def _instance(env: dict) -> DagsterInstance:
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]  # the instance of the commands' dagster.yaml
    return DagsterInstance.get()


def _kill_at_step_start(args: list[str], env: dict, instance, job: str):
    """Start a command and kill it with SIGKILL once its run of `job` has started its step: the
    run, STARTED in the instance."""
    process = _start(args, env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        for run in instance.get_runs(filters=RunsFilter(job_name=job, tags={"catalake/pid": str(process.pid)})):
            if instance.all_logs(run.run_id, of_type={DagsterEventType.STEP_START}):
                _kill(process)
                run = instance.get_run_by_id(run.run_id)
                assert run.status == DagsterRunStatus.STARTED
                return run
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    _kill(process)
    pytest.fail(f"no step of {job} started")


def _passed(instance, dead, err: str) -> None:
    """The next command marked the dead run failed, with what was lost, and did not wait for it."""
    run = instance.get_run_by_id(dead.run_id)
    assert run.status == DagsterRunStatus.FAILURE
    [failure] = instance.all_logs(dead.run_id, of_type={DagsterEventType.RUN_FAILURE})
    message = failure.dagster_event.message
    assert f"process {dead.tags['catalake/pid']} on {dead.tags['catalake/host']} is gone" in message, message
    assert "was in progress" in message and "Marked failed by `catalake" in message, message
    assert f"run {dead.run_id} ({dead.job_name}) of the same day marked failed" in err
    assert "waiting for run" not in err


def _counts(out: str) -> dict:
    result = json.loads(out.strip().splitlines()[-1])
    return {"records": result["records"], "tables": result["tables"], "deadletter": result["deadletter"]}


def test_a_killed_run_is_marked_failed_and_passed_by_the_next_run_replay_and_maintain(tmp_path):
    env = _env(tmp_path)
    clean = _counts(_finish(_start(["run", "--date", DAY, "--json", "--no-analytics"], env))[0])
    hashes = table_hashes(tmp_path / "warehouse")
    instance = _instance(env)

    # a full run (Spark) killed at its step's start; the next full run does not wait for it
    dead = _kill_at_step_start(["run", "--date", DAY, "--no-analytics"], env, instance, "events_job")
    out, err = _finish(_start(["run", "--date", DAY, "--json", "--no-analytics"], env))
    _passed(instance, dead, err)
    assert _counts(out) == clean and table_hashes(tmp_path / "warehouse") == hashes

    # an increment killed likewise; its retry
    dead = _kill_at_step_start(["run", "--date", DAY, "--incremental", "--no-analytics"], env, instance, "events_job")
    out, err = _finish(_start(["run", "--date", DAY, "--incremental", "--json", "--no-analytics"], env))
    _passed(instance, dead, err)
    assert table_hashes(tmp_path / "warehouse") == hashes

    # a replay killed; the next replay of the day
    dead = _kill_at_step_start(["replay", "--from", DAY, "--to", DAY], env, instance, "replay_job")
    out, err = _finish(_start(["replay", "--from", DAY, "--to", DAY], env))
    _passed(instance, dead, err)
    assert table_hashes(tmp_path / "warehouse") == hashes

    # a run killed, then a compaction of the day: it passes the dead run too
    dead = _kill_at_step_start(["run", "--date", DAY, "--no-analytics"], env, instance, "events_job")
    out, err = _finish(_start(["maintain", "--date", DAY], env))
    _passed(instance, dead, err)
    assert table_hashes(tmp_path / "warehouse") == hashes
    out, err = _finish(_start(["run", "--date", DAY, "--json", "--no-analytics"], env))
    assert _counts(out) == clean and table_hashes(tmp_path / "warehouse") == hashes
    assert not list((tmp_path / "warehouse" / "_catalake" / "runs").glob("*.json"))  # the dead runs' records: gone


SLOW_RUN = """
import sys, time
from dagster import DagsterInstance, DagsterRunStatus
from catalake.leases import leased, owner_tags
from catalake.component import build_definitions
instance = DagsterInstance.get()
job = build_definitions(analytics=False).resolve_job_def("events_job")
run = instance.create_run_for_job(job, status=DagsterRunStatus.STARTED, tags={"dagster/partition": sys.argv[1], **owner_tags()})
with leased(instance, run.run_id, lease=4):
    print(run.run_id, flush=True)
    sys.stdin.readline()  # until the test says so
    instance.report_run_canceled(run)
"""


def test_a_live_run_is_waited_for_and_passed_once_its_process_dies(tmp_path):
    """A slow run of the day in another process, alive and beating its heartbeat, is waited for
    far past the lease; once its process is killed, the waiting command passes it."""
    env = _env(tmp_path, CATALAKE_ENGINE="local")
    slow = subprocess.Popen([sys.executable, "-c", SLOW_RUN, DAY], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        run_id = slow.stdout.readline().strip()
        waiting = _start(["run", "--date", DAY, "--json", "--no-analytics"], env)
        time.sleep(15)  # more than three leases of 4 s: a live run is no dead one however long it takes
        assert waiting.poll() is None
        instance = _instance(env)
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED
        _kill(slow)
        out, err = _finish(waiting, 300)
    finally:
        _kill(slow)
    assert f"waiting for run {run_id} (events_job, STARTED) of the same day, process {slow.pid} on" in err
    dead = instance.get_run_by_id(run_id)
    assert dead.status == DagsterRunStatus.FAILURE
    assert f"run {run_id} (events_job) of the same day marked failed: its process {slow.pid}" in err
    assert _counts(out)["records"] > 0


def test_runs_of_a_day_killed_at_random_moments_end_as_a_clean_run(tmp_path):
    """Increments, full runs and compactions of one day, killed with SIGKILL at random moments
    while the day's files land one by one: the day's next run ends with the tables a clean run
    of the whole day gives."""
    rng = random.Random(20261127)
    landing = tmp_path / "landing"
    (landing / DAY).mkdir(parents=True)
    env = _env(tmp_path, landing, CATALAKE_ENGINE="local")
    commands = [["run", "--date", DAY, "--incremental", "--no-analytics"], ["run", "--date", DAY, "--no-analytics"],
                ["maintain", "--date", DAY]]
    killed = 0
    # ten runs at least, and more until three were killed: how many end before their moment
    # depends on the machine's load (two test workers), not on what is tested
    for step in range(40):
        if step >= 10 and killed >= 3:
            break
        if step % 2 == 0 and step // 2 < len(LANDED):
            shutil.copy(DEMO_DIR / "landing" / DAY / LANDED[step // 2], landing / DAY / LANDED[step // 2])
        process = _start(rng.choice(commands), env)
        try:
            process.wait(timeout=rng.uniform(0.5, 8.0))
        except subprocess.TimeoutExpired:
            killed += 1
        _kill(process)
    for name in LANDED:
        shutil.copy(DEMO_DIR / "landing" / DAY / name, landing / DAY / name)
    _finish(_start(["run", "--date", DAY, "--incremental", "--json", "--no-analytics"], env))
    assert killed >= 3, "too few runs were killed to tell anything"

    clean = tmp_path / "clean"
    clean.mkdir()
    _finish(_start(["run", "--date", DAY, "--json", "--no-analytics"], _env(clean, landing, CATALAKE_ENGINE="local")))
    assert table_hashes(tmp_path / "warehouse") == table_hashes(clean / "warehouse")
    instance = _instance(env)
    assert not instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING]))
