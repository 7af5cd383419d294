"""The instance storage catalake writes into a new DAGSTER_HOME: a step's materializations and
check results stored in one batch are stored as Dagster stores them one by one (same asset
records, partitions, check executions, event order), in a real SQLite instance."""

from dagster import AssetCheckKey, AssetKey, DagsterEventType

from catalake.eventlog import CHECK_STATE_KEY, BatchingSqliteEventLogStorage, loaded_check_state
from catalake.instance import DEFAULT_CONFIG, ensure_config
from support.eventlog_step import DAY, PARTITIONS, TABLES, _run, _stored


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

    # batches are stored together with this Dagster: every check and materialization together, none
    # stored one by one after a failed batch (a Dagster upgrade that breaks it fails here)
    storage = batched.event_log_storage
    assert (storage.together, storage.fallbacks) == (2 * TABLES, 0)
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


def test_a_batch_that_fails_is_stored_one_by_one_and_says_so(tmp_path, monkeypatch, caplog):
    """A batch whose transaction cannot be opened: every event is still stored (as Dagster stores
    them), and a warning names the fallback."""
    ensure_config(str(tmp_path))

    def broken(self, stack, events):
        raise RuntimeError("no shared transaction")

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "_open_shared", broken)
    with caplog.at_level("WARNING", logger="catalake.eventlog"):
        instance, run_id = _run(tmp_path, batched=True)
    storage = instance.event_log_storage
    assert (storage.together, storage.fallbacks) == (0, 2 * TABLES)
    assert any("could not be stored in one transaction (RuntimeError: no shared transaction)" in r.getMessage()
               for r in caplog.records)
    tables, partitions, _ = _stored(instance, run_id)
    assert partitions == {DAY} and len(tables) == TABLES


def _statuses(state) -> dict:
    return {status.value: sorted(subset.subset_value.get_partition_keys()) for status, subset in state.subsets.items()
            if not subset.is_empty}


def test_a_partitioned_checks_statuses_are_kept_and_read_on_from_there_as_dagster_builds_them(tmp_path):
    """The asset catalog reads each partitioned check's per-partition statuses; catalake keeps
    them in the instance (open-source Dagster rebuilds them from every execution, each time):
    what is read from the kept state on is what Dagster builds from nothing, before and after
    new executions, and nothing newer than the settled mark is kept."""
    from dagster._core.storage.asset_check_state import AssetCheckState, bulk_update_asset_check_state

    ensure_config(str(tmp_path))
    for day in ("2026-01-02", "2026-01-03", "2026-01-04"):
        instance, _ = _run(tmp_path, batched=True, day=day)
    storage = instance.event_log_storage
    failing, passing = AssetCheckKey(AssetKey("t3"), "expectations"), AssetCheckKey(AssetKey("t4"), "expectations")
    keys = [(failing, PARTITIONS), (passing, PARTITIONS)]

    def from_nothing():
        return bulk_update_asset_check_state(instance, keys, {key: AssetCheckState.empty() for key, _ in keys})

    def kept(key):
        raw = instance.run_storage.get_cursor_values({CHECK_STATE_KEY + key.to_user_string()}).get(
            CHECK_STATE_KEY + key.to_user_string())
        return loaded_check_state(raw) if raw else None

    # every event seconds old: none settled, nothing kept, the statuses still right
    states = storage.get_asset_check_state(keys)
    assert kept(failing) is None
    assert _statuses(states[failing]) == {"FAILED": ["2026-01-02", "2026-01-03", "2026-01-04"]}
    assert _statuses(states[passing]) == {"SUCCEEDED": ["2026-01-02", "2026-01-03", "2026-01-04"]}

    storage.settled_seconds = 0.0  # as an hour later
    states = storage.get_asset_check_state(keys)
    assert {key: _statuses(s) for key, s in states.items()} == {key: _statuses(s) for key, s in from_nothing().items()}
    assert _statuses(kept(failing)) == _statuses(states[failing])
    assert kept(failing).latest_storage_id == states[failing].latest_storage_id > 0

    # a new day: read on from the kept state, it equals Dagster's own build from nothing
    instance, _ = _run(tmp_path, batched=True, day="2026-01-05")
    storage = instance.event_log_storage
    storage.settled_seconds = 0.0
    assert kept(passing).latest_storage_id < max(e.storage_id for e in instance.fetch_materializations(
        AssetKey("t4"), limit=10).records)
    states = storage.get_asset_check_state(keys)
    assert _statuses(states[passing]) == {"SUCCEEDED": ["2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"]}
    assert {key: _statuses(s) for key, s in states.items()} == {key: _statuses(s) for key, s in from_nothing().items()}
    assert _statuses(kept(passing)) == _statuses(states[passing])
