"""`catalake drift` and `catalake replay`: a day's dead letters as proposed message definitions,
and the dead letters of days matched again against the current catalog."""

from __future__ import annotations

from pathlib import Path

from catalake.display import text_table
from catalake.platform.config import Settings

from . import usage
from .context import Context


def drift(args) -> int:
    """The day's unmatched records as proposed message definitions (an xRegistry document)."""
    import json

    from catalake.platform.runs.drift import candidates, deadletter_rows, markdown, proposals_document

    settings = Settings.from_env()
    day = usage.date(args.date, "--date")
    found = candidates(deadletter_rows(settings.warehouse, day))
    proposals = proposals_document(found, day)
    print(markdown(found, proposals))
    if args.out:
        Path(args.out).write_text(json.dumps(proposals, indent=2) + "\n")
        print(f"proposals: {args.out} (add it to the catalog, then `catalake replay --from {day}`)")
    return 0


def replay(args) -> int:
    """Re-match the dead letters of a range of days against the current catalog."""
    from catalake.platform.runs.replay import replay_partition

    context = Context.from_env("catalake-replay")
    days = usage.days(args)
    rows = []
    for day in days:
        result = replay_partition(context.spark, context.store, context.tables, day)
        moves = sorted(result.moved.items()) or [("nothing moved", 0)]
        rows += [[day.isoformat(), result.deadletters, move, n] for move, n in moves]
    print(text_table(["day", "dead letters", "moved (reason -> table)", "rows"], rows))
    return 0
