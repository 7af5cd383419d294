"""A backfill launched on the `make serve` deployment (issue 62): the daemon, PostgreSQL, the run
queue and the warm Spark Connect server of deploy/serve.sh, as a person launches it from the UI.

    python benchmarks/backfill_serve.py [--days 30] [--rides 1000] [--work DIR]

For each case (one day of `days x rides` rides, then `days` days of `rides` rides: the same
records), in one benchmark run: a fresh deployment (deploy/serve.sh start, on free ports, its
state under the work folder), then an asset backfill of every partitioned asset the UI's
"Materialize" offers for the days (`deadletter` and the dbt models with the data docs), launched
through the webserver's GraphQL API as the UI launches it. Timed from the launch to the backfill's
end (the catalog job runs first, as a person materializes `message_catalog` before a backfill,
untimed); the runs the daemon made are counted by job. JSON lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backfill import generate

REPO = Path(__file__).resolve().parent.parent
LAUNCH = """mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
  }
}"""
STATUS = """query($id: String!) {
  partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } ... on PythonError { message } }
}"""
ASSETS = """{ assetNodes { assetKey { path } isPartitioned } }"""
LAUNCH_RUN = """mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        out = json.loads(answer.read())
    if out.get("errors"):
        raise SystemExit(f"GraphQL: {out['errors']}")
    return out["data"]


def serve(work: Path, env: dict) -> tuple[subprocess.Popen, int, dict]:
    """deploy/serve.sh start on free ports; returns it, the webserver's port once it answers and
    its environment."""
    ui = free_port()
    env = {**env, "CATALAKE_SERVE_DIR": str(work / "serve"), "CATALAKE_PG_PORT": str(free_port()),
           "CATALAKE_UI_PORT": str(ui), "CATALAKE_SPARK_CONNECT_PORT": str(free_port()),
           "CATALAKE_SPARK_UI_PORT": str(free_port()), "BIN": str(Path(sys.executable).parent)}
    log = open(work / "serve.log", "wb")
    process = subprocess.Popen(["bash", "deploy/serve.sh", "start"], cwd=REPO, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            graphql(ui, "{ version }")
            return process, ui, env
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"deploy/serve.sh exited: {(work / 'serve.log').read_text()[-3000:]}") from None
            time.sleep(1)
    raise SystemExit("the webserver did not answer in 10 minutes")


def stop(process: subprocess.Popen, env: dict) -> None:
    os.killpg(process.pid, signal.SIGINT)  # serve.sh's trap stops the daemon, Spark Connect, PostgreSQL
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    subprocess.run(["bash", "deploy/serve.sh", "stop"], cwd=REPO, env=env, capture_output=True, timeout=120)


def catalog_run(port: int) -> str:
    """`catalake_job` launched as from the UI (the catalog's tables, suites and dbt project, as a
    person materializes them before a backfill); its status once it ended."""
    selector = {"repositoryLocationName": "catalake", "repositoryName": "__repository__", "jobName": "catalake_job"}
    launched = graphql(port, LAUNCH_RUN, {"params": {"selector": selector, "mode": "default"}})["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise SystemExit(f"catalake_job not launched: {launched}")
    while True:
        status = graphql(port, RUN, {"id": launched["run"]["runId"]})["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(0.5)


def backfill(port: int, days: list[str]) -> tuple[float, str]:
    """The UI's "Materialize" of every partitioned asset for `days`, as an asset backfill; the
    seconds from its launch to its end and its status."""
    nodes = graphql(port, ASSETS)["assetNodes"]
    # the message assets are written by the step that writes `deadletter`: selecting it writes every table
    keys = [n["assetKey"]["path"] for n in nodes if n["isPartitioned"] and n["assetKey"]["path"][0] != "messages"]
    clock = time.perf_counter()
    launched = graphql(port, LAUNCH, {"params": {"partitionNames": days, "fromFailure": False,
                                                  "assetSelection": [{"path": k} for k in keys]}})
    result = launched["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise SystemExit(f"backfill not launched: {result}")
    while True:
        status = graphql(port, STATUS, {"id": result["backfillId"]})["partitionBackfillOrError"]["status"]
        if status not in ("REQUESTED", "CANCELING"):
            return round(time.perf_counter() - clock, 2), status
        time.sleep(0.5)


def runs_by_job(env: dict) -> dict[str, int]:
    code = ("import json, collections; from dagster import DagsterInstance\n"
            "i = DagsterInstance.get()\n"
            "print(json.dumps(collections.Counter(r.job_name for r in i.get_runs())))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rides", type=int, default=1000)
    parser.add_argument("--work")
    args = parser.parse_args()
    base = Path(args.work or tempfile.mkdtemp(prefix="catalake-serve-"))
    first = dt.date.today() - dt.timedelta(days=args.days)
    results = {}
    for name, rides, count in (("one_day", args.days * args.rides, 1), ("range", args.rides, args.days)):
        work = base / name
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        records = generate(work / "landing", first, count, rides)
        home = work / "serve" / "dagster_home"
        env = {**os.environ, "CATALAKE_LANDING": str(work / "landing"), "CATALAKE_WAREHOUSE": str(work / "warehouse"),
               "CATALAKE_START_DATE": first.isoformat(), "PYSPARK_PYTHON": sys.executable}
        process, port, env = serve(work, env)
        try:
            days = [(first + dt.timedelta(days=n)).isoformat() for n in range(count)]
            catalog = catalog_run(port)
            seconds, status = backfill(port, days)
            pg = {"DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_USERNAME": "catalake",
                  "DAGSTER_PG_PASSWORD": "catalake", "DAGSTER_PG_DB": "dagster",
                  "DAGSTER_PG_PORT": env["CATALAKE_PG_PORT"], "DAGSTER_COMPUTE_LOGS": str(home / "compute_logs")}
            runs = runs_by_job({**env, **pg})
        finally:
            stop(process, env)
        results[name] = seconds
        print(json.dumps({"case": name, "days": count, "rides_a_day": rides, "records": records, "catalog": catalog,
                          "status": status,
                          "seconds": seconds, "runs": runs}), flush=True)
    print(json.dumps({"range_over_one_day": round(results["range"] / results["one_day"], 2)}))
    if not args.work:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
