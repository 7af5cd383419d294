import os
import sys
from pathlib import Path

import pytest

from support.paths import SHARED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"public test data not found at {SHARED_DATA} (set CATALAKE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (starting one costs ~8 s)."""
    from catalake.platform.spark import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = build_session("local[2]", app_name="catalake-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


@pytest.fixture
def store(spark, tmp_path):
    from catalake.platform.warehouse.store import DeltaStore

    return DeltaStore(spark, tmp_path / "warehouse")


def pytest_collection_modifyitems(items):
    """`spark`: tests that start a JVM (the session fixture, or a Spark process of their own).
    `make test-fast` runs the others: the pure Python tier, well under two minutes."""
    for item in items:
        if "spark" in item.fixturenames or item.get_closest_marker("jvm"):
            item.add_marker(pytest.mark.spark)
