"""The class-data-sharing archive of a local Spark driver's JVM (JDK's dynamic AppCDS, JEP 350):
the classes a Spark session loads, parsed and verified once, then mapped by every later start.
Measured on 2 cores (benchmarks/RESULTS.md, session 29): a session in 4.1 s instead of 7.0 s,
its first job in 2.0 s instead of 3.4 s.

`python -m catalake.platform.class_archive` makes it (the Makefile's install does) in a process
of its own: the JVM writes the archive as it exits, into a temporary file that is renamed into
place with its size beside it once the process has ended. A session uses it only when that size
matches: a JDK or a jar set other than the archive's makes the JVM refuse it (silently, with the
options below), but a truncated archive crashes the JVM instead. A JDK, PySpark or jar set other
than the one it was made with has a file name of its own (`archive_key`), so after an upgrade
sessions start without one until it is made again.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# the archive's own warnings (another JDK, another class path) would reach a run's output
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_dir() -> Path:
    """CATALAKE_CLASS_ARCHIVE_DIR, else beside the environment's packages (a virtual
    environment's archive goes with it), else the user's cache."""
    if os.environ.get("CATALAKE_CLASS_ARCHIVE_DIR"):
        return Path(os.environ["CATALAKE_CLASS_ARCHIVE_DIR"])
    shared = Path(sys.prefix) / "share" / "catalake"
    if os.access(shared if shared.exists() else Path(sys.prefix), os.W_OK):
        return shared
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "catalake"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_key(extra_jars: str = "") -> str | None:
    """What the archive was made from: the JVM's binary, PySpark's version and its jars, the
    session's extra jars (None: no Java)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = sorted(os.path.basename(j) for j in glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar")))
    stat = java.stat()
    facts = [str(java), str(stat.st_size), str(int(stat.st_mtime)), pyspark.__version__, *jars, extra_jars]
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def archive_path(extra_jars: str = "") -> Path | None:
    key = archive_key(extra_jars)
    return archive_dir() / f"spark-driver-{key}.jsa" if key else None


def java_options(extra_jars: str = "") -> str | None:
    """The driver's JVM options that map the archive, when one was made for this JVM and these
    jars and is whole; else None."""
    path = archive_path(extra_jars)
    if path is None:
        return None
    try:
        whole = path.stat().st_size == int(path.with_suffix(".size").read_text())
    except (OSError, ValueError):
        return None
    return f"-XX:SharedArchiveFile={path} {QUIET}" if whole else None


def make_archive(extra_jars: str = "") -> Path:
    """Start a local session in a process of its own that runs a job as a partition run's does,
    with the JVM writing its loaded classes as it exits; then put the archive in place."""
    path = archive_path(extra_jars)
    if path is None:
        raise RuntimeError("no java on PATH (nor JAVA_HOME): Spark cannot start")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=path.stem + ".", suffix=".partial", dir=path.parent)
    os.close(fd)
    os.unlink(temporary)  # the JVM creates it
    try:
        subprocess.run([sys.executable, "-c", _SESSION, temporary, extra_jars], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        size = Path(temporary).stat().st_size
        os.replace(temporary, path)
        path.with_suffix(".size").write_text(str(size))
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path


# the job of a partition run in small: the session, a plan, the Python workers' Arrow exchange
_SESSION = """
import sys
from catalake.platform.spark import build_session
from catalake.platform.runs.tasks import warm_up
conf = {"spark.driver.extraJavaOptions": "-XX:ArchiveClassesAtExit=" + sys.argv[1] + " -Xlog:cds=off -Xlog:cds+dynamic=off"}
if sys.argv[2]:
    conf["spark.jars"] = sys.argv[2]
session = build_session("local[*]", conf=conf, class_archive=False)
warm_up(session)
session.range(0, 1000, 1, 2).selectExpr("id % 7 AS k").groupBy("k").count().collect()
session.stop()
"""


def main() -> int:
    try:
        path = make_archive()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        print(f"catalake: no class archive for the Spark driver ({error}); sessions start without one\n"
              f"{detail.decode(errors='replace')[-2000:]}", file=sys.stderr)
        return 1
    print(f"catalake: the Spark driver's class archive: {path} ({path.stat().st_size / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
