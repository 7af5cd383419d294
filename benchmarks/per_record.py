"""The classifier alone, without Spark: one task's pieces of the workload classified in this
process, round after round, by each path (for side-by-side runs of two checkouts too).

    PYTHONPATH=<checkout>/src python benchmarks/per_record.py [--records 1000000] [--definitions 10] [--rounds 5]
        [--patterns] [--path batch|record|both]

`--path`: the compiled path (`batch`: runs/bulk.py, each table's decoder from
schemas/compiled.py; the default), the per-record path (`record`: CATALAKE_COMPILED_PATH=false), or
both, one line each. `--patterns`: a pattern on every string of
the payload (the pattern engine's cost per record).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import DAY, write


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--definitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", default="/tmp/catalake-bench")
    parser.add_argument("--patterns", action="store_true", help="a pattern on every string of the payload")
    parser.add_argument("--path", choices=("batch", "record", "both"), default="batch")
    args = parser.parse_args()

    from catalake.platform.catalog import load_catalog
    from catalake.platform.landing.listing import list_day
    from catalake.platform.landing.planning import plan_tasks
    from catalake.platform.runs.classifier import Classifier
    from catalake.platform.runs.plan import Plan
    from catalake.platform.uris import Location
    from catalake.platform.warehouse.message_tables import message_tables

    catalog_dir, landing = write(Path(args.work), args.definitions, args.records, args.patterns)
    tables, _ = message_tables(load_catalog([catalog_dir]), [catalog_dir])
    day = dt.date.fromisoformat(DAY)
    pieces = plan_tasks(None, list_day(str(landing), day).files, 8)[0]  # one of 8 tasks
    for path in (("batch", "record") if args.path == "both" else (args.path,)):
        seconds = []
        for round_ in range(args.rounds):
            warehouse = tempfile.mkdtemp(prefix="catalake-per-record-")
            plan = Plan(tuple(tables), Location.of(warehouse), day, dt.datetime.now(dt.timezone.utc), f"r{round_}", compiled=path == "batch")
            classifier = Classifier(plan)
            start = time.perf_counter()
            result = classifier.run(f"{round_}.0", pieces)
            seconds.append(time.perf_counter() - start)
            shutil.rmtree(warehouse, ignore_errors=True)
        print(json.dumps({"path": path, "records": result.records, "decided_in_bulk": result.batched,
                          "seconds": [round(s, 2) for s in seconds], "median_s": round(statistics.median(seconds), 2),
                          "records_per_second": round(result.records / statistics.median(seconds))}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
