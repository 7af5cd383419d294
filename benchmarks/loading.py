"""What loading the code location costs: the seconds Dagster's webserver, daemon and every run
worker spend importing `catalake.definitions`, and the files that loading leaves behind.

Each load is a new Python process that imports the code location with the settings of one
catalog (the demo's, or one of N generated definitions), as Dagster does. Cold: the first load of
a new warehouse; warm: the loads after it (the OS caches the packages' files either way), first
before any `catalake_job` run (no dbt manifest: no dbt asset), then after what that run keeps
for loads (the dbt project parsed, the landing's first day), with the dbt models. The process's
own interpreter start is measured apart and left out.

    .venv/bin/python benchmarks/loading.py --definitions 5000 --loads 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import catalog  # noqa: E402

LOAD = """
import time
clock = time.perf_counter()
import catalake.definitions as location
defs = location.defs
print(f"{time.perf_counter() - clock:.3f} {len(list(defs.resolve_all_asset_keys()))}")
"""


def files_below(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def load(environment: dict) -> tuple[float, int]:
    """(seconds to import the code location, assets it defines) in a new process."""
    out = subprocess.run([sys.executable, "-c", LOAD], env=environment, capture_output=True, text=True, check=True)
    seconds, assets = out.stdout.split()[-2:]
    return float(seconds), int(assets)


def keep_state(environment: dict) -> float:
    """What a `catalake_job` run keeps for loads, made as its steps make it: the dbt project
    prepared and parsed (defs/analytics/project.py), the landing's first day (defs/catalog/load_state.py).
    Returns the seconds it took (dbt's parse mostly)."""
    from catalake.defs.analytics.dbt_assets import dbt_project, ensure_manifest
    from catalake.defs.catalog.load_state import keep_first_day
    from catalake.defs.catalog.messages import catalog_at_load
    from catalake.defs.names import DEFAULT
    from catalake.platform.config import Settings
    from catalake.resources import Configured

    clock = time.perf_counter()
    configured = Configured.from_settings(Settings.from_env(environment))
    ensure_manifest(dbt_project(configured.warehouse, catalog_at_load(configured.catalog_source).tables))
    keep_first_day(configured, DEFAULT)
    return time.perf_counter() - clock


def measure(name: str, catalog_path: Path, landing: Path, work: Path, loads: int) -> dict:
    warehouse = work / f"warehouse-{name.replace(' ', '-')}"
    environment = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_IS_DEV_CLI"},
                   "CATALAKE_CATALOG": str(catalog_path), "CATALAKE_LANDING": str(landing),
                   "CATALAKE_WAREHOUSE": str(warehouse), "CATALAKE_START_DATE": "", "DAGSTER_HOME": str(work / "home")}
    (work / "home").mkdir(exist_ok=True)
    before = files_below(warehouse)
    times = []
    for _ in range(loads + 1):
        seconds, assets = load(environment)
        times.append(seconds)
    created = sorted(files_below(warehouse) - before)
    kept_s = keep_state(environment)
    kept = files_below(warehouse)
    with_state = []
    for _ in range(loads):
        seconds, analytics_assets = load(environment)
        with_state.append(seconds)
    created += sorted(files_below(warehouse) - kept)
    return {"catalog": name, "assets": assets, "cold_s": times[0], "warm_s": sorted(times[1:])[len(times[1:]) // 2],
            "warm_all_s": times[1:], "assets_with_analytics": analytics_assets, "state_s": round(kept_s, 2),
            "warm_analytics_s": sorted(with_state)[len(with_state) // 2], "warm_analytics_all_s": with_state,
            "files_created": len(created), "created": created[:8]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, nargs="+", default=[5000])
    parser.add_argument("--loads", type=int, default=3, help="warm loads after the cold one")
    args = parser.parse_args()
    from catalake.platform.config import DEMO_DIR

    work = Path(tempfile.mkdtemp(prefix="catalake-load-"))
    try:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        print(f"# interpreter start alone: {time.perf_counter() - start:.3f} s (not counted)")
        results = [measure("demo", DEMO_DIR / "catalog", DEMO_DIR / "landing", work, args.loads)]
        for n in args.definitions:
            folder = work / f"catalog-{n}"
            folder.mkdir()
            (folder / "bench.xreg.json").write_text(json.dumps(catalog(n)))
            (work / "landing").mkdir(exist_ok=True)
            results.append(measure(f"{n} definitions", folder, work / "landing", work, args.loads))
        print(f"# {platform.node()} {os.cpu_count()} cores, python {platform.python_version()}; "
              f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print("| catalog | assets | cold load (s) | warm load (s, median) | assets with the dbt models | warm load with "
              "them (s, median) | files written by loading |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            print(f"| {r['catalog']} | {r['assets']} | {r['cold_s']:.2f} | {r['warm_s']:.2f} | "
                  f"{r['assets_with_analytics']} | {r['warm_analytics_s']:.2f} | {r['files_created']} |")
        print(json.dumps(results, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
