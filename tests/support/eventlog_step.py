"""A step of many partitioned assets with their checks, run on the instance of a DAGSTER_HOME
(its events batched or one by one), and what the instance stored of it."""

from __future__ import annotations

import os
import warnings
from contextlib import nullcontext

from dagster import (AssetCheckEvaluation, AssetCheckKey, AssetCheckSpec, AssetKey, AssetMaterialization, AssetSpec,
                     DagsterEventType, DagsterInstance, DailyPartitionsDefinition, MaterializeResult, materialize,
                     multi_asset)

from catalake.defs.quality.checks import run_targets
from catalake.eventlog import event_batch

TABLES = 16  # many tables in one step (what the batching is for); more only makes the one-by-one runs slower
DAY = "2026-01-02"
PARTITIONS = DailyPartitionsDefinition(start_date="2026-01-01")


def _step(batched: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # partitioned check specs are a Dagster preview
        checks = [AssetCheckSpec("expectations", asset=f"t{i}", partitions_def=PARTITIONS) for i in range(TABLES)]

    @multi_asset(name="step", specs=[*(AssetSpec(f"t{i}", skippable=True) for i in range(TABLES)), AssetSpec("dl")],
                 partitions_def=PARTITIONS, can_subset=True, check_specs=checks)
    def step(context):
        # as report_days: the materializations in a batch, then the checks tied to them in another
        with event_batch(context.instance) if batched else nullcontext():
            for i in range(TABLES):
                context.log_event(AssetMaterialization(asset_key=f"t{i}", partition=context.partition_key,
                                                       metadata={"rows": i}))
                if i == TABLES // 2:
                    context.log.info("half way")  # another kind of event: what is held is stored first
        targets = run_targets(context.instance, context.run_id)
        with event_batch(context.instance) if batched else nullcontext():
            for i in range(TABLES):
                context.log_event(AssetCheckEvaluation(
                    asset_key=AssetKey(f"t{i}"), check_name="expectations", passed=i % 3 != 0,
                    partition=context.partition_key, metadata={"rows": i},
                    target_materialization_data=targets[(AssetKey(f"t{i}"), context.partition_key)]))
        yield MaterializeResult(asset_key="dl")

    return step


def _run(home, batched: bool, day: str = DAY):
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        instance = DagsterInstance.get()
        result = materialize([_step(batched)], selection=["dl"], partition_key=day, instance=instance)
        assert result.success
        return instance, result.run_id
    finally:
        del os.environ["DAGSTER_HOME"]


def _stored(instance: DagsterInstance, run_id: str):
    """What the UI reads: per table the latest materialization (partition, metadata) and check
    execution (status, partition), and the run's event sequence."""
    tables = {}
    for i in range(TABLES):
        key = AssetKey(f"t{i}")
        event = instance.get_latest_materialization_event(key)
        record = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(key, "expectations"), limit=5)
        tables[i] = (event.dagster_event.partition, event.asset_materialization.metadata["rows"].value,
                     [(r.status.value, r.partition) for r in record])
    partitions = instance.get_materialized_partitions(AssetKey("t7"))
    sequence = [(e.dagster_event_type.value if e.dagster_event else "log", e.user_message if not e.dagster_event else
                 (e.dagster_event.asset_key.to_user_string() if e.dagster_event.asset_key else ""))
                for e in instance.all_logs(run_id)
                if not e.dagster_event or e.dagster_event_type in (DagsterEventType.ASSET_MATERIALIZATION,
                                                                   DagsterEventType.ASSET_CHECK_EVALUATION)]
    return tables, partitions, sequence
