"""What loading the code location costs: the seconds Dagster's webserver, daemon, every code
server start, every "Reload" and every run worker spend importing `catalake.definitions` and
building its repository, with the code location's state and without it.

Each load is a new Python process that imports Dagster (and dagster-dbt when the state has dbt
models), then the code location with the settings of one catalog (the demo's, or one of N
generated definitions), and builds Dagster's repository from it (every asset key resolved, as a
code server does). The imports of Dagster and dagster-dbt are timed on their own and left out
of the load; so is the interpreter's start.

For each catalog:
- without state: the catalog is read as the location loads (the first load of a new warehouse
  is "cold", the next ones "warm");
- with a state without the dbt models (`analytics` off when it was made);
- with a state with the dbt models (the dbt project prepared and parsed when it was made).
"Cold" with a state is the first load after the state was written; "warm" the median of the next.
Every load's files written under the work folder are counted (a load writes nothing).

    .venv/bin/python benchmarks/loading.py --definitions 5000 --loads 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import catalog  # noqa: E402

LOAD = """
import json, time
clock = time.perf_counter()
import dagster
dagster_s = time.perf_counter() - clock
clock = time.perf_counter()
if {dbt}:
    import dagster_dbt
dbt_s = time.perf_counter() - clock
clock = time.perf_counter()
import catalake.definitions as location
assets = len(list(location.defs.resolve_all_asset_keys()))
print(json.dumps({{"load_s": time.perf_counter() - clock, "dagster_s": dagster_s, "dagster_dbt_s": dbt_s,
                  "assets": assets}}))
"""


def files_below(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


def load(environment: dict, dbt: bool) -> dict:
    """One load in a new process: its seconds (imports apart) and the assets it defines."""
    out = subprocess.run([sys.executable, "-c", LOAD.format(dbt=dbt)], env=environment, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def write_state(environment: dict, analytics: bool) -> float:
    """The state as `dg utils refresh-defs-state` or a catalog run writes it; its seconds."""
    from catalake.defs.catalog.state import refresh, state_file
    from catalake.defs.names import DEFAULT
    from catalake.platform.config import Settings
    from catalake.resources import Configured

    clock = time.perf_counter()
    configured = Configured.from_settings(Settings.from_env(environment))
    refresh(state_file(configured, DEFAULT), configured, DEFAULT, analytics)
    return time.perf_counter() - clock


def series(environment: dict, work: Path, loads: int, dbt: bool) -> dict:
    """A cold load then `loads` warm ones: the load seconds, the imports, the files written."""
    before = files_below(work)
    runs = [load(environment, dbt) for _ in range(loads + 1)]
    written = sorted(set(files_below(work).items()) - set(before.items()))
    warm = [r["load_s"] for r in runs[1:]]
    return {"cold_s": round(runs[0]["load_s"], 3), "warm_s": round(statistics.median(warm), 3),
            "warm_all_s": [round(s, 3) for s in warm], "assets": runs[-1]["assets"],
            "dagster_import_s": round(statistics.median(r["dagster_s"] for r in runs), 3),
            "dagster_dbt_import_s": round(statistics.median(r["dagster_dbt_s"] for r in runs), 3),
            "files_written": len(written)}


def measure(name: str, catalog_path: Path, landing: Path, work: Path, loads: int) -> list[dict]:
    warehouse = work / f"warehouse-{name.replace(' ', '-')}"
    environment = {**{k: v for k, v in os.environ.items() if k != "DAGSTER_IS_DEV_CLI"},
                   "CATALAKE_CATALOG": str(catalog_path), "CATALAKE_LANDING": str(landing),
                   "CATALAKE_WAREHOUSE": str(warehouse), "CATALAKE_START_DATE": "", "DAGSTER_HOME": str(work / "home")}
    (work / "home").mkdir(exist_ok=True)
    rows = [{"catalog": name, "state": "none", **series(environment, work, loads, dbt=False)}]
    made = write_state(environment, analytics=False)
    rows.append({"catalog": name, "state": "without the dbt models", "state_s": round(made, 2),
                 **series(environment, work, loads, dbt=False)})
    made = write_state(environment, analytics=True)
    rows.append({"catalog": name, "state": "with the dbt models", "state_s": round(made, 2),
                 **series(environment, work, loads, dbt=True)})
    return rows


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
        rows = measure("demo", DEMO_DIR / "catalog", DEMO_DIR / "landing", work, args.loads)
        for n in args.definitions:
            folder = work / f"catalog-{n}"
            folder.mkdir()
            (folder / "bench.xreg.json").write_text(json.dumps(catalog(n)))
            (work / "landing").mkdir(exist_ok=True)
            rows += measure(f"{n} definitions", folder, work / "landing", work, args.loads)
        print(f"# {platform.node()} {os.cpu_count()} cores, python {platform.python_version()}; "
              f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
        print("| catalog | state | assets | cold load (s) | warm load (s, median) | importing Dagster (s) | "
              "importing dagster-dbt (s) | making the state (s) | files written by loading |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['catalog']} | {r['state']} | {r['assets']} | {r['cold_s']:.2f} | {r['warm_s']:.2f} | "
                  f"{r['dagster_import_s']:.2f} | {r['dagster_dbt_import_s']:.2f} | {r.get('state_s', '-')} | "
                  f"{r['files_written']} |")
        print(json.dumps(rows, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
