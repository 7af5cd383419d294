"""A command's exit code says what happened: each command that reads the warehouse, run many
times in a row in fresh processes, exits with its intended code every time (a native library's
thread outliving the interpreter once aborted `catalake drift` at exit, 134, one run in twenty)."""

import os
import subprocess
import sys
from collections import Counter

import pytest

from support.paths import DEMO_CATALOG

pytestmark = pytest.mark.repeated
TIMES = 10


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    root = tmp_path_factory.mktemp("exits")
    (root / "home").mkdir()
    env = {**os.environ, "CATALAKE_WAREHOUSE": str(root / "warehouse"), "DAGSTER_HOME": str(root / "home"),
           "CATALAKE_ENGINE": "local"}
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", "2026-11-20", "--no-analytics"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return env


@pytest.mark.parametrize("command, intended", [
    (["drift", "--date", "2026-11-20"], 0),
    (["sql", "SELECT reason, count(*) FROM deadletter GROUP BY reason"], 0),
    (["tables"], 0),
    (["maintain", "--vacuum", "--dry-run", "--json"], 0),
    (["catalog", "show", str(DEMO_CATALOG)], 0),
    (["sql", "SELEC 1"], 2),
])
def test_a_command_exits_with_its_code_every_time(environment, command, intended):
    codes = Counter()
    for _ in range(TIMES):
        out = subprocess.run([sys.executable, "-m", "catalake.cli", *command], env=environment, capture_output=True,
                             text=True, timeout=300)
        codes[out.returncode] += 1
        assert "terminate called" not in out.stderr, out.stderr
    assert codes == {intended: TIMES}
