"""The demo through Dagster end to end (catalog job, two classified days with their checks, the
dbt build), the dbt project's sources and models, and the README's analyst queries."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pytest
import yaml
from deltalake import DeltaTable
from dagster import DagsterInstance

from catalake.component import build_definitions
from catalake.defs.events.jobs import DAILY_SELECTION
from catalake.platform.catalog import load_catalog
from catalake.platform.config import DBT_TEMPLATE, Settings
from catalake.platform.warehouse.dbt_sources import prepare_project
from catalake.platform.warehouse.message_tables import message_tables
from catalake.platform.warehouse.queries import sql, warehouse_tables
from support.paths import DEMO_CATALOG, REPO

DAYS = ["2026-11-20", "2026-11-21"]
DEMO_RUN: dict = {}  # the demo fixture's Dagster instance and definitions


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory):
    """The demo's two days through the Dagster jobs, as `catalake run` does them."""
    base = tmp_path_factory.mktemp("demo")
    warehouse = base / "warehouse"
    settings = Settings(warehouse=warehouse, spark_master="local[2]")
    instance = DagsterInstance.ephemeral()
    runs = {"catalog": build_definitions(settings).resolve_job_def("catalake_job").execute_in_process(instance=instance)}
    definitions = build_definitions(settings)  # loaded again, as after the UI's "Reload": with the dbt models
    for day in DAYS:
        runs[f"events {day}"] = definitions.resolve_job_def("events_job").execute_in_process(
            instance=instance, partition_key=day, asset_selection=DAILY_SELECTION)
        runs[f"analytics {day}"] = definitions.resolve_job_def("analytics_job").execute_in_process(instance=instance, partition_key=day)
    assert all(run.success for run in runs.values())
    DEMO_RUN.update(instance=instance, definitions=definitions)
    return base, warehouse, runs


def test_the_ui_shows_every_processed_day_and_one_check_result_per_partition_run(demo):
    """What the Dagster UI reads from the instance: no message table misses a processed day,
    and each `expectations` check has one evaluation per run, for that run's partition."""
    from dagster import AssetCheckKey, AssetKey

    instance, definitions = DEMO_RUN["instance"], DEMO_RUN["definitions"]
    message_keys = [k for k in definitions.resolve_all_asset_keys() if k.path[0] == "messages"]
    assert len(message_keys) == 9
    for key in message_keys + [AssetKey("deadletter")]:
        assert instance.get_materialized_partitions(key) == set(DAYS), key
    dock = AssetKey(["messages", "bikeshare.docks.mqtt", "bikeshare.docks.mqtt.DockStatus"])
    history = instance.event_log_storage.get_asset_check_execution_history(AssetCheckKey(dock, "expectations"), limit=10)
    assert len(history) == 2  # two events_job runs, one evaluation each (none unpartitioned)
    partitions = {record.event.dagster_event.event_specific_data.partition for record in history if record.event}
    assert partitions == set(DAYS)


def test_catalog_job_writes_the_suites(demo):
    _, warehouse, runs = demo
    suites = runs["catalog"].asset_materializations_for_node("expectation_suites")[0].metadata
    assert suites["suites"].value == 9 and suites["written"].value == 9
    assert len(list((warehouse / "expectations").glob("*.json"))) == 9


def test_partition_run_materializes_and_checks(demo):
    _, warehouse, runs = demo
    run = runs["events 2026-11-20"]
    rows = {m.asset_key.to_user_string(): m.metadata["dagster/partition_row_count"].value
            for m in run.asset_materializations_for_node("classify_events")}
    assert rows["messages/bikeshare.docks.mqtt/bikeshare.docks.mqtt.DockStatus"] == 15 and rows["deadletter"] == 3
    checks = {(e.asset_key.to_user_string(), e.check_name): e for e in run.get_asset_check_evaluations()}
    assert checks["deadletter", "conservation"].passed
    expectations = {k[0]: e for k, e in checks.items() if k[1] == "expectations"}
    # the tables the day feeds: materialized and checked; one it does not feed shows the day
    # processed with 0 rows, and its check passes with nothing to check
    fed = {k for k, n in rows.items() if k.startswith("messages/") and n}
    assert len(fed) == 7 and set(expectations) == {k for k in rows if k.startswith("messages/")}
    assert rows["messages/bikeshare.docks.mqtt/bikeshare.docks.mqtt.BatteryLow"] == 0
    unfed = expectations["messages/bikeshare.docks.mqtt/bikeshare.docks.mqtt.BatteryLow"]
    assert unfed.passed and unfed.metadata["rows_stored"].value == 0 and "nothing to check" in unfed.description
    dock = expectations["messages/bikeshare.docks.mqtt/bikeshare.docks.mqtt.DockStatus"].metadata
    assert dock["rows_stored"].value == 15 and dock["records_matched"].value == 15
    assert dock["failed_error"].value == 0 and dock["expectations"].value > 10
    # the quality results come from the classification pass: the one RideEnded record with a
    # negative distance broke `data.distance_m:range` and was dead-lettered; the stored rows meet
    # the suite, so the check warns (it does not block) and says how many records were dropped
    failing = {k for k, e in expectations.items() if not e.passed}
    assert failing == {"messages/bikeshare.rides/bikeshare.rides.RideEnded"}
    ended = expectations["messages/bikeshare.rides/bikeshare.rides.RideEnded"]
    assert ended.severity.value == "WARN" and ended.metadata["records_dead_lettered"].value == 1
    assert ended.metadata["records_matched"].value == 7 and ended.metadata["rows_stored"].value == 6
    assert rows["messages/bikeshare.rides/bikeshare.rides.RideEnded"] == 6
    details = {d["id"]: d for d in ended.metadata["details"].value}
    assert details["data.distance_m:range"]["unexpected_count"] == 1 and details["data.distance_m:range"]["evaluated"] == 7
    assert details["data.distance_m:range"]["examples"] == [
        {"value": -5, "source_file": "2026-11-20/rides-http.jsonl", "source_line": 27}]
    # the check links the day's validation page of the table
    assert dock["data_docs"].value.startswith(str(warehouse / "gx/uncommitted/data_docs/local_site/validations/"
                                                             "bikeshare_docks_mqtt__dockstatus/2026-11-20 (run "))
    assert Path(dock["data_docs"].value).exists()
    # the analytics job's data_docs asset rendered the day's validation pages
    assert (warehouse / "gx/uncommitted/data_docs/local_site/index.html").exists()
    pages = list((warehouse / "gx/uncommitted/data_docs/local_site/validations/bikeshare_rides__rideended").rglob("*.html"))
    assert sorted(p.name for p in pages) == ["bikeshare_rides__rideended-2026-11-20.html", "bikeshare_rides__rideended-2026-11-21.html"]
    # every suite has its page and is listed, the one no day fed included; pages name the day and run
    site = warehouse / "gx/uncommitted/data_docs/local_site"
    assert len(list((site / "expectations").glob("*.html"))) == 9
    index = (site / "index.html").read_text()
    assert "expectations/bikeshare_docks_mqtt__batterylow.html" in index
    assert "2026-11-21 (run " in pages[0].read_text() or "2026-11-20 (run " in pages[0].read_text()


def test_a_days_data_docs_page_says_what_its_dagster_check_says(demo):
    """The page the `expectations` check links, read offline: the data asset, as many
    expectations as the check lists, what the counts are over, each one's severity, and what
    became of the records that broke one."""
    from dagster import AssetKey

    _, _, runs = demo
    run = runs["events 2026-11-20"]
    ended = AssetKey(["messages", "bikeshare.rides", "bikeshare.rides.RideEnded"])
    check = next(e for e in run.get_asset_check_evaluations() if e.asset_key == ended and e.check_name == "expectations")
    dom, log = render_offline(Path(check.metadata["data_docs"].value))
    assert "CONSOLE" not in log, log
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    assert "Data asset: bikeshare_rides__rideended (event_date 2026-11-20)" in text
    assert int(re.search(r"Evaluated Expectations (\d+)", text).group(1)) == check.metadata["expectations"].value == 25
    assert ("7 record(s) of 2026-11-20 matched this message; 1 broke an ERROR expectation and went to the dead-letter "
            "table; the table holds 6 row(s)") in text
    assert "data.distance_m column_values_to_be_between ERROR FAIL 1 1 record(s) dead-lettered (schema_violation)" in text
    assert "data column_values_to_be_of_type ERROR pass 0" in text  # the payload types row Dagster lists too


def test_the_dbt_project_is_prepared_for_the_configured_catalog_under_the_warehouse(tmp_path):
    demo_tables, _ = message_tables(load_catalog([DEMO_CATALOG]), [DEMO_CATALOG])
    dest = prepare_project(DBT_TEMPLATE, tmp_path / "dbt", demo_tables)
    assert (dest / "models" / "marts" / "ride_lifecycle.sql").exists()  # the demo has its sources
    sources = (dest / "models" / "sources.yml").read_text()
    # JSON text, which YAML (dbt's reader) reads as it is
    names = {t["name"] for source in yaml.safe_load(sources)["sources"] for t in source["tables"]}
    assert {t.message.table_name for t in demo_tables} <= names
    before = {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()}
    prepare_project(DBT_TEMPLATE, dest, demo_tables)  # unchanged: nothing rewritten, no new parse
    assert {p: p.stat().st_mtime_ns for p in dest.rglob("*") if p.is_file()} == before

    # another catalog: its own sources, no demo mart, and a quote in an id stays a literal
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "c.xreg.json").write_text(json.dumps({"messagegroups": {"shop": {"messages": {"o'brien.Created": {
        "envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.Created"}}}}}}}))
    tables, _ = message_tables(load_catalog([folder]), [folder])
    prepare_project(DBT_TEMPLATE, dest, tables)
    assert not (dest / "models" / "marts" / "ride_lifecycle.sql").exists()
    assert "'/messagegroups/shop/messages/o''brien.Created'" in (dest / "macros" / "catalake_messages.sql").read_text()
    assert "bikeshare" not in (dest / "models" / "sources.yml").read_text()


def test_dbt_build_materializes_every_model_with_tests_as_checks(demo):
    _, _, runs = demo
    run = runs["analytics 2026-11-21"]
    models = {e.asset_key.to_user_string() for e in run.get_asset_materialization_events()}
    assert models == {"events_daily", "deadletter_daily", "expectation_failures_daily", "catalog_coverage", "ride_lifecycle",
                      "data_docs"}
    checks = run.get_asset_check_evaluations()
    assert len(checks) == 11 and all(c.passed for c in checks)
    assert {c.check_name for c in checks} >= {"unique_catalog_coverage_message_xid", "not_null_ride_lifecycle_ride_id"}


def test_events_daily_matches_the_message_tables(demo, spark):
    _, warehouse, _ = demo
    from catalake.platform.warehouse.store import DeltaStore

    store = DeltaStore(spark, warehouse)
    expected = {(row.table_name, str(row.event_date)): row.n for row in sql(spark, store, " UNION ALL ".join(
        f"SELECT '{name}' AS table_name, event_date, count(*) AS n FROM {name} GROUP BY event_date"
        for name in warehouse_tables(warehouse) if "__" in name)).collect()}
    with duckdb.connect(str(warehouse / "analytics.duckdb"), read_only=True) as con:
        got = {(t, str(d)): n for t, d, n in con.sql("SELECT table_name, event_date, records FROM events_daily").fetchall()}
        assert got == expected and sum(got.values()) == 2 * 56
        dead = dict(con.sql("SELECT reason, sum(records) FROM deadletter_daily GROUP BY reason").fetchall())
        assert dead == {"malformed_json": 2, "no_match": 2, "schema_violation": 2}
        # the dead letters name the rule they broke, and the analytics group by it
        broken = con.sql("SELECT expectation, sum(records) FROM expectation_failures_daily GROUP BY expectation").fetchall()
        assert broken == [("data.distance_m:range", 2)]
        coverage = {m: (str(first), str(last), total, never) for m, first, last, total, never in con.sql(
            "SELECT message_id, first_seen, last_seen, records_total, never_seen FROM catalog_coverage").fetchall()}
        assert coverage["bikeshare.docks.mqtt.DockStatus"] == ("2026-11-20", "2026-11-21", 30, False)
        assert coverage["bikeshare.docks.DockStatus"] == ("None", "None", 0, True)
        assert len(coverage) == 9
        rides = con.execute("SELECT count(*), count(ended_at), min(duration_s) FROM ride_lifecycle").fetchone()
        assert rides[0] == 24 and rides[1] == 24 and rides[2] > 0


# -- the README's analyst queries, run as written

def _readme_blocks() -> dict[str, str]:
    text = (REPO / "README.md").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- analyst:(\w+) -->\n```\w+\n(.*?)```", text, re.S)}


def _documented_result() -> list[tuple]:
    text = (REPO / "README.md").read_text()
    table = text.split("<!-- analyst:result -->\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [tuple(int(c) if c.isdigit() else c for c in (x.strip() for x in row.strip("|").split("|"))) for row in table]


@pytest.fixture
def in_demo_folder(demo, monkeypatch):
    base, _, _ = demo
    monkeypatch.chdir(base)
    return base


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_readme_query_through_catalake_sql(in_demo_folder, engine):
    command = _readme_blocks()["spark"].strip()
    query = re.match(r'\.venv/bin/catalake sql "(.*)"$', command).group(1)
    env = {**os.environ, "CATALAKE_WAREHOUSE": str(in_demo_folder / "warehouse"), "PYSPARK_PYTHON": sys.executable}
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "sql", query, "--engine", engine], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [tuple(int(c) if c.isdigit() else c for c in line.split()) for line in out.stdout.splitlines()[2:] if line.strip()]
    assert rows == _documented_result()


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_readme_query_in_duckdb_and_polars(in_demo_folder, engine):
    namespace: dict = {}
    exec(_readme_blocks()[engine], namespace)  # noqa: S102 - the README's own code block
    assert [tuple(r) for r in namespace["result"]] == _documented_result()


def test_readme_notebook_block_answers_in_duckdb_polars_and_spark(in_demo_folder):
    namespace: dict = {}
    exec(_readme_blocks()["notebook"], namespace)  # noqa: S102 - the README's own code block
    for engine in ("in_duckdb", "in_polars", "in_spark"):
        assert [tuple(r) for r in namespace[engine]] == _documented_result(), engine


def test_catalake_tables_and_docs_commands(in_demo_folder):
    env = {**os.environ, "CATALAKE_WAREHOUSE": str(in_demo_folder / "warehouse")}
    tables = subprocess.run([sys.executable, "-m", "catalake.cli", "tables"], capture_output=True, text=True, env=env, timeout=120)
    assert tables.returncode == 0, tables.stderr
    names = [line.split()[0] for line in tables.stdout.splitlines()[2:]]
    assert names[:2] == ["catalog_messages", "deadletter"] and "bikeshare_rides__rideended" in names and len(names) == 11
    docs = subprocess.run([sys.executable, "-m", "catalake.cli", "docs"], capture_output=True, text=True, env=env, timeout=120)
    assert docs.returncode == 0 and "gx/uncommitted/data_docs/local_site/index.html" in docs.stdout


@pytest.mark.jvm
def test_catalake_run_with_analytics_on_a_catalog_that_is_not_the_demo(tmp_path):
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "shop.xreg.json").write_text(json.dumps({"messagegroups": {"shop": {"messages": {
        "o'brien.Created": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.Created"}},
                            "dataschemaformat": "JsonSchema/draft-07",
                            "dataschema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "shop.Closed": {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": "shop.Closed"}}}}}}}))
    day = tmp_path / "landing" / DAYS[0]
    day.mkdir(parents=True)
    events = [{"specversion": "1.0", "id": str(i), "source": "/shop", "type": t, "data": {"n": i}}
              for i, t in enumerate(["shop.Created"] * 3 + ["shop.Closed", "shop.Other"])]
    (day / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    status = ["git", "-C", str(REPO), "status", "--porcelain", "--ignored"]

    def written() -> set[str]:  # bytecode aside: another test process may import a module meanwhile
        return {line for line in subprocess.run(status, capture_output=True, text=True).stdout.splitlines()
                if "__pycache__" not in line and not line.endswith(".pyc")}

    before = written()
    env = {**os.environ, "CATALAKE_CATALOG": str(folder), "CATALAKE_LANDING": str(tmp_path / "landing"),
           "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse"), "DAGSTER_HOME": str(tmp_path / "home")}
    (tmp_path / "home").mkdir()
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", DAYS[0]], env=env,
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "5 records -> 4 in 2 message table(s), 1 dead-lettered" in out.stdout
    con = duckdb.connect(str(tmp_path / "warehouse" / "analytics.duckdb"), read_only=True)
    assert sorted(con.execute("SELECT message_xid, records FROM events_daily").fetchall()) == [
        ("/messagegroups/shop/messages/o'brien.Created", 3), ("/messagegroups/shop/messages/shop.Closed", 1)]
    con.close()
    assert (tmp_path / "warehouse" / "dbt" / "target" / "manifest.json").exists()
    # nothing written under the source tree (dbt's target and logs included)
    assert written() == before


@pytest.mark.jvm
def test_the_wheel_carries_everything_catalake_run_needs(tmp_path):
    """A non-editable install (the wheel's own files, not the checkout) runs the demo with its
    analytics, and writes nothing into the installed package."""
    # built from a copy: a build writes build/ and egg-info beside the sources
    source = tmp_path / "source"
    anywhere = shutil.ignore_patterns(".git", ".venv", ".dagster_home", "build", "*.egg-info", "__pycache__",
                                      ".pytest_cache", ".hypothesis")

    def ignore(folder, names):  # the demo's warehouse at the root, not the engine's warehouse package
        return anywhere(folder, names) | ({"warehouse"} & set(names) if Path(folder) == REPO else set())

    shutil.copytree(REPO, source, symlinks=True, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("catalake-*.whl")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALAKE_", "DAGSTER_HOME"))}
    env["PYTHONPATH"] = str(site)  # ahead of the editable checkout
    where = subprocess.run([sys.executable, "-c", "import catalake; print(catalake.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert where == str(site / "catalake" / "__init__.py")
    run = tmp_path / "run"
    run.mkdir()
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", DAYS[0]], env=env, cwd=run,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "59 records -> 56 in 7 message table(s)" in out.stdout
    con = duckdb.connect(str(run / "warehouse" / "analytics.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM ride_lifecycle").fetchone()[0] > 0
    con.close()
    assert not (site / "catalake" / "dbt_project" / "target").exists()


def render_offline(page) -> tuple[str, str]:
    """(DOM after the page's scripts ran, browser log) of a local page in headless chromium
    with every host name unresolvable: what a reader without network sees."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("the offline data docs test needs Debian's chromium: `make browser` (as root) installs it")
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=10000", "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    return out.stdout, out.stderr


def test_data_docs_render_offline_in_a_headless_browser(demo):
    _, warehouse, _ = demo
    site = warehouse / "gx/uncommitted/data_docs/local_site"
    dom, log = render_offline(site / "index.html")
    assert "CONSOLE" not in log, log  # no script failed (offline, `$ is not defined` before)
    # bootstrap-table rendered the index's tables (rows exist only when its scripts ran)
    rows = re.findall(r'<tr class="clickable-row" data-href="([^"]+)" data-index="\d+"', dom)
    suites = {Path(r).stem for r in rows if r.startswith("expectations/")}
    assert suites == {p.stem for p in (warehouse / "expectations").glob("*.json")} and len(suites) == 9
    validations = [r for r in rows if r.startswith("validations/")]
    assert {day for day in DAYS if any(f"/{day}%20%28run%20" in r for r in validations)} == set(DAYS)
    page = site / unquote(next(r for r in validations if "bikeshare_rides__ridestarted" in r and "/2026-11-20%20" in r))
    dom, log = render_offline(page)
    assert "CONSOLE" not in log, log
    assert "2026-11-20" in dom and "bikeshare_rides__ridestarted" in dom  # the partition and the table
    assert not re.findall(r'<(?:script|link)[^>]+(?:src|href)="https?://', page.read_text())  # nothing from a CDN


def test_a_range_run_equals_runs_a_day_and_reports_each_day(demo, tmp_path):
    """The demo's two days as one run of a backfill's range (events_job, then analytics_job):
    each day keeps its own materializations, row counts and `conservation` result; the tables and
    the dbt models equal the per-day runs'; and the dbt build parses nothing again (the range
    goes to dbt in the environment, which leaves partial parsing alone)."""
    from dagster import AssetCheckKey, AssetKey

    from catalake.leases import RANGE_END_TAG, RANGE_START_TAG
    from support.tables import table_hashes

    _, daily, runs = demo
    warehouse = tmp_path / "warehouse"
    settings = Settings(warehouse=warehouse, spark_master="local[2]")
    instance = DagsterInstance.ephemeral()
    assert build_definitions(settings).resolve_job_def("catalake_job").execute_in_process(instance=instance).success
    definitions = build_definitions(settings)
    span = {RANGE_START_TAG: DAYS[0], RANGE_END_TAG: DAYS[-1]}
    events = definitions.resolve_job_def("events_job").execute_in_process(
        instance=instance, tags=span, asset_selection=DAILY_SELECTION)
    analytics = definitions.resolve_job_def("analytics_job").execute_in_process(instance=instance, tags=span)
    assert events.success and analytics.success

    deadletter = {e.partition: e.materialization.metadata for e in events.get_asset_materialization_events()
                  if e.asset_key == AssetKey("deadletter")}
    assert sorted(deadletter) == DAYS
    per_day = {e.partition: e.materialization.metadata["dagster/partition_row_count"].value
               for e in runs[f"events {DAYS[0]}"].get_asset_materialization_events() + runs[f"events {DAYS[1]}"].get_asset_materialization_events()
               if e.asset_key == AssetKey("deadletter")}
    assert {d: m["dagster/partition_row_count"].value for d, m in deadletter.items()} == per_day
    checked = {(e.check_name, e.partition): e.passed for e in events.get_asset_check_evaluations()
               if e.asset_key == AssetKey("deadletter")}
    assert checked == {(name, day): True for name in ("conservation", "landing", "freshness") for day in DAYS}
    history = instance.event_log_storage.get_asset_check_execution_history(
        AssetCheckKey(AssetKey("deadletter"), "conservation"), limit=10)
    assert sorted(r.partition for r in history) == DAYS
    assert instance.get_materialized_partitions(AssetKey("events_daily")) == set(DAYS)

    assert table_hashes(warehouse) == table_hashes(daily)
    models = ["events_daily", "deadletter_daily", "expectation_failures_daily", "catalog_coverage", "ride_lifecycle"]
    with duckdb.connect(str(warehouse / "analytics.duckdb"), read_only=True) as ranged, \
            duckdb.connect(str(daily / "analytics.duckdb"), read_only=True) as one_by_one:
        for model in models:
            query = f"SELECT * FROM {model} ORDER BY ALL"
            assert ranged.sql(query).fetchall() == one_by_one.sql(query).fetchall(), model
    logged = " ".join(e.message for e in instance.all_logs(analytics.run_id))
    assert "Finished dbt command" in logged and "Unable to do partial parsing" not in logged


def test_a_backfill_on_a_fresh_deployment_reads_every_table_though_no_catalog_run_made_them(spark, tmp_path, monkeypatch):
    """A newcomer's first click: `dagster dev` on a fresh deployment (the code location's state
    refreshed as it loads, the dbt project prepared; no `catalake_job` run, so no table exists),
    then a backfill of the partitioned assets: the classification run creates the tables no day
    fed, empty with their schema, and the dbt build reads every one of them."""
    from dagster import AssetKey

    from catalake.leases import RANGE_END_TAG, RANGE_START_TAG

    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    warehouse = tmp_path / "warehouse"
    definitions = build_definitions(Settings(warehouse=warehouse, spark_master="local[2]"))
    assert definitions.resolve_job_def("analytics_job") and not (warehouse / "messages").exists()
    instance = DagsterInstance.ephemeral()
    span = {RANGE_START_TAG: DAYS[0], RANGE_END_TAG: DAYS[-1]}
    events = definitions.resolve_job_def("events_job").execute_in_process(
        instance=instance, tags=span, asset_selection=DAILY_SELECTION, raise_on_error=False)
    analytics = definitions.resolve_job_def("analytics_job").execute_in_process(
        instance=instance, tags=span, raise_on_error=False)
    assert events.success and analytics.success, [e.step_failure_data.error.message[-500:] for e in
                                                  analytics.get_step_failure_events()]
    unfed = ["bikeshare_docks__dockstatus", "bikeshare_docks_mqtt__batterylow"]
    assert all(DeltaTable(str(warehouse / "messages" / name)).version() == 0 for name in unfed)  # created, empty
    with duckdb.connect(str(warehouse / "analytics.duckdb"), read_only=True) as db:
        counted = dict(db.sql("SELECT table_name, sum(records) FROM events_daily GROUP BY 1").fetchall())
    assert len(counted) == 7 and not set(unfed) & set(counted)  # the fed tables' records; the unfed read, empty
    assert instance.get_materialized_partitions(AssetKey("events_daily")) == set(DAYS)


def test_the_models_file_holds_the_models_and_every_object_opens_in_a_plain_duckdb(demo):
    """`analytics.duckdb` as an analyst opens it, in a process of its own: the models' tables and
    nothing else (no copy of a source, no view over a dataset that lived in dbt's process), each
    one read; the sources' columns dagster-dbt's lineage needs are kept apart, in dbt's target/."""
    from dagster import AssetKey

    _, warehouse, runs = demo
    script = (
        "import duckdb, json, sys\n"
        "db = duckdb.connect(sys.argv[1], read_only=True)\n"
        "objects = db.execute(\"select schema_name, table_name from duckdb_tables() where database_name = 'analytics' \"\n"
        "                     \"union all select schema_name, view_name from duckdb_views() where not internal\").fetchall()\n"
        "print(json.dumps({f'{s}.{t}': db.execute(f'select count(*) from \"{s}\".\"{t}\"').fetchall()[0][0] for s, t in objects}))\n")
    opened = subprocess.run([sys.executable, "-c", script, str(warehouse / "analytics.duckdb")],
                            capture_output=True, text=True, check=True)
    counts = json.loads(opened.stdout)
    assert sorted(counts) == [f"main.{m}" for m in sorted(
        ["events_daily", "deadletter_daily", "expectation_failures_daily", "catalog_coverage", "ride_lifecycle"])]
    assert counts["main.ride_lifecycle"] == 24 and counts["main.catalog_coverage"] == 9
    with duckdb.connect(str(warehouse / "dbt" / "target" / "sources.duckdb"), read_only=True) as kept:
        tables = {t for (t,) in kept.execute("select table_name from duckdb_tables()").fetchall()}
    assert {"deadletter", "catalog_messages", "bikeshare_rides__rideended"} <= tables
    built = {e.asset_key: e.materialization.metadata for e in runs["analytics 2026-11-21"].get_asset_materialization_events()}
    lineage = built[AssetKey("deadletter_daily")]["dagster/column_lineage"].value
    assert [(d.asset_key, d.column_name) for d in lineage.deps_by_column["reason"]] == [(AssetKey("deadletter"), "reason")]


def test_daily_full_runs_checkpoint_the_tables_they_bring_to_their_interval(spark, tmp_path):
    """A schedule of daily runs and no landing sensor (which asks for `checkpoint_job`): each full
    run checkpoints the tables its commits brought to their `delta.checkpointInterval`, so a year
    of days leaves every log bounded for the next run, dbt and the analysts."""
    warehouse = tmp_path / "warehouse"
    settings = Settings(warehouse=warehouse, spark_master="local[2]")
    instance = DagsterInstance.ephemeral()
    assert build_definitions(settings).resolve_job_def("catalake_job").execute_in_process(instance=instance).success
    definitions = build_definitions(settings)
    ended, started = (str(warehouse / "messages" / name) for name in ("bikeshare_rides__rideended",
                                                                     "bikeshare_rides__ridestarted"))
    DeltaTable(ended).alter.set_table_properties({"delta.checkpointInterval": "2"})  # version 1
    for day in DAYS:  # versions 2 and 3
        assert definitions.resolve_job_def("events_job").execute_in_process(
            instance=instance, partition_key=day, asset_selection=DAILY_SELECTION).success
    checkpointed = json.loads((Path(ended) / "_delta_log" / "_last_checkpoint").read_text())["version"]
    assert checkpointed == 2 and DeltaTable(ended).version() == 3  # day 1 brought it 3 past none; day 2 only 1
    assert json.loads((warehouse / "_catalake" / "checkpoints.json").read_text()) == {
        "messages/bikeshare_rides__rideended": 2}
    assert not (Path(started) / "_delta_log" / "_last_checkpoint").exists()  # 100 versions to go
