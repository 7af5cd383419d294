"""Dagster's SQLite instance storage, with event batches written in one transaction.

A partition run reports a materialization and an `expectations` check evaluation for every table
it wrote: thousands of events at the end of one step. Dagster's SQLite event log stores each
event on its own (a new engine, connection and commit for the run's shard, then again for the
index shard: 7-17 ms an event here), and its `store_event_batch` is that same loop. Inside
`event_batch(instance)`, the events a thread logs are held and then stored together: every event
still goes through Dagster's own `store_event` (same rows, same asset and check indexes), but all
of them share one open transaction per shard. Events of other threads are not held, and an event
of another kind (a log line, a step event) first stores what is held, so the event log keeps its
order.

The instance uses it through `deploy/dagster.yaml` (`storage: custom`, this module's
`CatalakeSqliteStorage`); any other storage (PostgreSQL, the ephemeral instance) is used as it
is, one event at a time.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack, contextmanager, nullcontext
from typing import Iterator, Sequence

from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

BATCHED = ASSET_EVENTS | ASSET_CHECK_EVENTS
CHUNK = 2000  # events per transaction: other processes wait for the index shard meanwhile


class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    """`SqliteEventLogStorage` whose `store_event_batch` uses one transaction per shard, and which
    holds a thread's asset and check events inside `batch()`."""

    def __init__(self, base_dir: str, inst_data=None):
        super().__init__(base_dir, inst_data=inst_data)
        self._local = threading.local()  # .held: events of an open batch; .shared: open connections

    @contextmanager
    def batch(self) -> Iterator[None]:
        if getattr(self._local, "held", None) is not None:
            yield  # nested: the outer batch stores them
            return
        self._local.held = []
        try:
            yield
        finally:
            held, self._local.held = self._local.held, None
            self.store_event_batch(held)

    def store_event(self, event: EventLogEntry) -> None:
        held = getattr(self._local, "held", None)
        if held is not None:
            if event.is_dagster_event and event.dagster_event_type in BATCHED:
                held.append(event)
                return
            self._local.held = []
            self.store_event_batch(held)
            self._local.held = held[:0]
        super().store_event(event)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        for start in range(0, len(events), CHUNK):
            chunk = events[start:start + CHUNK]
            try:
                self._store_together(chunk)
            except Exception:  # noqa: BLE001 - as Dagster's own batch path: store them one by one
                for event in chunk:
                    super().store_event(event)

    def _store_together(self, events: Sequence[EventLogEntry]) -> None:
        if not events:
            return
        shards = sorted({e.run_id for e in events}) + [INDEX_SHARD_NAME]
        with ExitStack() as stack:
            shared = {shard: stack.enter_context(self._transaction(shard)) for shard in shards}
            self._local.shared = shared
            try:
                for event in events:
                    super().store_event(event)
            finally:
                self._local.shared = self._local.checks = None

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

    @property
    def supports_asset_checks(self):
        # Dagster asks the index shard's schema (a new engine) for every check event; within a
        # batch the answer cannot change
        shared = getattr(self._local, "shared", None)
        if not shared:
            return super().supports_asset_checks
        if getattr(self._local, "checks", None) is None:
            self._local.checks = super().supports_asset_checks
        return self._local.checks

    @contextmanager
    def _connect(self, shard: str):
        shared = getattr(self._local, "shared", None)
        if shared and shard in shared:
            yield shared[shard]
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


def event_batch(instance):
    """Hold the asset and check events this thread logs until the block ends, then store them
    together (a no-op context on storages without batches)."""
    storage = instance.event_log_storage
    return storage.batch() if isinstance(storage, BatchingSqliteEventLogStorage) else nullcontext()
