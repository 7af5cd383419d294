"""Vacuum: the files of the warehouse's tables that no version inside the retention period
references are deleted (partitions replaced by a re-run or a replay, files merged by a
compaction, files of failed or killed runs), and each table's Delta log is checkpointed and
trimmed to its log retention (`delta.logRetentionDuration`, Delta's 30 days).

Never deleted, whatever the retention: a file the table references now, a file of a run of any
day still in flight (recorded and alive: runs/recovery.py) or named by a replay's journal, and a
file written since the vacuum began. Within the retention period every version can still be
read (time travel)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from ..runs import recovery
from ..warehouse.store import DeltaStore


@dataclass
class Vacuumed:
    """One table's vacuum: the files deleted (or that would be, on a dry run) and their bytes."""

    table: str
    files: int
    bytes: int
    dry_run: bool
    paths: list[str]

    def as_json(self) -> dict:
        return asdict(self)


def vacuum_warehouse(store: DeltaStore, names: Sequence[str], *, retention_hours: float, dry_run: bool = False,
                     progress: Callable[[str], None] = lambda message: None) -> list[Vacuumed]:
    """Vacuum each table of `names` (tables that do not exist are passed over)."""
    protect = recovery.protected(store.location)  # first: a run starting later writes files newer than the vacuum
    results = []
    for name in names:
        if not store.exists(name):
            continue
        found = store.vacuum(name, retention_hours, protect, dry_run)
        if not dry_run:
            store.tidy_log(name)
        results.append(Vacuumed(name, len(found), sum(size for _, size in found), dry_run, [p for p, _ in found]))
        if found:
            progress(f"{name}: {'would delete' if dry_run else 'deleted'} {len(found)} file(s), "
                     f"{sum(size for _, size in found)} bytes")
    return results
