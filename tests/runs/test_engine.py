"""Spark is the engine: full runs are Spark jobs, small increments on this machine run
in local processes (the freshness path), and every run says which engine ran it."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from catalake.platform.catalog import load_catalog
from catalake.platform.config import Settings
from catalake.platform.runs.day import classify_partition, conservation
from catalake.platform.runs.increment import classify_increment
from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables
from catalake.platform.warehouse.store import DeltaStore
from support.paths import DEMO_CATALOG, REPO
from support.runs import no_spark
from support.tables import table_hashes

DAYS = ["2026-11-20", "2026-11-21"]


@pytest.mark.parametrize("env, full, increment", [
    ({}, 0, 8 << 20),  # the default: full runs on Spark, increments up to 8 MiB in local processes
    ({"CATALAKE_LOCAL_TASK_BYTES": "0"}, 0, 0),
    ({"CATALAKE_SPARK_MASTER": "sc://127.0.0.1:15002"}, 0, 8 << 20),  # make serve's Spark Connect
    ({"CATALAKE_SPARK_MASTER": "sc://spark.example.com:15002"}, 0, 0),  # a remote server reads the landing
    ({"CATALAKE_SPARK_MASTER": "spark://10.0.0.5:7077"}, 0, 0),  # a cluster's executors read the landing
    ({"CATALAKE_ENGINE": "local"}, sys.maxsize, sys.maxsize),
])
def test_the_settings_say_which_runs_are_spark_jobs(env, full, increment):
    settings = Settings.from_env(env)
    assert (settings.local_bytes(incremental=False), settings.local_bytes(incremental=True)) == (full, increment)


def test_an_engine_that_does_not_exist_is_refused_by_name():
    with pytest.raises(ValueError, match="CATALAKE_ENGINE: 'jvm' is not one of spark, local"):
        Settings.from_env({"CATALAKE_ENGINE": "jvm"})


def _demo_run(tmp_path, name: str, **env) -> tuple[list[dict], dict]:
    """`catalake run` over the demo's two days, as `make demo` runs them: the JSON summaries and
    the engine metadata of the last `deadletter` materialization."""
    home = tmp_path / name / "dagster"
    home.mkdir(parents=True)
    environment = {**{k: v for k, v in os.environ.items() if not k.startswith("CATALAKE_")}, "DAGSTER_HOME": str(home),
                   "CATALAKE_WAREHOUSE": str(tmp_path / name / "warehouse"), "PYSPARK_PYTHON": sys.executable, **env}
    out = subprocess.run([str(Path(sys.executable).parent / "catalake"), "run", "--from", DAYS[0], "--to", DAYS[1],
                          "--json", "--no-analytics"], cwd=tmp_path, env=environment, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    summaries = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home))  # the instance's dagster.yaml names its folders by it
        with DagsterInstance.get() as instance:
            event = instance.get_latest_materialization_event(AssetKey("deadletter"))
            metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()
                        if k.startswith("spark_") or k == "engine"}
    return summaries, metadata


@pytest.mark.jvm
def test_the_demo_runs_on_spark_and_writes_what_the_local_path_writes(tmp_path):
    """`make demo`'s command: both days report `engine: spark`, the Spark application and its UI,
    and every table equals the one local processes write, row for row."""
    spark, last = _demo_run(tmp_path, "spark")
    local, _ = _demo_run(tmp_path, "local", CATALAKE_ENGINE="local")
    assert [s["engine"] for s in spark] == ["spark", "spark"] and [s["engine"] for s in local] == ["local", "local"]
    assert [s["partition"] for s in spark] == DAYS and [s["records"] for s in spark] == [s["records"] for s in local]
    assert last["engine"] == "spark" and last["spark_application"].startswith("local-")
    assert last["spark_ui"].startswith("http://") and last["spark_master"].startswith("local")
    hashes = table_hashes(tmp_path / "spark" / "warehouse")
    assert len(hashes) > 5 and hashes == table_hashes(tmp_path / "local" / "warehouse")


def test_an_increment_under_the_threshold_is_local_and_over_it_spark(spark, tmp_path):
    """Settings.local_bytes(incremental=True): a few new bytes are classified in local processes
    (Spark is not asked for), more than the threshold is a Spark job; both append, and the day's
    rows add up after each."""
    catalog = load_catalog([DEMO_CATALOG])
    tables, _ = message_tables(catalog, [DEMO_CATALOG])
    store = DeltaStore(spark, tmp_path / "warehouse")
    sync_message_tables(store, tables)
    day = dt.date.fromisoformat(DAYS[0])
    source = REPO / "src" / "catalake" / "demo" / "landing" / DAYS[0] / "rides-http.jsonl"
    lines = source.read_text().splitlines(keepends=True)
    folder = tmp_path / "landing" / DAYS[0]
    folder.mkdir(parents=True)
    (folder / "first.jsonl").write_text("".join(lines[:4]))
    settings = Settings.from_env({"CATALAKE_LOCAL_TASK_BYTES": str(len("".join(lines[4:6]).encode()))})

    first = classify_partition(spark, store, tables, str(tmp_path / "landing"), day,
                               local_bytes=settings.local_bytes(incremental=False))
    assert first.engine.name == "spark" and first.as_json()["engine"] == "spark"
    (folder / "small.jsonl").write_text("".join(lines[4:6]))
    small = classify_increment(no_spark, store, tables, str(tmp_path / "landing"), day,
                               local_bytes=settings.local_bytes(incremental=True))
    assert (small.kind, small.records, small.as_json()["engine"]) == ("incremental", 2, "local")
    (folder / "large.jsonl").write_text("".join(lines[6:]))
    large = classify_increment(spark, store, tables, str(tmp_path / "landing"), day,
                               local_bytes=settings.local_bytes(incremental=True))
    assert (large.kind, large.records, large.as_json()["engine"]) == ("incremental", len(lines) - 6, "spark")
    assert large.engine.app_id == spark.sparkContext.applicationId and large.engine.ui == spark.sparkContext.uiWebUrl
    nothing = classify_increment(no_spark, store, tables, str(tmp_path / "landing"), day,
                                 local_bytes=settings.local_bytes(incremental=True))
    assert (nothing.records, nothing.as_json()["engine"]) == (0, "none")
    assert conservation(store, tables, day, large.records_of_day)[0] and large.records_of_day == len(lines)
