"""Building the Spark session: local mode by default, a cluster or Spark Connect by configuration."""

from __future__ import annotations

import glob
import logging
import os
import sys

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
    maps the class archive made for it, when there is one (`class_archive.py`).
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
        conf.setdefault("spark.python.daemon.module", "catalake.platform.worker_daemon")
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
    from .class_archive import java_options

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
