"""The plan of a run: everything an executor needs, built once on the driver (`new_plan`) for a
full run, an increment or a replay, and pickled into the job."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..warehouse.message_tables import MessageTable


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs for one partition run (pickled into the Spark job)."""

    tables: tuple[MessageTable, ...]  # in catalog order: the matcher's definition index
    warehouse: str
    day: dt.date
    ingested_at: dt.datetime
    run: str  # names the run's files
    write: frozenset[str] | None = None  # table names to write (None: all, the dead-letter table too)
    strict: bool = False
    # the driver's storage settings (uris.storage_environment), never shown
    storage: dict = field(default_factory=dict, repr=False, compare=False, hash=False)
    landing: str = ""  # the landing root: rows name their file relative to it (`source_file`)
    batch: bool = True  # ordinary records decided in bulk (bulk.py); False: every record on its own


def new_plan(tables: Sequence[MessageTable], warehouse: str, day: dt.date, *, ingested_at: dt.datetime | None,
             write: Iterable[str] | None, strict: bool, storage: dict, landing: str, batch: bool = True) -> Plan:
    """The plan of a new run: a run id of its own, and `ingested_at` now (to the second) when not given."""
    return Plan(
        tables=tuple(tables),
        warehouse=warehouse,
        day=day,
        ingested_at=ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0),
        run=uuid.uuid4().hex[:12],
        write=frozenset(write) if write is not None else None,
        strict=strict,
        storage=storage,
        landing=landing,
        batch=batch,
    )
