"""The Spark driver's class archive (platform/spark.py, `make_archive`): made in a process of its own,
mapped by every later local session of the same JVM and jars, and never by a session when it is
not whole (the JVM crashes on a truncated archive instead of refusing it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from catalake.platform import spark as sessions

SESSION = """
from catalake.platform.spark import build_session
session = build_session("local[1]")
print(session.range(0, 10).count())
print(session.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
session.stop()
"""


def _session(env: dict) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    count, options = out.stdout.strip().splitlines()[-2:]
    return int(count), options.split()


@pytest.mark.jvm
def test_a_local_session_maps_the_archive_made_for_it_and_only_a_whole_one(tmp_path, monkeypatch):
    monkeypatch.setenv("CATALAKE_CLASS_ARCHIVE_DIR", str(tmp_path))
    env = {**os.environ, "CATALAKE_CLASS_ARCHIVE_DIR": str(tmp_path)}
    count, options = _session(env)  # none made yet: the session starts as before
    assert count == 10 and not any(o.startswith("-XX:SharedArchiveFile") for o in options)
    assert "-XX:TieredStopAtLevel=1" in options

    path = sessions.make_archive()
    assert path.parent == tmp_path and path.stat().st_size > 10 << 20
    assert int(path.with_suffix(".size").read_text()) == path.stat().st_size
    assert not list(tmp_path.glob("*.partial"))
    count, options = _session(env)
    assert count == 10 and f"-XX:SharedArchiveFile={path}" in options

    # an archive cut short (a copy stopped half way) is not mapped: the session starts without it
    data = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(data[:len(data) // 2])
    assert sessions.java_options() is None
    count, options = _session(env)
    assert count == 10 and not any(o.startswith("-XX:SharedArchiveFile") for o in options)


def test_another_jvm_or_jar_set_has_an_archive_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("CATALAKE_CLASS_ARCHIVE_DIR", str(tmp_path))
    plain, with_jar = sessions.archive_path(), sessions.archive_path("/opt/jars/delta-spark_2.13-4.0.0.jar")
    assert plain.parent == with_jar.parent == tmp_path and plain != with_jar
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    assert sessions.archive_path() is None and sessions.java_options() is None
