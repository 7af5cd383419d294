"""Each table's freshness as Dagster users see it (issue 65; runs/cadence.py): the increment's
`freshness` check on `deadletter`, which fails naming every table whose lag passed its target,
staged ones included, with the lag of the most lagging tables (`lag_by_table`; the increment's
`deadletter` materialization says the same in brief), and an observation of each table past its target
(the stalest 20 an increment: `lag_seconds`, `committed_lag_seconds`, `target_seconds`), on the
table's own asset page (issue 73: not a materialization per table and increment).

One check for all the tables, not one per message asset: at 5,000 tables a check per asset is
one more Dagster event per table and increment (5 s more of an increment: with increments every
30 s, a record would wait 63 s instead of 58), and 5,000 more outputs of the classification's op
on every load of the code location (0.33 s; benchmarks/RESULTS.md, session 26)."""

import datetime as dt

from dagster import AssetCheckEvaluation, AssetCheckSeverity, AssetKey, MetadataValue

from catalake.display import markdown_table

from ..quality.checks import partitioned_check_spec

CHECK_NAME = "freshness"
SHOWN = 20  # the most lagging tables listed


def freshness_check_spec(key: AssetKey, partitions_def):
    return partitioned_check_spec(
        CHECK_NAME,
        asset=key,
        blocking=False,
        partitions_def=partitions_def,
        description=(
            "Every landed record is committed to its table within the table's freshness target "
            "(CATALAKE_FRESHNESS_SECONDS) of landing. Evaluated by every run of the day: a full run commits every "
            "table; an increment commits the tables that are due and stages the others.\n\n"
            "- `max_lag_seconds`: the oldest age among the records the run committed or holds staged.\n"
            "- `stale_tables`: the tables whose lag passed their target, listed in `lag_by_table`.\n"
            "- **Failed, WARN**: a table's lag passed its target. Each such message asset gets an observation with "
            "its own `lag_seconds` and `committed_lag_seconds`."),
    )


def table_freshness(result, name: str) -> dict:
    """A committed table's lag, for its materialization's metadata."""
    fresh = result.freshness.get(name)
    if fresh is None:
        return {}
    return {"lag_seconds": fresh.lag, "target_seconds": fresh.target,
            **({"committed_lag_seconds": fresh.committed_lag} if fresh.committed_lag is not None else {})}


def freshness_evaluation(result, key: AssetKey, day: dt.date, target=None) -> AssetCheckEvaluation:
    """The run's `freshness` check of the day, tied to its `deadletter` materialization (`target`)."""
    stale = sorted(name for name, f in result.freshness.items() if not f.fresh)
    return AssetCheckEvaluation(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=not stale,
        partition=day.isoformat(),
        target_materialization_data=target,
        severity=AssetCheckSeverity.WARN,
        description=(f"{len(stale)} table(s) past their freshness target: {', '.join(stale[:SHOWN])}"
                     + (", ..." if len(stale) > SHOWN else "")) if stale else None,
        metadata=freshness_metadata(result) or {"run_kind": result.kind, "max_lag_seconds": 0.0},
    )


def freshness_metadata(result, listed: bool = True) -> dict:
    """The run's freshness in brief: the largest lag, the tables committed and staged, the
    stale ones, and (`listed`) the most lagging tables."""
    from catalake.platform.warehouse.queries import analyst_name

    if not result.freshness:
        return {}
    brief = {
        "max_lag_seconds": max(max(f.lag, f.committed_lag or 0.0) for f in result.freshness.values()),
        "tables_committed": sum(1 for f in result.freshness.values() if f.due),
        "tables_staged": len(result.staged),
        "rows_staged": sum(result.staged.values()),
        "stale_tables": sum(1 for f in result.freshness.values() if not f.fresh),
    }
    if not listed:
        return brief
    worst = sorted(result.freshness.items(), key=lambda kv: -max(kv[1].lag, kv[1].committed_lag or 0.0))
    return {**brief, "lag_by_table": MetadataValue.md(markdown_table(
        ["table", "lag s", "committed lag s", "target s", "staged rows", "committed"],
        [[analyst_name(name), f.lag, "" if f.committed_lag is None else f.committed_lag, f.target, f.staged_rows,
          f.due or "staged"] for name, f in worst[:SHOWN]]))}
