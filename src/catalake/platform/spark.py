"""Building the Spark session: local mode by default, a cluster or Spark Connect by configuration."""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession

from .defaults import SPARK_MASTER

log = logging.getLogger(__name__)

# The local driver's JVM plans, schedules and passes task ids and summaries to the Python workers,
# which read, classify and write the data themselves: its own code runs for seconds, not hours, and
# the optimizing compiler's threads only take the 2 cores from the workers at start (a 100k / 100
# day: 12.3 s to 9.8 s; benchmarks/RESULTS.md, session 29). Options of one's own that set the
# level win.
QUICK_JIT = "-XX:TieredStopAtLevel=1"

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_jars_on_classpath(extra_jars: str = "") -> bool:
    """True when delta-spark's JVM jars are where a local session would load them.

    Maven is not always reachable, so we never ask for the jars by coordinates; we only
    switch the Delta extension on when the jars are already present, otherwise the session
    would fail to start.
    """
    import pyspark

    candidates = [os.path.join(os.path.dirname(pyspark.__file__), "jars")]
    if os.environ.get("SPARK_HOME"):
        candidates.append(os.path.join(os.environ["SPARK_HOME"], "jars"))
    jars = [j for d in candidates for j in glob.glob(os.path.join(d, "delta-spark*.jar"))]
    jars += [j for j in extra_jars.split(",") if "delta-spark" in os.path.basename(j)]
    return bool(jars)


def build_session(master: str = SPARK_MASTER, app_name: str = "catalake", conf: dict | None = None,
                  class_archive: bool = True) -> SparkSession:
    """Start (or reuse) a Spark session.

    `master` is a Spark master URL, or a `sc://` URL for Spark Connect. A local driver's JVM
    maps the class archive made for it, when there is one (`make_archive`).
    """
    # Executors must run the same interpreter (and so see catalake's dependencies).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = dict(conf or {})
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master)
    else:
        builder = SparkSession.builder.master(master)
        conf.setdefault("spark.sql.session.timeZone", "UTC")
        conf.setdefault("spark.sql.shuffle.partitions", "4")
        conf.setdefault("spark.ui.showConsoleProgress", "false")
        # A partition streams through the engine (scratch Parquet, no cache), so the heap need
        # not grow with the data. The JVM fills whatever heap it is given before collecting,
        # so a larger cap only shows up as RSS that grows with the partition. Measured in
        # benchmarks/RESULTS.md (session 7): flat RSS from 100k to 1M records at 1g, for 3-5%
        # more wall time than at 2g.
        conf.setdefault("spark.driver.memory", "1g")
        conf.setdefault("spark.sql.execution.arrow.pyspark.enabled", "true")
        conf.setdefault("spark.python.daemon.module", "catalake.platform.runs.worker_daemon")
        if delta_jars_on_classpath(conf.get("spark.jars", "")):
            conf.setdefault("spark.sql.extensions", DELTA_EXTENSION)
            conf.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        own = conf.get("spark.driver.extraJavaOptions", "")
        archive = _archive_options(conf.get("spark.jars", "")) if class_archive else None
        quick = "" if "TieredStopAtLevel" in own else QUICK_JIT
        conf["spark.driver.extraJavaOptions"] = " ".join(o for o in (archive, quick, own) if o)
        existing = SparkSession._instantiatedSession
        if existing is not None and not session_alive(existing):
            log.warning("the Spark session's JVM is gone (killed, or out of memory): starting a new one")
            discard(existing)
    builder = builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if SparkSession._instantiatedSession is None:
        _import_meanwhile("pyspark.testing.utils")
    session = builder.getOrCreate()
    if master.startswith("sc://"):
        session.conf.set("spark.sql.session.timeZone", "UTC")
    else:
        session.sparkContext.setLogLevel("WARN")
    return session


def _archive_options(extra_jars: str) -> str | None:
    try:
        return java_options(extra_jars)
    except Exception:  # noqa: BLE001 - only a faster start: a session starts without it
        return None


def is_session(value) -> bool:
    """A Spark session, classic or Spark Connect (which is not a `pyspark.sql.SparkSession`)."""
    return hasattr(value, "createDataFrame") and hasattr(value, "read")


def session_alive(session: SparkSession) -> bool:
    """Whether a local session's JVM still answers: a dead JVM (killed, or ended by an
    OutOfMemoryError) refuses every call, so every later run of the process would fail."""
    try:
        return not session.sparkContext._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - py4j: connection refused, or the context already stopped
        return False


def discard(session: SparkSession) -> None:
    """Forget a dead local session, so that the next `build_session` starts a new JVM (PySpark
    keeps its gateway to the dead one in class attributes)."""
    from pyspark import SparkContext

    try:
        session.sparkContext.stop()
    except Exception:  # noqa: BLE001 - nothing to stop cleanly in a dead JVM
        pass
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SparkContext._active_spark_context = None
    SparkContext._gateway = None
    SparkContext._jvm = None


def _import_meanwhile(module: str) -> None:
    """Import `module` in a thread while the JVM starts: PySpark's SparkConf imports it (and with it
    pandas, 0.5-0.9 s) once the gateway is up, on the way to the session (issue 52's profile)."""
    import importlib
    import threading

    def load() -> None:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - only a head start: SparkConf imports it again and says why
            pass

    threading.Thread(target=load, daemon=True, name=f"import-{module}").start()


# -- the driver's class archive -------------------------------------------------------------------
# The class-data-sharing archive of a local Spark driver's JVM (JDK's dynamic AppCDS, JEP 350): the
# classes a Spark session loads, parsed and verified once, then mapped by every later start (a
# session in 4.1 s instead of 7.0 s, its first job 2.0 s instead of 3.4 s on 2 cores; RESULTS.md,
# session 29). `python -m catalake.platform.spark` makes it (the Makefile's install does) in a
# process of its own: the JVM writes the archive as it exits, into a temporary file renamed into
# place with its size beside it once the process has ended. A session maps it only when that size
# matches: a JDK or jar set other than the archive's makes the JVM refuse it (silently, with QUIET),
# but a truncated archive crashes the JVM instead. Another JDK, PySpark or jar set has a file name
# of its own (`archive_key`), so after an upgrade sessions start without one until it is made again.

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
from catalake.platform.runs.tasks import warm_up
from catalake.platform.spark import QUIET, build_session
conf = {"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={sys.argv[1]} {QUIET}"}
if sys.argv[2]:
    conf["spark.jars"] = sys.argv[2]
session = build_session("local[*]", conf=conf, class_archive=False)
warm_up(session)
session.range(0, 1000, 1, 2).selectExpr("id % 7 AS k").groupBy("k").count().collect()
session.stop()
"""


def main() -> int:
    """`python -m catalake.platform.spark`: make the driver's class archive."""
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
