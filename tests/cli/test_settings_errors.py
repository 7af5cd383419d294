"""Every `CATALAKE_*` setting with a value that cannot be used: one line naming the variable, exit
2, before anything runs (platform/config.py checks them all in `Settings.from_env`)."""

import dataclasses
import inspect
import os
import re
import subprocess
import sys

import pytest

from catalake.cli import main
from catalake.platform.config import Settings

README = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()

# a value that cannot be used, for each setting; CATALAKE_OWNERS has none (any text is an owner:
# `team:<text>` unless it is an e-mail address), and the catalog's paths are the catalog's to check
# (a missing file is a problem of the catalog: the code location still loads, the run says so)
BAD = {
    "CATALAKE_LANDING": "bogus://bucket/landing",
    "CATALAKE_LANDING_LAYOUT": "{{nope}}/{{dd}}",
    "CATALAKE_WAREHOUSE": "nosuchscheme://bucket/warehouse",
    "CATALAKE_LOCAL_DIR": "{file}",
    "CATALAKE_STORAGE_OPTIONS": "{{not json",
    "CATALAKE_SPARK_MASTER": "nonsense",
    "CATALAKE_SPARK_CONF": "spark.driver.memory",
    "CATALAKE_DELTA_BACKEND": "delta-go",
    "CATALAKE_START_DATE": "yesterday",
    "CATALAKE_DBT_DIR": "{file}",
    "CATALAKE_DBT_PROJECT": "{folder}",
    "CATALAKE_RECORD_EMPTY": "maybe",
    "CATALAKE_COMPILED_PATH": "sometimes",
    "CATALAKE_ENGINE": "duckdb",
    "CATALAKE_LOCAL_TASK_BYTES": "8MiB",
    "CATALAKE_TARGET_FILE_BYTES": "abc",
    "CATALAKE_COMPACT_FILES": "0",
    "CATALAKE_RETENTION_HOURS": "a week",
    "CATALAKE_INCREMENT_SECONDS": "soon",
    "CATALAKE_FRESHNESS_SECONDS": "bikeshare.rides=soon",
    "CATALAKE_COMMIT_THREADS": "-1",
    "CATALAKE_RUN_LEASE_SECONDS": "2.5",
}
NO_BAD_VALUE = {"CATALAKE_OWNERS"}
CATALOG_PATHS = {"CATALAKE_CATALOG": "/nonexistent/catalog.xreg.json", "CATALAKE_SCHEMA_ROOTS": "/nonexistent/schemas"}


def documented() -> set[str]:
    """The settings the README's configuration table describes."""
    return set(re.findall(r"^\| `(CATALAKE_[A-Z_]+)`", README, re.M))


def test_every_documented_setting_has_a_bad_value_here():
    assert documented() - NO_BAD_VALUE == set(BAD) | set(CATALOG_PATHS)


def test_every_field_of_the_settings_names_a_documented_variable():
    named = dict(re.findall(r"^    (\w+): [^=]+= .*# (CATALAKE_[A-Z_]+)", inspect.getsource(Settings), re.M))
    assert set(named) == {f.name for f in dataclasses.fields(Settings)}
    assert set(named.values()) <= documented()


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_setting_is_one_line_and_exit_2(name, tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("a file, not a folder")
    (tmp_path / "folder").mkdir()
    value = BAD[name].format(file=tmp_path / "file", folder=tmp_path / "folder")
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    monkeypatch.setenv("CATALAKE_ENGINE", "local")  # were the value taken, nothing would start Spark
    monkeypatch.setenv(name, value)
    for command in (["run", "--date", "2026-11-20", "--no-analytics"], ["tables"], ["maintain", "--date", "2026-11-20"]):
        assert main(command) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"catalake: {name}"), err
        assert out == ""
    assert not (tmp_path / "warehouse").exists() and not (tmp_path / "dagster").exists()


def test_the_command_line_shows_no_traceback(tmp_path):
    out = subprocess.run([sys.executable, "-m", "catalake.cli", "run", "--date", "2026-11-20"], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "CATALAKE_TARGET_FILE_BYTES": "abc",
                                                      "CATALAKE_WAREHOUSE": str(tmp_path / "warehouse")})
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == ["catalake: CATALAKE_TARGET_FILE_BYTES: 'abc' is not a positive whole number"]


def test_a_catalog_path_that_does_not_exist_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CATALAKE_WAREHOUSE", str(tmp_path / "warehouse"))
    monkeypatch.setenv("CATALAKE_CATALOG", CATALOG_PATHS["CATALAKE_CATALOG"])
    assert main(["run", "--date", "2026-11-20", "--no-analytics"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and CATALOG_PATHS["CATALAKE_CATALOG"] in lines[0], lines
