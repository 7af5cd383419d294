"""Run records: now part of crash recovery (recovery.py), which partition runs and replays share.
The names stay importable from here."""

from .recovery import RUNS_DIR, alive, crashed, forget, recorded

__all__ = ["RUNS_DIR", "alive", "crashed", "forget", "recorded"]
