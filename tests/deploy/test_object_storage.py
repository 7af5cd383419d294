"""Issue 26: the landing zone and the warehouse on object storage (a real S3 server on the
loopback), classified by local Spark, a standalone Spark cluster and Spark Connect.

Every table is compared by row hashes with the run of the same day on local disk (`ingested_at`
left out; `source_file` is relative to the landing root in both)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from deltalake import DeltaTable

from catalake.platform import uris
from catalake.platform.catalog import load_catalog
from catalake.platform.config import catalog_roots
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore, statistics_coverage
from support.classify import DAY as AZURE_DAY, land_azure
from support.paths import DEMO_CATALOG, REPO
from support.services import s3_server, spark_cluster, stop, wait_for_port
from support.tables import table_hashes

# one worker runs the module (its S3 server and demo are module fixtures), and never at the same time
# as the other test that starts a Spark Connect server on the default port 15002 (test_spark_connect.py)
pytestmark = [pytest.mark.jvm, pytest.mark.xdist_group("spark-connect-port-15002")]

DEMO_LANDING = REPO / "src" / "catalake" / "demo" / "landing"
DAYS = (dt.date(2026, 11, 20), dt.date(2026, 11, 21))


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The S3 server, with the standard AWS environment set for this process (and so for the
    Spark workers and the commands the tests start)."""
    with s3_server(tmp_path_factory.mktemp("s3")) as server, pytest.MonkeyPatch.context() as patch:
        for key, value in server.environment.items():
            patch.setenv(key, value)
        yield server


def classify_days(spark, catalog_paths, landing: str, warehouse: str, days=DAYS) -> dict:
    catalog = load_catalog(catalog_paths)
    tables, _ = message_tables(catalog, catalog_roots(catalog_paths))
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)
    results = {day: classify_partition(spark, store, tables, landing, day) for day in days}
    for day, result in results.items():
        ok, counts = conservation(store, tables, day, result.records)
        assert ok, counts
    return results


@pytest.fixture(scope="module")
def demo_on_s3(spark, s3, tmp_path_factory):
    """The demo's two days classified on local disk and on S3 (landing and warehouse)."""
    base = tmp_path_factory.mktemp("demo")
    local = classify_days(spark, [DEMO_CATALOG], str(DEMO_LANDING), str(base / "warehouse"))
    landing = s3.upload(DEMO_LANDING, s3.bucket("demo-landing") + "/events")
    warehouse = s3.bucket("demo-lake") + "/lake"
    remote = classify_days(spark, [DEMO_CATALOG], landing, warehouse)
    return {"local": (local, str(DEMO_LANDING), str(base / "warehouse")), "s3": (remote, landing, warehouse)}


def test_the_demo_on_s3_gives_the_tables_of_local_disk(demo_on_s3):
    local, local_landing, local_warehouse = demo_on_s3["local"]
    remote, landing, warehouse = demo_on_s3["s3"]
    assert all(r.records > 0 for r in remote.values())
    assert [r.as_json() for r in remote.values()] == [r.as_json() for r in local.values()]
    expected = table_hashes(local_warehouse)
    assert len(expected) > 5 and table_hashes(warehouse) == expected
    rows = DeltaTable(f"{warehouse}/deadletter").to_pyarrow_table().column("source_file").to_pylist()
    assert rows and all(f.startswith("2026-11-2") for f in rows)  # below the landing root, not its URI


def test_a_second_run_on_s3_changes_nothing(spark, demo_on_s3):
    _, landing, warehouse = demo_on_s3["s3"]
    before = table_hashes(warehouse)
    classify_days(spark, [DEMO_CATALOG], landing, warehouse, days=DAYS[:1])
    assert table_hashes(warehouse) == before


def test_a_range_of_days_on_s3_in_one_pass_gives_the_tables_of_runs_a_day(spark, s3, demo_on_s3):
    """A backfill's range on S3: one listing of each table's partitions, one commit per table for
    both days; the tables equal the per-day runs' on local disk, and a second pass changes nothing."""
    from catalake.platform.runs.day import classify_days as classify_range

    _, local_landing, local_warehouse = demo_on_s3["local"]
    _, landing, _ = demo_on_s3["s3"]
    warehouse = s3.bucket("range-lake") + "/lake"
    tables, _ = message_tables(load_catalog([DEMO_CATALOG]), catalog_roots([DEMO_CATALOG]))
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)  # as the catalog job does: the tables the demo does not feed too
    for _ in range(2):
        results = classify_range(spark, store, tables, landing, list(DAYS))
        for day, result in results.items():
            assert conservation(store, tables, day, result.records, result.stored)[0], day
        assert table_hashes(warehouse) == table_hashes(local_warehouse)
    assert len(DeltaTable(f"{warehouse}/deadletter", storage_options=uris.delta_options(warehouse)).history()) == 3


def test_a_real_catalog_that_is_not_the_demo_on_s3(spark, s3, tmp_path, shared_data):
    landing, catalog = land_azure(shared_data, tmp_path)  # the real blob events and their real catalog
    local = classify_days(spark, [catalog], str(landing), str(tmp_path / "warehouse"), days=[AZURE_DAY])
    remote_landing = s3.upload(landing, s3.bucket("azure-landing"))
    warehouse = s3.bucket("azure-lake") + "/wh"
    remote = classify_days(spark, [catalog], remote_landing, warehouse, days=[AZURE_DAY])
    assert remote[AZURE_DAY].as_json() == local[AZURE_DAY].as_json()
    assert sum(remote[AZURE_DAY].tables.values()) == 2
    assert table_hashes(warehouse) == table_hashes(str(tmp_path / "warehouse"))


def test_two_runs_of_one_day_at_once_on_s3_store_every_record_once(spark, s3, demo_on_s3):
    _, landing, _ = demo_on_s3["s3"]
    warehouse = s3.bucket("concurrent-lake")
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, catalog_roots([DEMO_CATALOG]))
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)
    results, errors = [], []

    def run():
        try:
            results.append(classify_partition(spark, store, tables, landing, DAYS[0]))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 2
    ok, counts = conservation(store, tables, DAYS[0], results[0].records)
    assert ok and counts["rows_stored"] == results[0].records == results[1].records, counts
    _, local_landing, local_warehouse = demo_on_s3["local"]
    # every record of the day exactly once: the tables of one run of the day on local disk
    assert table_hashes(warehouse, DAYS[0]) == table_hashes(local_warehouse, DAYS[0])
    # no file either run wrote is left that no commit ever took (an overwrite keeps what it
    # replaced for time travel, as Delta does until VACUUM)
    from pyarrow import fs as pafs

    location = uris.Location.of(warehouse)
    filesystem, base = location.filesystem, location.path
    found = filesystem.get_file_info(pafs.FileSelector(base, recursive=True))
    data = {i.path for i in found if i.path.endswith(".parquet") and "/_delta_log/" not in i.path}
    committed = set()
    for info in found:
        if "/_delta_log/" in info.path and info.path.endswith(".json"):
            table = info.path.split("/_delta_log/")[0]
            with filesystem.open_input_stream(info.path) as log:
                for line in log.read().decode().splitlines():
                    if '"add"' in line:
                        committed.add(f"{table}/{json.loads(line)['add']['path']}")
    assert data and data <= committed, sorted(data - committed)[:5]


def test_replay_and_drift_on_s3(spark, s3, tmp_path):
    from catalake.platform.runs.drift import candidates, deadletter_rows
    from catalake.platform.runs.replay import replay_partition

    landing = s3.upload(DEMO_LANDING, s3.bucket("replay-landing"))
    warehouse = s3.bucket("replay-lake")
    # the demo catalog without its payments group: those events are dead letters first
    partial = tmp_path / "partial"
    shutil.copytree(DEMO_CATALOG, partial)
    path = partial / "bikeshare.xreg.json"
    document = json.loads(path.read_text())
    groups = document["messagegroups"]
    assert any("payments" in k for k in groups), "the demo catalog has a payments group"
    document["messagegroups"] = {k: v for k, v in groups.items() if "payments" not in k}
    path.write_text(json.dumps(document))
    first = classify_days(spark, [partial], landing, warehouse, days=DAYS[:1])[DAYS[0]]
    unmatched = first.deadletter.get("no_match", 0)
    found = candidates(deadletter_rows(warehouse, DAYS[0]))
    assert any("payment" in (c.type or "").lower() for c in found)
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, catalog_roots([DEMO_CATALOG]))
    store = DeltaStore(spark, warehouse)
    sync_message_tables(store, tables)
    result = replay_partition(spark, store, tables, DAYS[0])
    moved = sum(result.moved.values())
    assert moved > 0 and unmatched - moved == 1  # the demo's one unknown type stays a dead letter
    ok, counts = conservation(store, tables, DAYS[0], first.records)
    assert ok, counts
    assert sum(replay_partition(spark, store, tables, DAYS[0]).moved.values()) == 0  # a second replay moves nothing


def cli(*args, env: dict, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catalake.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def test_a_landing_that_cannot_be_read_fails_in_one_line_naming_it(s3, tmp_path):
    env = {**os.environ, "CATALAKE_WAREHOUSE": str(tmp_path / "wh"), "DAGSTER_HOME": str(tmp_path)}
    out = cli("run", "--date", "2026-11-20", "--no-analytics", env={**env, "CATALAKE_LANDING": "s3://no-such-bucket/events"},
              cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == ["catalake: landing s3://no-such-bucket/events: does not exist"]
    out = cli("run", "--date", "2026-11-20", "--no-analytics", env={**env, "CATALAKE_LANDING": str(tmp_path / "nowhere")}, cwd=tmp_path)
    assert out.returncode == 2 and f"landing {tmp_path / 'nowhere'}: does not exist" in out.stderr
    # a store that refuses the credentials (or finds none): one line, the URI and the cause, no secret
    with s3_server(tmp_path, auth=True) as locked:
        bucketless = {**env, **locked.environment, "CATALAKE_LANDING": "s3://events-bucket/landing"}
        out = cli("run", "--date", "2026-11-20", "--no-analytics", env=bucketless, cwd=tmp_path)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert lines[0].startswith("catalake: landing s3://events-bucket/landing: cannot be read:"), lines
        assert locked.environment["AWS_SECRET_ACCESS_KEY"] not in out.stderr + out.stdout
        anonymous = {k: v for k, v in bucketless.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        out = cli("run", "--date", "2026-11-20", "--no-analytics", env=anonymous, cwd=tmp_path)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "s3://events-bucket/landing" in out.stderr


def test_a_missing_day_on_s3_is_a_warning_the_ui_shows(spark, s3, tmp_path):
    from dagster import AssetCheckKey, AssetKey, DagsterInstance

    from catalake.component import build_definitions
    from catalake.platform.config import Settings

    landing = s3.upload(DEMO_LANDING, s3.bucket("missing-day-landing"))
    settings = Settings(landing=landing, warehouse=s3.bucket("missing-day-lake"), local_dir=tmp_path / "local",
                        spark_master="local[2]", start_date="2026-11-20")
    definitions = build_definitions(settings, analytics=False)
    with DagsterInstance.ephemeral() as instance:
        assert definitions.resolve_job_def("catalake_job").execute_in_process(instance=instance).success
        run = definitions.resolve_job_def("events_job").execute_in_process(partition_key="2026-11-22", instance=instance)
        assert run.success
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "landing")])[AssetCheckKey(AssetKey("deadletter"), "landing")]
        evaluation = check.event.dagster_event.event_specific_data
        assert not evaluation.passed and evaluation.severity.value == "WARN"
        assert "no folder 2026-11-22/" in evaluation.description and landing in evaluation.description
        materialization = instance.get_latest_materialization_event(AssetKey("deadletter")).asset_materialization
        assert materialization.metadata["landing"].value == "missing"
        assert materialization.metadata["records_read"].value == 0
        run = definitions.resolve_job_def("events_job").execute_in_process(partition_key="2026-11-20", instance=instance)
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("deadletter"), "landing")])[AssetCheckKey(AssetKey("deadletter"), "landing")]
        assert run.success and check.event.dagster_event.event_specific_data.passed


def test_catalake_run_on_s3_end_to_end_with_the_dbt_build(s3, demo_on_s3, tmp_path):
    """The whole `catalake run` (catalog job, partition run, dbt build) with the landing and the
    warehouse on S3: the tables equal the local run's, the dbt models read them from the bucket."""
    import duckdb

    _, local_landing, local_warehouse = demo_on_s3["local"]
    landing = s3.upload(DEMO_LANDING, s3.bucket("e2e-landing") + "/events")
    warehouse = s3.bucket("e2e-lake") + "/lake"
    (tmp_path / "home").mkdir()
    env = {**os.environ, "CATALAKE_LANDING": landing, "CATALAKE_WAREHOUSE": warehouse, "DAGSTER_HOME": str(tmp_path / "home"),
           "CATALAKE_SPARK_MASTER": "local[2]"}
    out = cli("run", "--date", DAYS[0].isoformat(), "--json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["landing"] == "read" and result["records"] > 0
    assert table_hashes(warehouse, DAYS[0]) == table_hashes(local_warehouse, DAYS[0])
    with duckdb.connect(str(tmp_path / ".catalake" / "analytics.duckdb"), read_only=True) as con:
        stored = con.execute("SELECT sum(records) FROM events_daily").fetchone()[0]
    assert stored == sum(result["tables"].values())
    assert (tmp_path / ".catalake" / "expectations").is_dir() and not (tmp_path / "warehouse").exists()


def test_tables_and_sql_over_an_s3_warehouse(s3, demo_on_s3, tmp_path):
    _, _, warehouse = demo_on_s3["s3"]
    env = {**os.environ, "CATALAKE_WAREHOUSE": warehouse, "CATALAKE_SPARK_MASTER": "local[1]"}
    out = cli("tables", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"{warehouse}/messages/bikeshare_rides__rideended" in out.stdout
    # every file the executors wrote on S3 carries its column statistics, and a filter on `time` opens none
    # of another day's files
    rides = DeltaTable(f"{warehouse}/messages/bikeshare_rides__rideended")
    assert "files without column statistics" not in out.stdout
    assert statistics_coverage(rides)[0] == statistics_coverage(rides)[1] > 0
    out = cli("sql", "SELECT count(*) AS n FROM bikeshare_rides__rideended WHERE time < TIMESTAMPTZ '2026-11-21 00:00:00+00'",
              env=env, cwd=tmp_path)
    first_day = rides.to_pyarrow_table(partitions=[("event_date", "=", "2026-11-20")]).num_rows
    assert out.returncode == 0 and out.stdout.split()[-1] == str(first_day), out.stderr[-2000:]
    out = cli("sql", "SELECT count(*) AS n FROM bikeshare_rides__rideended", env=env, cwd=tmp_path)
    stored = DeltaTable(f"{warehouse}/messages/bikeshare_rides__rideended").to_pyarrow_table().num_rows
    assert out.returncode == 0 and out.stdout.split()[-1] == str(stored) and stored > 0, out.stderr[-2000:]


CLUSTER_RUN = """
import datetime as dt, json, sys
from catalake.platform.catalog import load_catalog
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.config import catalog_roots
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.spark import build_session
from catalake.platform.warehouse.store import DeltaStore
master, catalog_dir, landing, warehouse = sys.argv[1:5]
spark = build_session(master, "catalake-cluster-test", {} if master.startswith("sc://") else
                      {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                       "spark.executor.memory": "512m", "spark.cores.max": "2"})
catalog = load_catalog([catalog_dir])
tables, _ = message_tables(catalog, catalog_roots([catalog_dir]))
store = DeltaStore(spark, warehouse)
sync_message_tables(store, tables)
for day in (dt.date(2026, 11, 20), dt.date(2026, 11, 21)):
    result = classify_partition(spark, store, tables, landing, day)
    ok, counts = conservation(store, tables, day, result.records)
    print("RESULT", json.dumps({**result.as_json(), "conserved": ok}))
print("READ", store.read("deadletter").count())
"""


def test_a_standalone_cluster_over_s3_gives_the_local_tables(s3, demo_on_s3, tmp_path):
    """A master and two workers, each with its own work and local folders, sharing nothing but S3."""
    local, local_landing, local_warehouse = demo_on_s3["local"]
    landing = s3.upload(DEMO_LANDING, s3.bucket("cluster-landing"))
    warehouse = s3.bucket("cluster-lake")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    # the workers start without the storage settings: the driver's travel with the job
    workers_env = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    with spark_cluster(tmp_path, workers=2, environment=workers_env) as cluster:
        out = subprocess.run([sys.executable, "-c", CLUSTER_RUN, cluster.master, str(DEMO_CATALOG), landing, warehouse],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        executors = sorted(p.name for p in tmp_path.glob("worker-*/work/app-*/*"))
    results = [json.loads(line.split(" ", 1)[1]) for line in out.stdout.splitlines() if line.startswith("RESULT")]
    assert [r.pop("conserved") for r in results] == [True, True]
    assert results == [r.as_json() for r in local.values()]
    assert table_hashes(warehouse) == table_hashes(local_warehouse)
    assert len(executors) >= 2  # both workers ran executors
    assert f"READ {sum(sum(r['deadletter'].values()) for r in results)}" in out.stdout


CONNECT_SERVER = """
import os, sys, time
from pyspark.sql import SparkSession
SparkSession.builder.remote("local[2]").getOrCreate()  # pyspark starts a local Spark Connect server (port 15002)
print("SERVING", flush=True)
time.sleep(3600)
"""


def test_spark_connect_over_s3_gives_the_local_tables(s3, demo_on_s3, tmp_path):
    local, local_landing, local_warehouse = demo_on_s3["local"]
    landing = s3.upload(DEMO_LANDING, s3.bucket("connect-landing"))
    warehouse = s3.bucket("connect-lake")
    # the server and the client share the token the server requires
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_CONNECT_AUTHENTICATE_TOKEN": "catalake-test-token"}
    log = tmp_path / "connect.log"
    with open(log, "wb") as sink:
        server = subprocess.Popen([sys.executable, "-c", CONNECT_SERVER], env=env, stdout=sink, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        wait_for_port(15002, server, log, seconds=120)
        # `localhost`: pyspark sends the token over plain gRPC only to localhost
        out = subprocess.run([sys.executable, "-c", CLUSTER_RUN, "sc://localhost:15002", str(DEMO_CATALOG), landing, warehouse],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=420)
    finally:
        stop(server)
    assert out.returncode == 0, out.stderr[-3000:]
    results = [json.loads(line.split(" ", 1)[1]) for line in out.stdout.splitlines() if line.startswith("RESULT")]
    assert [r.pop("conserved") for r in results] == [True, True]
    assert results == [r.as_json() for r in local.values()]
    assert table_hashes(warehouse) == table_hashes(local_warehouse)
