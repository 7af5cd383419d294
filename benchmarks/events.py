"""What reporting N tables costs in Dagster (issue 33): per table, one materialization and one
`expectations` check evaluation logged from one multi-asset step, as the partition run does.

    python benchmarks/events.py [--tables 1000 5000] [--postgres]

For each N, in a fresh DAGSTER_HOME each: Dagster's default SQLite storage (events stored one by
one), catalake's instance configuration (src/catalake/dagster.yaml: the same SQLite files,
the step's events stored in one transaction per shard, eventlog.py), and with --postgres the same
two on a PostgreSQL started by deploy/postgres.sh (Dagster's `storage: postgres`, and the
production instance deploy/dagster.yaml), a fresh database each. Timed inside the step, from
the first event logged to the last stored. Prints one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


DAGSTER_POSTGRES = """storage:
  postgres:
    postgres_db:
      hostname: {env: DAGSTER_PG_HOST}
      port: {env: DAGSTER_PG_PORT}
      username: {env: DAGSTER_PG_USERNAME}
      password: {env: DAGSTER_PG_PASSWORD}
      db_name: {env: DAGSTER_PG_DB}
"""


def measure(tables: int, batched: bool, postgres: int | None = None) -> dict:
    from dagster import (AssetCheckEvaluation, AssetCheckSpec, AssetKey, AssetMaterialization, AssetSpec,
                         DagsterInstance, DailyPartitionsDefinition, MaterializeResult, materialize, multi_asset)

    from catalake.eventlog import event_batch
    from catalake.instance import ensure_config

    partitions = DailyPartitionsDefinition(start_date="2026-01-01")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks = [AssetCheckSpec("expectations", asset=f"t{i}", partitions_def=partitions) for i in range(tables)]
    seconds = {}

    @multi_asset(name="step", specs=[*(AssetSpec(f"t{i}", skippable=True) for i in range(tables)), AssetSpec("dl")],
                 partitions_def=partitions, can_subset=True, check_specs=checks)
    def step(context):
        start = time.perf_counter()
        with event_batch(context.instance):
            for i in range(tables):
                context.log_event(AssetMaterialization(asset_key=f"t{i}", partition=context.partition_key,
                                                       metadata={"dagster/partition_row_count": i, "path": "/x"}))
            for i in range(tables):
                context.log_event(AssetCheckEvaluation(asset_key=AssetKey(f"t{i}"), check_name="expectations",
                                                       passed=True, partition=context.partition_key,
                                                       metadata={"rows": i}))
        seconds["reporting"] = time.perf_counter() - start
        yield MaterializeResult(asset_key="dl")

    home = tempfile.mkdtemp(prefix="catalake-events-")
    try:
        if postgres is not None:
            database = f"bench_{tables}_{int(time.time())}"
            subprocess.run([str(PG_BIN[-1] / "createdb"), "-h", "127.0.0.1", "-p", str(postgres), "-U", "catalake", database],
                           check=True, **({"user": "postgres"} if os.getuid() == 0 else {}))
            if batched:
                shutil.copy(REPO / "deploy" / "dagster.yaml", Path(home) / "dagster.yaml")
            else:
                (Path(home) / "dagster.yaml").write_text(DAGSTER_POSTGRES)
            os.environ.update({"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(postgres),
                               "DAGSTER_PG_USERNAME": "catalake", "DAGSTER_PG_PASSWORD": "catalake",
                               "DAGSTER_PG_DB": database, "DAGSTER_COMPUTE_LOGS": str(Path(home) / "logs")})
        elif batched:
            ensure_config(home)
        os.environ["DAGSTER_HOME"] = home
        instance = DagsterInstance.get()
        materialize([step], selection=["dl"], partition_key="2026-01-02", instance=instance, raise_on_error=True)
        stored = sum(1 for i in range(tables) if instance.get_latest_materialization_event(AssetKey(f"t{i}")))
    finally:
        os.environ.pop("DAGSTER_HOME", None)
        shutil.rmtree(home, ignore_errors=True)
    storage = ("postgresql, " if postgres is not None else "sqlite, ") + (
        "catalake (batched)" if batched else "dagster default")
    return {"tables": tables, "storage": storage, "stored": stored,
            "seconds": round(seconds["reporting"], 2), "ms_per_table": round(1000 * seconds["reporting"] / tables, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--postgres", action="store_true", help="also the production instance on PostgreSQL")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="catalake-pg-") if args.postgres else None
    port = 5400 + os.getpid() % 500
    if folder:
        subprocess.run(["bash", str(REPO / "deploy" / "postgres.sh"), "start", folder, str(port)], check=True)
    try:
        for tables in args.tables:
            for batched in (False, True):
                print(json.dumps(measure(tables, batched)), flush=True)
            if folder:
                for batched in (False, True):
                    print(json.dumps(measure(tables, batched, port)), flush=True)
    finally:
        if folder:
            subprocess.run(["bash", str(REPO / "deploy" / "postgres.sh"), "stop", folder])
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
