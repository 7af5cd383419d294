"""`catalake validate` and `catalake docs`: Great Expectations' checkpoint on stored partitions,
and where the expectation suites and the data docs are."""

from __future__ import annotations

import sys

from catalake.display import text_table

from . import usage
from .context import Context


def validate(args, context: Context) -> int:
    """GX's own checkpoint on a day's stored partitions, as a run of `validate_job` recorded in the
    Dagster instance (each table's result an `expectations` check evaluation): exit 1 when a
    stored row breaks an ERROR expectation."""
    from .launching import check_catalog, command_tags, failure, launcher

    day = usage.date(args.date, "--date")
    check_catalog(context)
    with launcher(context) as (runs, _):
        run = runs.run("validate_job", day.isoformat(), tags=command_tags("catalake validate"),
                       run_config={"ops": {"validate_stored_partition": {"config": {"tables": list(args.table or [])}}}})
    evaluations = [e.event_specific_data for e in run.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    if not run.success and not evaluations:
        print(f"{day}: validation run {run.run_id} failed: {failure(run)}", file=sys.stderr)
        return 1
    if args.table and not evaluations:
        print(f"no stored partition {day} for {', '.join(args.table)}", file=sys.stderr)
        return 1
    rows = []
    for evaluation in sorted(evaluations, key=lambda e: e.metadata["table"].value):
        m = evaluation.metadata
        failed = [o for o in m["details"].value if not o.get("success")]
        rows.append([m["table"].value, m["rows_stored"].value, m["expectations"].value, m["failed_error"].value,
                     m["failed_warn"].value,
                     "; ".join(f"{o.get('id') or o.get('type')} ({o.get('unexpected_count')})" for o in failed) or "-"])
    print(text_table(["table", "rows", "expectations", "failed ERROR", "failed WARN", "failed"], rows))
    print(f"run {run.run_id}: each table's result is its `expectations` check in the Dagster UI", file=sys.stderr)
    return 0 if run.success else 1


def docs(args, context: Context) -> int:
    """Where the expectation suites and the GX data docs of the configured warehouse are."""
    from catalake.platform.config import DOCS_INDEX, SUITES_DIR

    local = context.settings.local
    index = local / DOCS_INDEX
    print(f"expectation suites: {local / SUITES_DIR}")
    if args.build:
        from catalake.platform.quality.validator import Validator

        Validator(local).build_docs()
    if not index.exists():
        print(f"data docs: not built yet (the analytics job's data_docs asset builds a day's pages after its "
              f"partition run; `catalake docs --build` builds them all) at {index}", file=sys.stderr)
        return 1
    print(f"data docs: {index}")
    print(f"open: {index.as_uri()}")
    return 0
