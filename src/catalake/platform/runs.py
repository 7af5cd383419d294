"""Partition runs in progress, so that a later run can clean up after a crashed one.

Executors write a run's Parquet files straight into its tables' partition folders, invisible to
readers until the driver commits them, and a failed run removes them. A run that is killed
(SIGKILL, a lost machine) removes nothing. So while it runs, a run is recorded in
`<warehouse>/_catalake/runs/<run>.json` (host, driver pid, day); the next run of the same day
finds the records whose process is gone and removes those runs' uncommitted files. A record of
another host is left alone: whether its process still lives cannot be known from here, and a
live run's files must never be touched.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
from typing import Iterator

import pyarrow.fs as pafs

from .storage import filesystem_of

RUNS_DIR = "_catalake/runs"


def _folder(root: str) -> tuple[pafs.FileSystem, str]:
    filesystem, base = filesystem_of(root)
    return filesystem, f"{base}/{RUNS_DIR}"


@contextlib.contextmanager
def recorded(root: str, run: str, day: dt.date) -> Iterator[None]:
    """Record run `run` of `day` under the warehouse `root` while the block runs."""
    filesystem, folder = _folder(root)
    filesystem.create_dir(folder, recursive=True)
    path = f"{folder}/{run}.json"
    record = {"run": run, "day": day.isoformat(), "host": socket.gethostname(), "pid": os.getpid()}
    with filesystem.open_output_stream(path) as out:
        out.write(json.dumps(record).encode())
    try:
        yield
    finally:
        filesystem.delete_file(path)


def alive(pid: int) -> bool:
    """Whether process `pid` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def crashed(root: str, day: dt.date) -> list[str]:
    """Runs of `day` recorded by this host whose driver process no longer exists."""
    filesystem, folder = _folder(root)
    if filesystem.get_file_info(folder).type != pafs.FileType.Directory:
        return []
    found = []
    for info in filesystem.get_file_info(pafs.FileSelector(folder)):
        if not info.base_name.endswith(".json"):
            continue
        try:
            with filesystem.open_input_stream(info.path) as f:
                record = json.loads(f.read())
        except (OSError, ValueError):
            continue  # being written, or not ours
        if (record.get("day") == day.isoformat() and record.get("host") == socket.gethostname()
                and not alive(int(record.get("pid", 0)))):
            found.append(record["run"])
    return sorted(found)


def forget(root: str, run: str) -> None:
    """Drop the record of a crashed run once its files are removed."""
    filesystem, folder = _folder(root)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(f"{folder}/{run}.json")
