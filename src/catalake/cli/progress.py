"""What a long `catalake run` shows a person while it works: which range of days and which step it
is in, how far along, and how long the rest should take; on a terminal a progress display (rich's,
which Dagster already installs), otherwise a plain line a step. Written to stderr: stdout keeps the
days' result lines (and `--json`).

Dagster's own event stream (DEBUG and INFO), its Beta warnings and dbt's log stay in the runs'
logs and the UI: the runs launched here log to the console at WARNING (`console_config`)."""

from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import contextmanager
from typing import Iterator

QUIET = "WARNING"


def console_config(level: str) -> dict:
    """The run config of a run whose console log shows `level` and above (the event log keeps all)."""
    return {"loggers": {"console": {"config": {"log_level": level}}}}


@contextmanager
def quiet_warnings() -> Iterator[None]:
    """Dagster's Beta and Preview warnings (parameters catalake uses on purpose, told at every load)."""
    from dagster import BetaWarning, PreviewWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        warnings.simplefilter("ignore", PreviewWarning)
        yield


class Progress:
    """The ranges of a run, each in steps: `step(range, what)` when one starts, `done(range)`."""

    def __init__(self, ranges: list[list], stream=None):
        self.ranges, self.stream = ranges, stream or sys.stderr
        self.days = sum(len(r) for r in ranges)
        self.started, self.finished_days = time.monotonic(), 0
        self._display = self._terminal = None
        if self.stream.isatty() and len(ranges) > 1:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Display, TextColumn, TimeElapsedColumn, \
                TimeRemainingColumn

            # the terminal itself: a run's step captures file descriptors 1 and 2 for its logs, and
            # what passes through that capture reaches the screen a line at a time
            self._terminal = os.fdopen(os.dup(self.stream.fileno()), "w", buffering=1)
            self._display = Display(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("days"),
                                    TimeElapsedColumn(), TimeRemainingColumn(), console=Console(file=self._terminal),
                                    transient=True, redirect_stdout=sys.stdout.isatty(), redirect_stderr=True)
            self._task = self._display.add_task("", total=self.days)

    def __enter__(self) -> "Progress":
        if self._display is not None:
            self._display.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._display is not None:
            self._display.stop()
            self._terminal.close()
            print(f"{self.finished_days} of {self.days} days in {time.monotonic() - self.started:.0f} s",
                  file=self.stream, flush=True)

    def _label(self, index: int) -> str:
        span = self.ranges[index]
        days = span[0].isoformat() if len(span) == 1 else f"{span[0]} to {span[-1]}"
        return f"[{index + 1}/{len(self.ranges)}] {days}"

    def step(self, index: int, what: str) -> None:
        text = f"{self._label(index)}: {what}"
        if self._display is not None:
            self._display.update(self._task, description=text, refresh=True)
        else:
            print(text, file=self.stream, flush=True)

    def done(self, index: int) -> None:
        self.finished_days += len(self.ranges[index])
        elapsed = time.monotonic() - self.started
        left = elapsed / self.finished_days * (self.days - self.finished_days)
        if self._display is not None:
            self._display.update(self._task, completed=self.finished_days, refresh=True)
        elif len(self.ranges) > 1:
            print(f"{self._label(index)}: done; {self.finished_days} of {self.days} days in {elapsed:.0f} s"
                  + (f", about {left:.0f} s to go" if left else ""), file=self.stream, flush=True)
