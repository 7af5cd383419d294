"""When an increment commits a table: each table's cadence (issue 65).

At thousands of tables most get a handful of records a minute, and a commit per table per
increment is what an increment costs (a log entry and its requests, a version to keep). So an
increment commits a table only when it is due:

* its staged rows reach the target file size (`size`), or
* its oldest landed record not yet committed would pass the table's freshness target before the
  next increment has committed (`freshness`): its age now, plus the interval until the next
  increment starts (the landing sensor's `CATALAKE_INCREMENT_SECONDS` and the launch of a run),
  plus what the last increment took.

In between its files stay staged: written into the table's folder, named by the day's ledger
(ledger.py), invisible to readers. A hot table commits every increment, a cold one when it is
due; a query never sees part of an increment of a table (each commit is one Delta version).

A record's landing time is its file's modification time as the increment listed it, or, for a
JSON lines file read on from where an earlier increment stopped, that earlier read's: the oldest
it can be, so a lag is never understated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..defaults import FRESHNESS_SECONDS, INCREMENT_SECONDS, TARGET_FILE_BYTES

LAUNCH_SECONDS = 10.0  # a sensor's run request until its step starts (the run's process, the code location)


@dataclass(frozen=True)
class Cadence:
    """Each table's freshness target in seconds (`freshness`, or the one `by_name` gives its
    message group, `<group>`, or its message, `<group>/<message>`), and what an increment waits
    on before the next one has committed: `interval` (the landing sensor's, plus a run's launch)
    and the last increment's own seconds."""

    freshness: float = FRESHNESS_SECONDS
    by_name: Mapping[str, float] = field(default_factory=dict)
    interval: float = INCREMENT_SECONDS + LAUNCH_SECONDS
    target_bytes: int = TARGET_FILE_BYTES
    stage: bool = True  # False: every table fed is committed by the increment (EVERY_INCREMENT)

    def target(self, group: str | None, message: str | None = None) -> float:
        """The freshness target of message `message` of group `group` (None: the dead letters)."""
        found = self.by_name.get(f"{group}/{message}", self.by_name.get(group)) if group is not None else None
        return float(self.freshness if found is None else found)

    def targets(self, tables) -> dict[str, float]:
        """Each message table's target by name (MessageTables); `target(None)` for any other."""
        return {t.name: self.target(t.message.group_id, t.message.message_id) for t in tables}

    def due(self, staged: list[dict], target: float, now: float, took: float) -> str | None:
        """Why a table whose not yet committed files are `staged` ({"size", "landed", ...}) is
        committed now, or None: it waits for a later increment."""
        if not staged:
            return None
        if not self.stage:
            return "increment"
        if sum(f["size"] for f in staged) >= self.target_bytes:
            return "size"
        oldest = min(f["landed"] for f in staged)
        if now - oldest + self.interval + took >= target:
            return "freshness"
        return None

    def due_at(self, staged: list[dict], target: float, took: float) -> float:
        """When a table's staged files come due for freshness (seconds since the epoch): the
        landing sensor asks for an increment then, should nothing land meanwhile."""
        return min(f["landed"] for f in staged) + target - self.interval - took


# every table committed by the increment that fed it (an increment run without a cadence: the
# engine's default, and what catalake did before cadences)
EVERY_INCREMENT = Cadence(stage=False)
