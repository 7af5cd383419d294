"""The instance storage catalake writes into a new DAGSTER_HOME: a step's materializations and
check results stored in one batch are stored as Dagster stores them one by one (same asset
records, partitions, check executions, event order), in a real SQLite instance."""

import os
import warnings

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckSpec,
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    DagsterEventType,
    DagsterInstance,
    DailyPartitionsDefinition,
    MaterializeResult,
    materialize,
    multi_asset,
)

from catalake.eventlog import BatchingSqliteEventLogStorage, event_batch
from catalake.instance import DEFAULT_CONFIG, ensure_config

TABLES = 40
DAY = "2026-01-02"
PARTITIONS = DailyPartitionsDefinition(start_date="2026-01-01")


def _step(batched: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # partitioned check specs are a Dagster preview
        checks = [AssetCheckSpec("expectations", asset=f"t{i}", partitions_def=PARTITIONS) for i in range(TABLES)]

    @multi_asset(name="step", specs=[*(AssetSpec(f"t{i}", skippable=True) for i in range(TABLES)), AssetSpec("dl")],
                 partitions_def=PARTITIONS, can_subset=True, check_specs=checks)
    def step(context):
        batch = event_batch(context.instance) if batched else None
        if batch:
            batch.__enter__()
        for i in range(TABLES):
            context.log_event(AssetMaterialization(asset_key=f"t{i}", partition=context.partition_key,
                                                   metadata={"rows": i}))
            if i == TABLES // 2:
                context.log.info("half way")  # another kind of event: what is held is stored first
        for i in range(TABLES):
            context.log_event(AssetCheckEvaluation(asset_key=AssetKey(f"t{i}"), check_name="expectations",
                                                   passed=i % 3 != 0, partition=context.partition_key,
                                                   metadata={"rows": i}))
        if batch:
            batch.__exit__(None, None, None)
        yield MaterializeResult(asset_key="dl")

    return step


def _run(home, batched: bool):
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        instance = DagsterInstance.get()
        result = materialize([_step(batched)], selection=["dl"], partition_key=DAY, instance=instance)
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


def test_a_new_dagster_home_gets_the_batching_storage_and_a_users_own_config_is_kept(tmp_path):
    assert ensure_config(str(tmp_path)) is True
    assert (tmp_path / "dagster.yaml").read_text() == DEFAULT_CONFIG.read_text()
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert ensure_config(str(tmp_path)) is False
    assert (tmp_path / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


def test_a_batch_is_stored_as_dagster_stores_each_event(tmp_path):
    plain_home, batch_home = tmp_path / "plain", tmp_path / "batch"
    plain_home.mkdir()
    batch_home.mkdir()
    ensure_config(str(batch_home))
    plain, plain_run = _run(plain_home, batched=False)
    batched, batch_run = _run(batch_home, batched=True)
    assert not isinstance(plain.event_log_storage, BatchingSqliteEventLogStorage)
    assert isinstance(batched.event_log_storage, BatchingSqliteEventLogStorage)

    expected, got = _stored(plain, plain_run), _stored(batched, batch_run)
    assert got == expected
    tables, partitions, sequence = got
    assert partitions == {DAY}
    assert tables[3][2] == [("FAILED", DAY)] and tables[4][2] == [("SUCCEEDED", DAY)]
    # the log line stays between the materializations it was logged between
    assert sequence.index(("log", "half way")) == TABLES // 2 + 1


def test_a_second_batch_run_adds_to_the_same_records(tmp_path):
    ensure_config(str(tmp_path))
    _run(tmp_path, batched=True)
    instance, run_id = _run(tmp_path, batched=True)
    records = instance.event_log_storage.get_asset_check_execution_history(
        AssetCheckKey(AssetKey("t1"), "expectations"), limit=10)
    assert [r.run_id for r in records][0] == run_id and len(records) == 2
    assert len(instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION).records) == TABLES + 1
