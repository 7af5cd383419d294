"""The plan of a run: everything an executor needs, built once on the driver (`new_plan`) for a
full run, an increment or a replay, and pickled into the job (its locations with the driver's
storage settings: uris.Location)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..uris import Location
from ..warehouse.message_tables import MessageTable


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs for one partition run (pickled into the Spark job)."""

    tables: tuple[MessageTable, ...]  # in catalog order: the matcher's definition index
    warehouse: Location
    day: dt.date
    ingested_at: dt.datetime
    run: str  # names the run's files
    write: frozenset[str] | None = None  # table names to write (None: all, the dead-letter table too)
    strict: bool = False
    # the landing root: files are read below it, and rows name their file relative to it
    # (`source_file`); None for a replay, which reads no landed file
    landing: Location | None = None
    compiled: bool = True  # ordinary records decided by their table's compiled decoder (bulk.py); False: one by one


def new_plan(tables: Sequence[MessageTable], warehouse: Location, day: dt.date, *, ingested_at: dt.datetime | None,
             write: Iterable[str] | None, strict: bool, landing: Location | None, compiled: bool = True) -> Plan:
    """The plan of a new run: a run id of its own, and `ingested_at` now (to the second) when not given."""
    return Plan(
        tables=tuple(tables),
        warehouse=warehouse,
        day=day,
        ingested_at=ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0),
        run=uuid.uuid4().hex[:12],
        write=frozenset(write) if write is not None else None,
        strict=strict,
        landing=landing,
        compiled=compiled,
    )
