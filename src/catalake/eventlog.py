"""Dagster's instance storages (SQLite, PostgreSQL), with event batches written in one transaction.

A partition run reports a materialization and an `expectations` check evaluation for every table
it wrote: thousands of events at the end of one step. Dagster stores each event on its own: on
SQLite a new engine, connection and commit for the run's shard, then again for the index shard;
on PostgreSQL a commit per statement (16-22 ms a table here, benchmarks/events.py), and its
`store_event_batch` is that same loop (PostgreSQL's batches only one asset's materializations).
Inside `event_batch(instance)`, the events a thread logs are held and then stored together:
every event still goes through Dagster's own `store_event` (same rows, same asset and check
indexes), but all of them share one open transaction per database. Events of other threads are
not held, and an event of another kind (a log line, a step event) first stores what is held, so
the event log keeps its order. A batch that fails is stored again one event at a time, as
Dagster's own batched store does, and says so in a warning (`catalake.eventlog`); `together` and
`fallbacks` count the events stored each way, so that a test sees batches are still stored together
with the Dagster version installed (this module reaches into Dagster's storage classes,
Dagster's private API: the README names the versions it is tested with).

The instance uses them through `storage: custom` (this module's `CatalakeSqliteStorage`, written
into a new DAGSTER_HOME by instance.py; `CatalakePostgresStorage` in deploy/dagster.yaml); any
other storage (the ephemeral instance, one's own) is used as it is, one event at a time.
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack, contextmanager, nullcontext
from typing import Iterator, Sequence

from dagster import EventLogEntry
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (INDEX_SHARD_NAME, SQLITE_BUSY_TIMEOUT_SECONDS,
                                                                     SqliteEventLogStorage)
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from dagster_postgres import DagsterPostgresStorage, PostgresEventLogStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

BATCHED = ASSET_EVENTS | ASSET_CHECK_EVENTS
CHUNK = 2000  # events per transaction: other processes wait for the index meanwhile
log = logging.getLogger("catalake.eventlog")


class EventBatches:
    """Batches for a SQL event log storage (mixed in before it): `batch()` holds the thread's
    asset and check events; `store_event_batch` stores events with every connection the
    storage asks for taken from `_open_shared` (one transaction per database)."""

    def __init__(self, *args, **kwargs):
        # set before the storage's own __init__, which may already connect
        self._batches = threading.local()  # per thread: .held, .shared, .checks
        self.together = self.fallbacks = 0  # events stored in one transaction, and one by one
        super().__init__(*args, **kwargs)

    def _batch_state(self) -> threading.local:
        return self._batches

    @contextmanager
    def batch(self) -> Iterator[None]:
        state = self._batch_state()
        if getattr(state, "held", None) is not None:
            yield  # nested: the outer batch stores them
            return
        state.held = []
        try:
            yield
        finally:
            held, state.held = state.held, None
            self.store_event_batch(held)

    def store_event(self, event: EventLogEntry) -> None:
        state = self._batch_state()
        held = getattr(state, "held", None)
        if held is not None:
            if event.is_dagster_event and event.dagster_event_type in BATCHED:
                held.append(event)
                return
            state.held = []
            self.store_event_batch(held)
        super().store_event(event)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        for start in range(0, len(events), CHUNK):
            chunk = events[start:start + CHUNK]
            try:
                self._store_together(chunk)
                self.together += len(chunk)
            except Exception as exc:  # noqa: BLE001 - as Dagster's own batched store: store them one by one
                log.warning("catalake: %d events could not be stored in one transaction (%s: %s); storing them one "
                            "at a time, as Dagster does (slower: a Dagster upgrade may have changed its storage)",
                            len(chunk), type(exc).__name__, exc)
                self.fallbacks += len(chunk)
                for event in chunk:
                    super().store_event(event)

    def _store_together(self, events: Sequence[EventLogEntry]) -> None:
        if not events:
            return
        state = self._batch_state()
        with ExitStack() as stack:
            state.shared = self._open_shared(stack, events)
            try:
                for event in events:
                    super().store_event(event)
            finally:
                state.shared = state.checks = None

    def _shared(self, key: str):
        shared = getattr(self._batch_state(), "shared", None)
        return shared.get(key) if shared else None

    @property
    def supports_asset_checks(self):
        # Dagster asks the database's schema for every check event; within a batch the answer
        # cannot change
        state = self._batch_state()
        if not getattr(state, "shared", None):
            return super().supports_asset_checks
        if getattr(state, "checks", None) is None:
            state.checks = super().supports_asset_checks
        return state.checks


CHECK_STATE_KEY = "catalake/asset_check_state/"  # + the check's key: its checkpoint in the instance's kvs
SETTLED_SECONDS = 3600.0


class CheckStateCheckpoints:
    """Each partitioned check's per-partition status kept in the instance, as Dagster keeps an
    asset's (`asset_keys.cached_status_data`). Dagster OSS stores none (`get_checkpointed_asset_
    check_state` returns an empty state), so every row of the asset catalog rebuilt its
    `expectations` check's status from every execution of the year: 0.27 s a check in Python at
    365 days, the catalog 5.8 s a year in (benchmarks/RESULTS.md, session 28). The state read is
    Dagster's own (`bulk_update_asset_check_state` from the checkpoint on); what is kept is that
    state marked as of a storage id at least SETTLED_SECONDS old: a transaction still writing
    events (a batch) may hold lower ids than the newest one visible, and an update applies the
    latest record of each partition changed after the mark, so applying one twice is harmless."""

    settled_seconds = SETTLED_SECONDS

    def get_checkpointed_asset_check_state(self, keys):
        from dagster._core.storage.asset_check_state import AssetCheckState

        stored = self._instance.run_storage.get_cursor_values({CHECK_STATE_KEY + k.to_user_string() for k in keys})
        states = {}
        for key in keys:
            raw = stored.get(CHECK_STATE_KEY + key.to_user_string())
            try:
                states[key] = loaded_check_state(raw) if raw else AssetCheckState.empty()
            except Exception:  # noqa: BLE001 - written by another Dagster version: rebuilt from the executions
                states[key] = AssetCheckState.empty()
        return states

    def get_asset_check_state(self, keys):
        from dagster._core.storage.asset_check_state import AssetCheckState, bulk_update_asset_check_state

        kept = self.get_checkpointed_asset_check_state([key for key, _ in keys])
        # a partitions definition changed since (another start date): rebuilt
        initial = {key: kept[key] if kept[key].compatible_with(partitions) else AssetCheckState.empty()
                   for key, partitions in keys}
        states = bulk_update_asset_check_state(self._instance, keys, initial_states=initial)
        mark = self._settled_storage_id()
        changed = {}
        for key, state in states.items():
            settled = min(state.latest_storage_id, mark)
            if settled > initial[key].latest_storage_id:
                changed[CHECK_STATE_KEY + key.to_user_string()] = dumped_check_state(state, settled)
        if changed:
            self._instance.run_storage.set_cursor_values(changed)
        return states

    def _settled_storage_id(self) -> int:
        """The newest event id at least `settled_seconds` old (0: none)."""
        import datetime as dt

        from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as table
        from sqlalchemy import select

        before = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=self.settled_seconds)
        query = select(table.c.id).where(table.c.timestamp < before).order_by(table.c.id.desc()).limit(1)
        with self.index_connection() as conn:
            found = conn.execute(query).scalar()
        return int(found or 0)


def dumped_check_state(state, latest_storage_id: int) -> str:
    """An AssetCheckState as of `latest_storage_id`, as JSON: Dagster's serdes cannot write the
    record itself (its subsets are a mapping keyed by an enum), so each subset is serialized on
    its own."""
    import json

    from dagster import serialize_value

    return json.dumps({"latest_storage_id": latest_storage_id,
                       "subsets": {status.value: serialize_value(subset) for status, subset in state.subsets.items()},
                       "in_progress_runs": {run: serialize_value(subset) for run, subset in state.in_progress_runs.items()}})


def loaded_check_state(raw: str):
    import json

    from dagster._core.asset_graph_view.serializable_entity_subset import SerializableEntitySubset
    from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionResolvedStatus
    from dagster._core.storage.asset_check_state import AssetCheckState
    from dagster import deserialize_value

    kept = json.loads(raw)
    return AssetCheckState(
        latest_storage_id=kept["latest_storage_id"],
        subsets={AssetCheckExecutionResolvedStatus(status): deserialize_value(subset, SerializableEntitySubset)
                 for status, subset in kept["subsets"].items()},
        in_progress_runs={run: deserialize_value(subset, SerializableEntitySubset)
                          for run, subset in kept["in_progress_runs"].items()})


class BatchingSqliteEventLogStorage(CheckStateCheckpoints, EventBatches, SqliteEventLogStorage):
    """Dagster's SQLite event log (a database per run, one index database) with batches."""

    def _open_shared(self, stack: ExitStack, events: Sequence[EventLogEntry]) -> dict:
        shards = sorted({e.run_id for e in events}) + [INDEX_SHARD_NAME]
        return {shard: stack.enter_context(self._transaction(shard)) for shard in shards}

    @contextmanager
    def _transaction(self, shard: str):
        """A connection to one shard with a transaction begun (committed on success), opened as
        `_connect` does but not holding its lock while the batch runs (`_connect` takes it for
        every statement of `store_event`)."""
        engine = create_engine(self.conn_string_for_shard(shard), poolclass=NullPool,
                               connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
        try:
            with self._db_lock:
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn
        finally:
            engine.dispose()

    @contextmanager
    def _connect(self, shard: str):
        conn = self._shared(shard)
        if conn is not None:
            yield conn
            return
        with super()._connect(shard) as conn:
            yield conn


class CatalakeSqliteStorage(DagsterSqliteStorage):
    """Dagster's default SQLite storage (same folders and files under `base_dir`), with the
    batching event log above."""

    def __init__(self, base_dir: str, inst_data=None):
        super().__init__(base_dir, inst_data=inst_data)
        self._event_log_storage = BatchingSqliteEventLogStorage(_event_logs_directory(base_dir))

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)


class BatchingPostgresEventLogStorage(CheckStateCheckpoints, EventBatches, PostgresEventLogStorage):
    """dagster-postgres' event log (each statement its own commit) with batches: a batch is one
    transaction on one connection."""

    def _open_shared(self, stack: ExitStack, events: Sequence[EventLogEntry]) -> dict:
        conn = stack.enter_context(self._engine.connect().execution_options(isolation_level="READ COMMITTED"))
        stack.enter_context(conn.begin())
        return {"": conn}

    def _connect(self):
        conn = self._shared("")
        return nullcontext(conn) if conn is not None else super()._connect()


class CatalakePostgresStorage(DagsterPostgresStorage):
    """dagster-postgres' storage (same tables and configuration), with the batching event log
    above."""

    def __init__(self, postgres_url: str, should_autocreate_tables: bool = True, inst_data=None, token_provider=None):
        super().__init__(postgres_url, should_autocreate_tables, inst_data=inst_data, token_provider=token_provider)
        self._event_log_storage = BatchingPostgresEventLogStorage(postgres_url, should_autocreate_tables,
                                                                  token_provider=token_provider)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, postgres_url=pg_url_from_config(config_value),
                   should_autocreate_tables=config_value.get("should_autocreate_tables", True),
                   token_provider=get_token_provider_from_config(config_value))


def event_batch(instance):
    """Hold the asset and check events this thread logs until the block ends, then store them
    together (a no-op context on storages without batches)."""
    storage = instance.event_log_storage
    return storage.batch() if isinstance(storage, EventBatches) else nullcontext()
