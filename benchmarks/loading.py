"""What loading the code location costs: the seconds Dagster's webserver, daemon and every run
worker spend importing `catalake.definitions`, and the files that loading leaves behind.

Each load is a new Python process that imports the code location with the settings of one
catalog (the demo's, or one of N generated definitions), as Dagster does. Cold: the first load of
a new warehouse; warm: the loads after it (the OS caches the packages' files either way). The
process's own interpreter start is measured apart and left out.

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


def measure(name: str, catalog_path: Path, landing: Path, work: Path, loads: int) -> dict:
    warehouse = work / f"warehouse-{name}"
    environment = {**os.environ, "CATALAKE_CATALOG": str(catalog_path), "CATALAKE_LANDING": str(landing),
                   "CATALAKE_WAREHOUSE": str(warehouse), "CATALAKE_START_DATE": "", "DAGSTER_HOME": str(work / "home")}
    (work / "home").mkdir(exist_ok=True)
    before = files_below(warehouse)
    times = []
    assets = 0
    for _ in range(loads + 1):
        seconds, assets = load(environment)
        times.append(seconds)
    created = sorted(files_below(warehouse) - before)
    return {"catalog": name, "assets": assets, "cold_s": times[0], "warm_s": sorted(times[1:])[len(times[1:]) // 2],
            "warm_all_s": times[1:], "files_created": len(created), "created": created[:8]}


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
        print("| catalog | assets | cold load (s) | warm load (s, median) | files written by loading |")
        print("|---|---|---|---|---|")
        for r in results:
            print(f"| {r['catalog']} | {r['assets']} | {r['cold_s']:.2f} | {r['warm_s']:.2f} | {r['files_created']} |")
        print(json.dumps(results, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
