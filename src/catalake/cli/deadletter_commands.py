"""`catalake drift` and `catalake replay`: a day's dead letters as proposed message definitions,
and the dead letters of days matched again against the current catalog."""

from __future__ import annotations

import sys
from pathlib import Path

from catalake.display import text_table

from . import usage
from .context import Context


def drift(args, context: Context) -> int:
    """The day's unmatched records as proposed message definitions (an xRegistry document)."""
    import json

    from catalake.platform.runs.drift import candidates, deadletter_rows, markdown, proposals_document

    day = usage.date(args.date, "--date")
    found = candidates(deadletter_rows(context.settings.warehouse, day))
    proposals = proposals_document(found, day)
    print(markdown(found, proposals))
    if args.out:
        Path(args.out).write_text(json.dumps(proposals, indent=2) + "\n")
        print(f"proposals: {args.out} (add it to the catalog, then `catalake replay --from {day}`)")
    return 0


def replay(args, context: Context) -> int:
    """Re-match the dead letters of a range of days against the current catalog: one run of
    `replay_job` a day, recorded in the Dagster instance (DAGSTER_HOME), each after the day's
    runs in progress."""
    from .launching import check_catalog, command_tags, failure, launcher

    days = usage.days(args)
    check_catalog(context)
    rows, status = [], 0
    with launcher(context) as (runs, _):
        for day in days:
            run = runs.run("replay_job", day.isoformat(), tags=command_tags("catalake replay"))
            if not run.success:
                print(f"{day}: replay run {run.run_id} failed: {failure(run)}", file=sys.stderr)
                status = 1
                continue
            observed = [e.event_specific_data.asset_observation for e in run.all_events
                        if e.event_type_value == "ASSET_OBSERVATION"]
            summary = observed[-1].metadata
            moves = sorted(summary["moved"].value.items()) or [("nothing moved", 0)]
            rows += [[day.isoformat(), summary["replayed_dead_letters"].value, move, n] for move, n in moves]
            print(f"{day}: replay run {run.run_id}", file=sys.stderr)
    print(text_table(["day", "dead letters", "moved (reason -> table)", "rows"], rows))
    return status
