"""`catalake validate` and `catalake docs`: Great Expectations' checkpoint on stored partitions,
and where the expectation suites and the data docs are."""

from __future__ import annotations

import sys

from catalake.display import text_table
from catalake.platform.config import Settings

from . import usage
from .context import Context


def validate(args) -> int:
    """GX's own checkpoint on stored partitions: exit 1 when a stored row breaks an ERROR expectation."""
    from catalake.platform.quality.referee import Validator, validate_stored

    context = Context.from_env("catalake-validate")
    day = usage.date(args.date, "--date")
    outcomes = validate_stored(context.spark, context.store, context.tables, day, args.table or None,
                               Validator(context.settings.local))
    if args.table and not outcomes:
        print(f"no stored partition {day} for {', '.join(args.table)}", file=sys.stderr)
        return 1
    rows = []
    for name, outcome in sorted(outcomes.items()):
        failed = [o for o in outcome.outcomes if not o.success]
        rows.append([name, outcome.rows, len(outcome.outcomes), len(outcome.errors), len(outcome.warnings),
                     "; ".join(f"{o.id or o.type} ({o.unexpected_count})" for o in failed) or "-"])
    print(text_table(["table", "rows", "expectations", "failed ERROR", "failed WARN", "failed"], rows))
    return 1 if any(o.errors for o in outcomes.values()) else 0


def docs(args) -> int:
    """Where the expectation suites and the GX data docs of the configured warehouse are."""
    from catalake.platform.config import DOCS_INDEX, SUITES_DIR

    local = Settings.from_env().local
    index = local / DOCS_INDEX
    print(f"expectation suites: {local / SUITES_DIR}")
    if args.build:
        from catalake.platform.quality.referee import Validator

        Validator(local).build_docs()
    if not index.exists():
        print(f"data docs: not built yet (the analytics job's data_docs asset builds a day's pages after its "
              f"partition run; `catalake docs --build` builds them all) at {index}", file=sys.stderr)
        return 1
    print(f"data docs: {index}")
    print(f"open: {index.as_uri()}")
    return 0
