"""`catalake sql` naming one table, at 10 tables and at 5,000 (issue 72): a query costs the tables
it names, not the warehouse's.

    python benchmarks/sql_tables.py [--tables 10 5000] [--repeats 3] [--work DIR]

Warehouses of N small message tables (deltalake, a few rows each), then `catalake sql "SELECT
count(*) FROM bench__t00000"` as a whole process, `--repeats` times in turn; the medians. JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def warehouse(root: Path, tables: int) -> Path:
    import pyarrow as pa
    from deltalake import write_deltalake

    done = root / ".complete"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        rows = pa.table({"id": ["a", "b", "c"], "reading": [1.0, 2.0, 3.0]})
        for i in range(tables):
            write_deltalake(str(root / "messages" / f"bench__t{i:05d}"), rows)
        done.touch()
    return root


def timed(root: Path) -> float:
    env = {**os.environ, "CATALAKE_WAREHOUSE": str(root)}
    clock = time.perf_counter()
    out = subprocess.run([str(Path(sys.executable).parent / "catalake"), "sql", "SELECT count(*) FROM bench__t00000"],
                         env=env, capture_output=True, text=True, check=True)
    assert "3" in out.stdout, out.stdout
    return time.perf_counter() - clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, nargs="+", default=[10, 5000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="catalake-sql-"))
    roots = {n: warehouse(work / f"tables-{n}", n) for n in args.tables}
    seconds: dict[int, list[float]] = {n: [] for n in args.tables}
    for _ in range(args.repeats):
        for n, root in roots.items():
            seconds[n].append(round(timed(root), 2))
    for n in args.tables:
        print(json.dumps({"tables": n, "seconds": seconds[n], "median": statistics.median(seconds[n])}), flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
