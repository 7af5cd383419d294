"""The Dagster instance of a `catalake run`.

With DAGSTER_HOME set, runs are recorded there (`DagsterInstance.get()`); without, in memory.
Creating the instance of a new DAGSTER_HOME creates its SQLite storages, and two processes that
do it at once race (`sqlite3.OperationalError: table ... already exists`): so creation is
serialized across processes by a lock file in DAGSTER_HOME, and an instance whose storage
another process (not taking the lock, e.g. `dagster dev`) was creating at that moment is asked
for again.

A DAGSTER_HOME without a dagster.yaml gets catalake's (`dagster.yaml` beside this module):
Dagster's default SQLite storage there, whose event log stores a step's event batches in one
transaction (eventlog.py). A dagster.yaml of the user's own is never touched.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

from catalake.platform.errors import NoInstance

LOCK_FILE = ".catalake-instance.lock"
DEFAULT_CONFIG = Path(__file__).with_name("dagster.yaml")
ATTEMPTS = 5


@contextlib.contextmanager
def _locked(home: str) -> Iterator[None]:
    """An exclusive lock on `home`'s lock file, for this process (released on exit, or when the
    process dies)."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): the retries below are the only guard
        yield
        return
    with open(os.path.join(home, LOCK_FILE), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _racing(exc: BaseException) -> bool:
    """Whether an error is another process creating the same storage at the same moment."""
    text = str(exc).lower()
    return "already exists" in text or "database is locked" in text


def ensure_config(home: str) -> bool:
    """Write catalake's instance configuration into `home` when it has none. True if written."""
    target = Path(home) / "dagster.yaml"
    if target.exists():
        return False
    partial = target.with_name(f".dagster.yaml.{os.getpid()}")
    partial.write_text(DEFAULT_CONFIG.read_text())
    partial.replace(target)  # another process reading it sees all of it or nothing
    return True



def dagster_instance():
    """The instance of DAGSTER_HOME when set (created there if new, safely against other
    processes doing the same), else an ephemeral one."""
    from dagster import DagsterInstance

    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return DagsterInstance.ephemeral()
    if not os.path.isdir(home):  # Dagster's own error is a traceback; a person needs the fix
        raise NoInstance(f"DAGSTER_HOME {home} is not a folder: create it (mkdir -p {home}) or unset DAGSTER_HOME "
                            "for a throwaway instance")
    with _locked(home):
        ensure_config(home)
        for attempt in range(ATTEMPTS):
            try:
                return DagsterInstance.get()
            except Exception as exc:
                if attempt + 1 == ATTEMPTS or not _racing(exc):
                    raise
                time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


CODE_LOCATION = "catalake"  # workspace.yaml's location_name
CODE_MODULE = "catalake.definitions"  # and its module


@contextlib.contextmanager
def runs_of_code_location(instance, module: str = CODE_MODULE, location: str = CODE_LOCATION) -> Iterator[None]:
    """Runs created in this process (`execute_in_process`) as if launched from the code location
    of workspace.yaml: they carry its origin, so the UI can re-execute them (a run without one
    has no code location to re-execute from). Dagster's `execute_in_process` takes no origin,
    hence the instance's `create_run_for_job` given it here."""
    import sys

    # Dagster's private API: no public way gives a run launched in this process the code location's
    # origin (submitting runs to the instance's queue instead would, issue 41)
    from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import (ManagedGrpcPythonEnvCodeLocationOrigin, RemoteJobOrigin,
                                             RemoteRepositoryOrigin)
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    origin = ManagedGrpcPythonEnvCodeLocationOrigin(
        LoadableTargetOrigin(executable_path=sys.executable, module_name=module, working_directory=os.getcwd()),
        location_name=location,
    )
    repository = RemoteRepositoryOrigin(origin, SINGLETON_REPOSITORY_NAME)
    create = instance.create_run_for_job

    def create_with_origin(job_def, **kwargs):
        kwargs.setdefault("remote_job_origin", RemoteJobOrigin(repository, job_def.name))
        return create(job_def, **kwargs)

    instance.create_run_for_job = create_with_origin
    try:
        yield
    finally:
        del instance.create_run_for_job
