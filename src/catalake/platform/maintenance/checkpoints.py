"""Checkpoints on a cadence of their own (issue 65): off every commit's path and off the
increments' runs.

No commit checkpoints a table's log (commit.py turns delta-rs' post-commit hooks off), and an
append at the tip (appends.py) never reads the log. A reader of a table, though, loads its log
from the last checkpoint on, so a table committed every minute needs one every so often. A
checkpoint is due once a table's tip in a recent day's ledger is `delta.checkpointInterval`
versions past its last checkpoint, as `_catalake/checkpoints.json` records it (the record is this
module's: a table not in it is taken as never checkpointed). The landing sensor asks for
`checkpoint_job` when any is due, a full run checkpoints the tables it brought due
(`checkpoint_due`), and `catalake maintain` checkpoints every table besides.

A checkpoint costs a load of the log twice (delta-rs 1.6 loads it again to write it), every
entry since the last checkpoint read twice in each: about 4 GETs per commit, whatever the
interval (docs/capacity.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from deltalake import DeltaTable

from .. import uris
from ..runs import ledger
from ..uris import Location
from ..warehouse.appends import CHECKPOINT_INTERVAL
from ..warehouse.store import DeltaStore

RECORD = "_catalake/checkpoints.json"


@dataclass(frozen=True)
class Checkpointed:
    table: str
    version: int  # the version checkpointed
    since: int  # versions since the one checkpointed before (as recorded)


def _record_path(root: Location) -> str:
    return f"{root.path}/{RECORD}"


def recorded(root: Location) -> dict[str, int]:
    """Each table's last checkpointed version, as this module recorded it."""
    with contextlib.suppress(FileNotFoundError):
        with root.filesystem.open_input_stream(_record_path(root)) as f:
            return json.loads(f.read())
    return {}


def due(root: Location, days: Sequence[dt.date]) -> dict[str, int]:
    """The tables whose tip in the ledger of one of `days` is at least their checkpoint interval
    past their last recorded checkpoint: {table: versions since}. One read of each day's ledger
    and of the record."""
    tips: dict[str, dict] = {}
    for day in days:
        for name, tip in (ledger.load(root, day) or {}).get("tips", {}).items():
            if name not in tips or tip["version"] > tips[name]["version"]:
                tips[name] = tip
    done = recorded(root)
    since = {name: tip["version"] - done.get(name, -1) for name, tip in tips.items()}
    return {name: n for name, n in since.items() if n >= tips[name].get("checkpoint_interval", CHECKPOINT_INTERVAL)}


def checkpoint_tables(store: DeltaStore, names: Sequence[str], progress=lambda message: None) -> list[Checkpointed]:
    """Each table checkpointed at its current version (in the store's commit threads), then the
    record saved: the tables' versions checkpointed."""
    before = recorded(store.location)

    def checkpoint(name: str) -> Checkpointed:
        table = DeltaTable(store.path(name), storage_options=store.options)
        table.create_checkpoint()
        return Checkpointed(name, table.version(), table.version() - before.get(name, -1))

    with ThreadPoolExecutor(max(1, min(store.commit_threads, len(names)))) as pool:
        done = list(pool.map(checkpoint, names))
    if done:
        _save(store.location, {**recorded(store.location), **{c.table: c.version for c in done}})
        progress(f"checkpointed {len(done)} table(s), {sum(c.since for c in done)} version(s) since their last")
    return done


def checkpoint_due(store: DeltaStore, days: Sequence[dt.date], progress=lambda message: None) -> list[Checkpointed]:
    """After a full run of `days`: the tables its commits brought to their interval checkpointed.
    Daily runs on a schedule, with no landing sensor to ask for `checkpoint_job`, would otherwise
    leave a table a log entry a day and no checkpoint: a year in, every reader (the next run's
    commit, dbt's sources, an analyst) replays 365 entries a table. Two small reads a run."""
    names = due(store.location, days)
    return checkpoint_tables(store, sorted(names), progress) if names else []


def _save(root: Location, record: dict[str, int]) -> None:
    uris.make_folders(root.filesystem, _record_path(root).rsplit("/", 1)[0])
    with root.filesystem.open_output_stream(_record_path(root)) as out:
        out.write(json.dumps(record, sort_keys=True).encode())
