"""Whether the process that owns a run still lives: one notion for the runs of a day in the
Dagster instance (a dead one is marked failed and passed, so that no day waits for it forever)
and for the warehouse's run records (runs/recovery.py: a dead run's uncommitted files are
removed, a live one's are kept from a vacuum).

A run's owner is a process: its host, its pid and the process's identity (the kernel's boot id
and the process's start time, so that a pid reused after a crash or a reboot is not taken for
the dead run's). A live owner also beats a heartbeat, every quarter of the lease.

* On the owner's own host the process table is the truth: the process is there or it is gone,
  at once and whatever the heartbeat says.
* Anywhere else (another host, or an owner that never said who it is: killed before it could),
  the last sign of life (the heartbeat, else the moment the run was recorded) older than the
  lease means the owner is gone. A lease is a lease: a process that stalls for longer than it
  (a frozen VM, a network cut from the store) is taken for dead, and the lease must be sized
  above such stalls (CATALAKE_RUN_LEASE_SECONDS, default 120).
* An owner of another host that beats no heartbeat (recorded by an older release) cannot be
  judged: it is taken to live, as before.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

from ..config import run_lease_seconds as lease_seconds  # noqa: F401 - the lease this module judges by


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """When process `pid` started, in clock ticks since boot ("" where /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def process_identity(pid: int) -> str:
    """What tells process `pid` from a later process given the same pid: the boot and its start."""
    ticks = _start_ticks(pid)
    return f"{_boot_id()}/{ticks}" if ticks else ""


def alive(pid: int, identity: str = "") -> bool:
    """Whether process `pid` runs on this host (a zombie, killed and not yet reaped, does not),
    and is the process of that `identity` when one is given."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
    except (OSError, IndexError):
        return True  # no /proc (not Linux): it exists
    return not identity or process_identity(pid) in ("", identity)


@dataclass(frozen=True)
class Owner:
    """The process a run runs in."""

    host: str
    pid: int
    identity: str = ""

    @classmethod
    def current(cls) -> "Owner":
        return cls(socket.gethostname(), os.getpid(), process_identity(os.getpid()))

    @property
    def local(self) -> bool:
        """Whether its process would be in this machine's process table: same host name and, where
        it said, same boot (a machine of the same name, or this one before a reboot, is judged
        by its heartbeat)."""
        return self.host == socket.gethostname() and (not self.identity or self.identity.split("/")[0] == _boot_id())

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


class Verdict(NamedTuple):
    """Whether a run's owner lives, and why it is taken to be gone."""

    alive: bool
    reason: str = ""


def judge(owner: Owner | None, heartbeat: float | None, since: float | None, *, lease: float,
          now: float | None = None) -> Verdict:
    """Whether the owner of a run lives. `heartbeat`: its last beat (epoch seconds), if any;
    `since`: when the run was recorded, the sign of life of an owner that never beat."""
    now = time.time() if now is None else now
    if owner is not None and owner.local:
        if alive(owner.pid, owner.identity):
            return Verdict(True)
        return Verdict(False, f"its {owner.describe()} is gone (killed: SIGKILL, the OOM killer, a reboot)")
    last = heartbeat if heartbeat is not None else (since if owner is None else None)
    if last is None or now - last <= lease:
        return Verdict(True)
    who = owner.describe() if owner is not None else "its process, which never said which it was"
    return Verdict(False, f"{who}: no heartbeat for {now - last:.0f} s, past the lease of {lease:g} s "
                          f"(last sign of life {dt.datetime.fromtimestamp(last, dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC)")


@contextlib.contextmanager
def heartbeat(beat: Callable[[float], None], interval: float) -> Iterator[None]:
    """`beat(now)` every `interval` seconds in a thread while the block runs (the first beat is
    the caller's). A beat that fails is tried again at the next: a store that is briefly
    unreachable must not end a run; one unreachable for longer than the lease lets others take
    the owner for dead, which is what a lease is."""
    stop = threading.Event()

    def beating():
        while not stop.wait(interval):
            with contextlib.suppress(Exception):
                beat(time.time())

    thread = threading.Thread(target=beating, name="catalake-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
