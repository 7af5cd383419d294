"""The data docs of a day, a year in, at many definitions (issue 71): catalake's build against GX's.

    python benchmarks/datadocs.py [--tables 1000] [--days 30] [--work DIR]

Synthetic validation results in catalake's own format (datadocs.py), `--tables` a day for `--days`
days, stored as the classification stores them (with the day's index rows). Then, side by side,
whole builds of the last day's docs:
* catalake: `Validator.build_partition_docs([day])` (the `data_docs` asset): the day's pages, the
  day's page and the index, from the kept rows;
* gx: what the asset did before, GX's own `build_data_docs` of the day's results (its section
  builders list the store; its index builder reads every stored result);
each on a store of 1 day (`one_day`) and of `--days` days (`every_day`), the day's pages removed
before each build so both render the same pages. JSON lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import tempfile
import time
from pathlib import Path

from catalake.platform.config import VALIDATIONS
from catalake.platform.quality import docsindex
from catalake.platform.quality.datadocs import day_page, store_validation_result, validation_result_document
from catalake.platform.quality.evaluation import Counts
from catalake.platform.quality.validator import Validator


def store_days(local: Path, tables: int, days: list[str]) -> None:
    for day in days:
        stored = []
        for t in range(tables):
            table = f"bench_sensors__reading{t}"
            document = validation_result_document(f"messages/{table}", table, day, f"run-{day}", [],
                                                  Counts(evaluated=100, unexpected=int(t % 7 == 0)), 0)
            stored.append((store_validation_result(local, document), document))
        docsindex.record(local, day, stored)


def gx_build(validator: Validator, day: str) -> None:
    """The build before this change: GX's own, of the day's results, its index included."""
    from great_expectations.data_context.types.resource_identifiers import ValidationResultIdentifier

    keys = [k for k in validator.context.validation_results_store.list_keys()
            if isinstance(k, ValidationResultIdentifier) and k.run_id.run_name.startswith(f"{day} ")]
    validator.context.build_data_docs(resource_identifiers=set(keys))


def timed(local: Path, day: str, how: str) -> float:
    for path in (local / VALIDATIONS).rglob(f"*-{day}.json"):
        day_page(local, path).unlink(missing_ok=True)  # both render the day's pages
    validator = Validator(local)
    clock = time.perf_counter()
    if how == "catalake":
        validator.build_partition_docs([day])
    else:
        gx_build(validator, day)
    return round(time.perf_counter() - clock, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="catalake-datadocs-"))
    days = [(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(args.days)]
    for name, stored in (("one_day", days[:1]), ("every_day", days)):
        local = work / name
        shutil.rmtree(local, ignore_errors=True)
        clock = time.perf_counter()
        store_days(local, args.tables, stored)
        stored_seconds = round(time.perf_counter() - clock, 1)
        results = sum(1 for _ in (local / VALIDATIONS).rglob("*.json"))
        figures = {how: timed(local, stored[-1], how) for how in ("gx", "catalake")}
        print(json.dumps({"store": name, "tables": args.tables, "days": len(stored), "results": results,
                          "stored_in_seconds": stored_seconds, "seconds": figures}), flush=True)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
