"""What a long `catalake run` shows on stderr (cli/progress.py): plain lines, a line a step, where
stderr is a file or a pipe; a progress display on a terminal (a real pseudo-terminal here)."""

import datetime as dt
import io
import os
import pty
import re

from catalake.cli.progress import Progress

DAYS = [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in range(100)]
RANGES = [DAYS[:92], DAYS[92:]]


def test_plain_lines_say_the_range_the_step_and_how_far_along():
    stream = io.StringIO()
    with Progress(RANGES, stream) as progress:
        for index in range(len(RANGES)):
            progress.step(index, "classifying")
            progress.done(index)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1/2] 2026-01-01 to 2026-04-02: classifying"
    assert lines[1].startswith("[1/2] 2026-01-01 to 2026-04-02: done; 92 of 100 days in ")
    assert lines[2] == "[2/2] 2026-04-03 to 2026-04-10: classifying"
    assert lines[3].startswith("[2/2] 2026-04-03 to 2026-04-10: done; 100 of 100 days in ") and "to go" not in lines[3]


def test_a_terminal_gets_a_progress_display_and_a_last_line():
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        with Progress(RANGES, terminal) as progress:
            progress.step(0, "dbt build and data docs")
            progress.done(0)
            progress.step(1, "classifying")
            progress.done(1)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    text = shown.decode(errors="replace")
    assert "dbt build and data docs" in text and "days" in text  # the display, drawn on the terminal
    assert re.search(r"100 of 100 days in \d+ s$", text.rstrip().splitlines()[-1])  # after the display is cleared
