"""Column statistics for the files of tables written before catalake recorded them (or by another
writer): each table's live files without statistics get them in one commit that adds each file
again with its statistics and `dataChange: false` (Databricks' `ANALYZE ... COMPUTE DELTA
STATISTICS`), read from the files' Parquet footers; the table's stats columns are recorded in its
properties first. No row changes: the commit names the same files, and a footer whose row count
is not the log's is refused."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

from ..warehouse.store import DeltaStore


@dataclass
class Analyzed:
    """One table's statistics pass: the files it gave statistics to, of the live files."""

    table: str
    files: int
    live_files: int
    version: int | None  # the commit that recorded them; None: nothing to record
    properties_set: bool  # the stats columns were recorded in the table's properties

    def as_json(self) -> dict:
        return asdict(self)


def analyze_warehouse(store: DeltaStore, names: Sequence[str],
                      progress: Callable[[str], None] = lambda message: None) -> list[Analyzed]:
    """Record the column statistics of every live file of `names` that has none (tables that do
    not exist are passed over)."""
    results = []
    with store.loaded_once():
        for name in names:
            if not store.exists(name):
                continue
            properties_set = store.update_stats_columns(name)
            missing, live = store.files_without_statistics(name), store.statistics_coverage(name)[1]
            version = store.add_statistics(name, missing)
            results.append(Analyzed(name, len(missing), live, version, properties_set))
            if missing:
                progress(f"{name}: column statistics recorded for {len(missing)} of {live} file(s) (version {version})")
    return results
