"""Fixtures and hooks every test shares.

The suite runs in parallel under pytest-xdist (`make test` and `make test-fast` pass `-n auto`;
`--dist loadgroup` is in pyproject's addopts), and serially with plain `pytest`. On a 2-core machine
the pure Python tier (`make test-fast`) takes under 2 minutes, the whole suite about 18. Each test process
(an xdist worker, or the one process of a serial run) is kept apart from the others:

- its own temporary folder: TMPDIR (what `tempfile`, the local task processes' spill folders and
  every subprocess use) is a folder of the process's own, removed at its end, so a worker's checks
  of what is left in the temporary folder never see another worker's (or another run's) files;
- no DAGSTER_HOME from the caller's environment (`make` exports ./.dagster_home): a test that needs
  an instance makes its own under tmp_path, so workers never share one SQLite instance;
- its own Spark session (`spark`, session-scoped: one JVM per worker), its own tmp_path folders
  (pytest's basetemp is per worker), free ports for the services it starts (support/services.py);
- tests that share a module-scoped fixture run on one worker (an automatic xdist_group per module),
  so the fixture is built once, as in a serial run; tests that cannot run at the same time share an
  explicit xdist_group (`pytest.mark.xdist_group`, which replaces the module's automatic one): the
  two that start a Spark Connect server on its default port 15002 (tests/deploy).
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from support.paths import SHARED_DATA

TMPDIR = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """This process's own TMPDIR, and no DAGSTER_HOME (see above)."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        factory.getbasetemp()  # tmp_path stays under the system's temporary folder, kept after the run
    root = tempfile.mkdtemp(prefix=f"catalake-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
    os.chmod(root, 0o1777)  # as /tmp: a server a test starts as another user (deploy/postgres.sh) reaches its folder
    config.stash[TMPDIR] = root
    os.environ["TMPDIR"] = root
    tempfile.tempdir = None  # tempfile reads TMPDIR again
    os.environ.pop("DAGSTER_HOME", None)


def pytest_unconfigure(config):
    root = config.stash.get(TMPDIR, None)
    if root:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public test data not found at {SHARED_DATA} (set CATALAKE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():
    """One local Spark session per test process (starting one costs ~8 s): under xdist, one per worker."""
    from catalake.platform.spark import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = build_session("local[2]", app_name="catalake-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture
def store(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    return DeltaStore(spark, tmp_path / "warehouse")


def _module_fixture_group(item) -> str | None:
    """The test's module, when it uses a fixture of module (or class, or package) scope defined in
    the test's own module: such tests run on one worker, which builds the fixture once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = item.nodeid.split("::")[0]
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            if definition.scope in ("module", "class", "package") and definition.baseid.split("::")[0] == module:
                return module
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects and before xdist reads the groups
def pytest_collection_modifyitems(items):
    """`spark`: tests that start a JVM (the session fixture, or a Spark process of their own).
    `make test-fast` runs the others: the pure Python tier."""
    for item in items:
        if "spark" in item.fixturenames or item.get_closest_marker("jvm"):
            item.add_marker(pytest.mark.spark)
        group = None if item.get_closest_marker("xdist_group") else _module_fixture_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
