"""The production instance (deploy/dagster.yaml) against a real PostgreSQL started from the
project's own script (deploy/postgres.sh): backfills launched through the run queue and executed
by the daemon on the warm Spark Connect server `make serve` starts (deploy/spark-connect.sh),
never two runs of one day at once, everything recorded in PostgreSQL."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from support.paths import DEMO_CATALOG, REPO
from support.services import free_port, stop

DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]  # the demo's two days and one with no folder


@pytest.fixture(scope="module")
def postgres():
    folder = tempfile.mkdtemp(prefix="catalake-pg-")  # not under pytest's 0700 folders: the server's user reads it
    port = free_port()
    script = REPO / "deploy" / "postgres.sh"
    started = subprocess.run(["bash", str(script), "start", folder, str(port)], capture_output=True, text=True, timeout=300)
    if started.returncode != 0:
        pytest.fail(f"deploy/postgres.sh start failed: {started.stderr[-2000:]}")
    yield port
    subprocess.run(["bash", str(script), "stop", folder], capture_output=True, timeout=120)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def spark_connect():
    """deploy/spark-connect.sh's server, as `make serve` starts it; its sc:// URL."""
    folder = tempfile.mkdtemp(prefix="catalake-connect-")
    port = free_port()
    script = REPO / "deploy" / "spark-connect.sh"
    env = {**os.environ, "BIN": str(Path(sys.executable).parent)}
    started = subprocess.run(["bash", str(script), "start", folder, str(port), str(free_port())], capture_output=True,
                             text=True, timeout=300, env=env)
    if started.returncode != 0:
        pytest.fail(f"deploy/spark-connect.sh start failed: {started.stderr[-2000:]}")
    yield f"sc://127.0.0.1:{port}"
    subprocess.run(["bash", str(script), "stop", folder], capture_output=True, timeout=120, env=env)
    shutil.rmtree(folder, ignore_errors=True)


def _env(tmp_path: Path, port: int, home: Path | None = None) -> dict:
    if home is None:
        home = tmp_path / "dagster_home"
        home.mkdir()
        shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_USERNAME": "catalake", "DAGSTER_PG_PASSWORD": "catalake", "DAGSTER_PG_DB": "dagster",
            "DAGSTER_COMPUTE_LOGS": str(home / "compute_logs"), "CATALAKE_CATALOG": str(DEMO_CATALOG),
            "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"), "CATALAKE_START_DATE": "2026-11-01",
            "PYSPARK_PYTHON": sys.executable}


def _instance(env: dict):
    """The instance as the daemon sees it (read in a child: DAGSTER_HOME is the process's)."""
    code = ("import json; from dagster import DagsterInstance, AssetKey\n"
            "i = DagsterInstance.get()\n"
            "runs = [{'id': r.run_id, 'status': r.status.value, 'tags': dict(r.tags), 'job': r.job_name,\n"
            "         'start': rec.start_time, 'end': rec.end_time}\n"
            "        for rec in i.get_run_records() for r in [rec.dagster_run]]\n"
            "parts = sorted(i.get_materialized_partitions(AssetKey('deadletter')))\n"
            "engines = {r.event_log_entry.run_id: {k: v.value for k, v in r.asset_materialization.metadata.items()\n"
            "                                      if k == 'engine' or k.startswith('spark_')}\n"
            "           for r in i.fetch_materializations(AssetKey('deadletter'), limit=100).records}\n"
            "print(json.dumps({'storage': type(i.event_log_storage).__name__, 'runs': runs, 'deadletter': parts,\n"
            "                  'engines': engines}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _daemon(env: dict, log: Path) -> subprocess.Popen:
    """`dagster-daemon run` of the workspace, as `make serve` starts it."""
    with open(log, "wb") as sink:
        return subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                                cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


POSTGRES_DEFAULT = """storage:
  postgres:
    postgres_db:
      hostname: {env: DAGSTER_PG_HOST}
      port: {env: DAGSTER_PG_PORT}
      username: {env: DAGSTER_PG_USERNAME}
      password: {env: DAGSTER_PG_PASSWORD}
      db_name: {env: DAGSTER_PG_DB}
"""


@pytest.mark.jvm
def test_a_batch_is_stored_in_postgresql_as_dagster_stores_each_event(postgres, tmp_path, monkeypatch):
    """deploy/dagster.yaml's event log stores a step's batch in one transaction: the same asset
    records, check executions and event order as dagster-postgres storing each event."""
    from support.eventlog_step import _run, _stored

    createdb = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1] / "createdb"
    stored = []
    for database, config in (("plain", POSTGRES_DEFAULT), ("batched", (REPO / "deploy" / "dagster.yaml").read_text())):
        subprocess.run([str(createdb), "-h", "127.0.0.1", "-p", str(postgres), "-U", "catalake", database], check=True)
        home = tmp_path / database
        home.mkdir()
        (home / "dagster.yaml").write_text(config)
        for key, value in _env(tmp_path / database, postgres, home=home).items():
            if key.startswith("DAGSTER_PG_") or key == "DAGSTER_COMPUTE_LOGS":
                monkeypatch.setenv(key, value)
        monkeypatch.setenv("DAGSTER_PG_DB", database)
        instance, run_id = _run(home, batched=True)  # a no-op batch on Dagster's own storage
        stored.append((type(instance.event_log_storage).__name__, _stored(instance, run_id)))
    assert [name for name, _ in stored] == ["PostgresEventLogStorage", "BatchingPostgresEventLogStorage"]
    assert stored[0][1] == stored[1][1]


@pytest.mark.jvm
def test_backfills_run_through_the_queue_one_day_at_a_time(postgres, spark_connect, tmp_path):
    env = {**_env(tmp_path, postgres), "CATALAKE_SPARK_MASTER": spark_connect}
    dagster = str(Path(sys.executable).parent / "dagster")
    log = tmp_path / "daemon.log"
    daemon = _daemon(env, log)
    try:
        # a 3-day backfill, the middle day once more, and the landing sensor, which requests the
        # demo's two landed days: three runs of 2026-11-21 and two of 2026-11-20 queued together
        for days in (DAYS, DAYS[1:2]):
            subprocess.run([dagster, "job", "backfill", "-w", "workspace.yaml", "-j", "events_job",
                            "--partitions", ",".join(days), "--noprompt"],
                           cwd=REPO, env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([dagster, "sensor", "start", "landing_sensor", "-w", "workspace.yaml"],
                       cwd=REPO, env=env, check=True, capture_output=True, timeout=180)
        deadline = time.monotonic() + 600
        while True:
            state = _instance(env)
            done = [r for r in state["runs"] if r["status"] in ("SUCCESS", "FAILURE", "CANCELED")]
            if len(state["runs"]) == 6 and len(done) == 6:
                break
            assert time.monotonic() < deadline, f"runs not finished: {state['runs']}\n{log.read_text()[-3000:]}"
            time.sleep(3)
    finally:
        stop(daemon)

    assert state["storage"] == "BatchingPostgresEventLogStorage"
    runs = state["runs"]
    assert [r["status"] for r in runs] == ["SUCCESS"] * 6, log.read_text()[-3000:]
    assert sorted(r["tags"]["dagster/partition"] for r in runs) == sorted(DAYS + DAYS[1:2] + DAYS[:2])
    # launched by the daemon: its backfills, and the sensor's requests through the same queue
    assert sorted("backfill" if r["tags"].get("dagster/backfill") else r["tags"].get("dagster/sensor_name")
                  for r in runs) == ["backfill"] * 4 + ["landing_sensor"] * 2
    # the runs of one day did not overlap: the queue held each until the one before ended
    for day in DAYS:
        same_day = sorted((r for r in runs if r["tags"]["dagster/partition"] == day), key=lambda r: r["start"])
        assert all(later["start"] >= earlier["end"] for earlier, later in zip(same_day, same_day[1:])), day
    # each day materialized, recorded in PostgreSQL (the missing day too: processed, nothing read)
    assert state["deadletter"] == DAYS
    # the backfills' full runs were jobs of the one warm Spark Connect server; the sensor's runs
    # are small increments, in local processes (the freshness path), or found nothing new after a
    # backfill of their day; the missing day read nothing
    engine = {r["id"]: state["engines"][r["id"]] for r in runs}
    backfilled = [engine[r["id"]] for r in runs if r["tags"].get("dagster/backfill") and r["tags"]["dagster/partition"] != DAYS[2]]
    assert len(backfilled) == 3 and all(e["engine"] == "spark" for e in backfilled), engine
    assert len({e["spark_application"] for e in backfilled}) == 1  # one application: the server's
    assert {engine[r["id"]]["engine"] for r in runs if r["tags"].get("dagster/sensor_name")} <= {"local", "none"}
    assert {engine[r["id"]]["engine"] for r in runs if r["tags"]["dagster/partition"] == DAYS[2]} == {"none"}


def _run_in_its_step(instance, sensor: str) -> dict | None:
    """A run of the sensor that has started its step and whose process still lives (a run that
    ended meanwhile is no victim), with its pid and its parent's (the code server that started it)."""
    from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

    for r in instance.get_runs(filters=RunsFilter(tags={"dagster/sensor_name": sensor},
                                                  statuses=[DagsterRunStatus.STARTED])):
        if "catalake/pid" in r.tags and instance.all_logs(r.run_id, of_type={DagsterEventType.STEP_START}):
            pid = int(r.tags["catalake/pid"])
            try:
                parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            return {"id": r.run_id, "pid": pid, "server": parent, "day": r.tags["dagster/partition"]}
    return None


@pytest.mark.jvm
def test_a_sensor_run_killed_is_marked_failed_by_the_daemon_and_the_days_queue_moves_on(postgres, tmp_path,
                                                                                        monkeypatch):
    """deploy/dagster.yaml's daemon: the landing sensor's run of a day is killed with SIGKILL at
    its step's start, with its code server; run monitoring (catalake's launcher) marks it failed,
    and a backfill of the day queued behind it runs."""
    import signal

    from dagster import DagsterInstance

    # a database of its own: the landing sensor's cursor of the module's other tests is not this one's
    createdb = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1] / "createdb"
    subprocess.run([str(createdb), "-h", "127.0.0.1", "-p", str(postgres), "-U", "catalake", "leases"], check=True)
    # the sensor's increments as Spark jobs of a local master: a step that lives long enough to be killed at its start
    env = {**_env(tmp_path, postgres), "DAGSTER_PG_DB": "leases", "CATALAKE_SPARK_MASTER": "local[2]",
           "CATALAKE_LOCAL_TASK_BYTES": "0"}
    for key, value in env.items():
        if key.startswith("DAGSTER_"):
            monkeypatch.setenv(key, value)
    instance = DagsterInstance.get()
    dagster = str(Path(sys.executable).parent / "dagster")
    log = tmp_path / "daemon.log"
    daemon = _daemon(env, log)
    try:
        subprocess.run([dagster, "sensor", "start", "landing_sensor", "-w", "workspace.yaml"],
                       cwd=REPO, env=env, check=True, capture_output=True, timeout=180)
        deadline = time.monotonic() + 300
        while (victim := _run_in_its_step(instance, "landing_sensor")) is None:
            assert time.monotonic() < deadline, f"no sensor run started\n{log.read_text()[-3000:]}"
            time.sleep(0.05)
        # the run's process and the code server that started it, as a lost machine loses both (with its code
        # server alive, Dagster's server itself notices its child died; without, only run monitoring can)
        os.kill(victim["pid"], signal.SIGKILL)
        os.kill(victim["server"], signal.SIGKILL)
        killed_at = time.time()
        subprocess.run([dagster, "sensor", "stop", "landing_sensor", "-w", "workspace.yaml"],
                       cwd=REPO, env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([dagster, "job", "backfill", "-w", "workspace.yaml", "-j", "events_job",
                        "--partitions", victim["day"], "--noprompt"], cwd=REPO, env=env, check=True, capture_output=True,
                       timeout=180)
        deadline = time.monotonic() + 300
        while True:
            runs = {r["id"]: r for r in _instance(env)["runs"]}
            backfill = [r for r in runs.values() if r["tags"].get("dagster/backfill")]
            if backfill and backfill[0]["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
                break
            assert time.monotonic() < deadline, f"the backfill did not run: {runs}\n{log.read_text()[-3000:]}"
            time.sleep(2)
    finally:
        stop(daemon)

    dead = runs[victim["id"]]
    assert dead["status"] == "FAILURE"
    assert backfill[0]["status"] == "SUCCESS", log.read_text()[-3000:]
    assert backfill[0]["start"] >= dead["end"]  # the day's queue held it until the dead run was passed
    assert dead["end"] - killed_at < 100  # run monitoring's poll (10 s) on the run's own host, not the lease (120 s)
    from dagster import DagsterEventType

    [failure] = instance.all_logs(victim["id"], of_type={DagsterEventType.RUN_FAILURE})
    message = failure.dagster_event.message
    assert f"process {victim['pid']} on" in message and "is gone" in message and "classify_events" in message, message
