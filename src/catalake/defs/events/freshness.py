"""Each table's freshness as Dagster users see it: a `freshness` check on every message asset,
evaluated by each increment for the tables it commits and for those whose staged rows passed
their target (a table staged in time is evaluated when it commits: one event per commit, not per
increment), and the increment's summary, every table it fed or holds staged (the dead letters
among them), on the `deadletter` materialization (issue 65; runs/cadence.py).

A table's lag is the age of its oldest landed record not yet committed; the check fails (WARN,
blocking nothing) when that lag, or the age at commit of the records the increment committed,
passed the table's target (CATALAKE_FRESHNESS_SECONDS)."""

import datetime as dt

from dagster import AssetCheckEvaluation, AssetCheckSeverity, AssetKey, MetadataValue

from catalake.display import markdown_table

from ..quality.checks import partitioned_check_spec

CHECK_NAME = "freshness"
SHOWN = 20  # the most lagging tables listed in the increment's metadata


def freshness_check_spec(key: AssetKey, partitions_def):
    return partitioned_check_spec(
        CHECK_NAME,
        asset=key,
        blocking=False,
        partitions_def=partitions_def,
        description=(
            "Every landed record of this table is committed within its freshness target "
            "(CATALAKE_FRESHNESS_SECONDS) of landing. Evaluated by each increment that commits the table, "
            "or holds rows of it staged past the target.\n\n"
            "- `lag_seconds`: the age of the oldest landed record not yet committed (0: none).\n"
            "- `committed_lag_seconds`: the oldest age among the records this increment committed.\n"
            "- **Failed, WARN**: either passed `target_seconds`."),
    )


def freshness_evaluations(result, key_of: dict, day: dt.date, targets: dict):
    """One `freshness` evaluation per message table the increment committed or holds staged past
    its target, tied to the materialization the run stored for it, if any."""
    partition = day.isoformat()
    for name, fresh in sorted(result.freshness.items()):
        key = key_of.get(name)
        if key is None or (fresh.due is None and fresh.fresh):
            continue
        late = [] if fresh.fresh else [
            f"{what} {seconds:.1f} s" for what, seconds in (("lag", fresh.lag), ("committed lag", fresh.committed_lag))
            if seconds is not None and seconds > fresh.target]
        yield AssetCheckEvaluation(
            asset_key=key,
            check_name=CHECK_NAME,
            passed=fresh.fresh,
            partition=partition,
            target_materialization_data=targets.get((key, partition)),
            severity=AssetCheckSeverity.WARN,
            description=f"{', '.join(late)} over the target of {fresh.target:g} s" if late else None,
            metadata={
                "lag_seconds": fresh.lag,
                **({"committed_lag_seconds": fresh.committed_lag} if fresh.committed_lag is not None else {}),
                "target_seconds": fresh.target,
                "staged_rows": fresh.staged_rows,
                "staged_files": fresh.staged_files,
                "committed": fresh.due or "no: staged for a later increment",
            },
        )


def freshness_metadata(result) -> dict:
    """The increment's freshness in brief, for the `deadletter` materialization: the largest lag,
    the tables committed and staged, and the most lagging tables."""
    from catalake.platform.warehouse.queries import analyst_name

    if not result.freshness:
        return {}
    worst = sorted(result.freshness.items(), key=lambda kv: -max(kv[1].lag, kv[1].committed_lag or 0.0))
    return {
        "max_lag_seconds": max(max(f.lag, f.committed_lag or 0.0) for f in result.freshness.values()),
        "tables_committed": sum(1 for f in result.freshness.values() if f.due),
        "tables_staged": len(result.staged),
        "rows_staged": sum(result.staged.values()),
        "stale_tables": sum(1 for f in result.freshness.values() if not f.fresh),
        "lag_by_table": MetadataValue.md(markdown_table(
            ["table", "lag s", "committed lag s", "target s", "staged rows", "committed"],
            [[analyst_name(name), f.lag, "" if f.committed_lag is None else f.committed_lag, f.target, f.staged_rows,
              f.due or "staged"] for name, f in worst[:SHOWN]])),
    }
