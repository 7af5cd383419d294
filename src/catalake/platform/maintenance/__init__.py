"""Keeping the warehouse healthy over a year of days: compaction of table-partitions into files
of the target size (`compaction`), and vacuum of the files no version inside retention needs,
with the Delta logs checkpointed and trimmed (`vacuuming`), and column statistics for files
written without them (`analyzing`)."""

from .analyzing import Analyzed, analyze_warehouse
from .compaction import Compaction, compact_day
from .vacuuming import Vacuumed, vacuum_warehouse

__all__ = ["Analyzed", "Compaction", "analyze_warehouse", "Vacuumed", "compact_day", "vacuum_warehouse"]
