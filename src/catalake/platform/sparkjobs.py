"""The Spark side of the jobs that partition runs (classify.py) and replays (replay.py) run: each
is one `mapInArrow` over task numbers whose function classifies on the executors and answers one
JSON summary per task (`TASK_OUTPUT`)."""

from __future__ import annotations

import os
from contextlib import contextmanager

from pyspark.sql import SparkSession

TASK_OUTPUT = "task int, json string"


def parallelism(spark: SparkSession) -> int:
    """The cores the session's tasks run on (this machine's on Spark Connect)."""
    try:
        return max(int(spark.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return os.cpu_count() or 2


@contextmanager
def job_group(spark: SparkSession, group: str, description: str):
    """The job named in the Spark UI and event log (classic Spark only)."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        yield
        return
    context.setJobGroup(group, description)
    try:
        yield
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)


def _import_engine(batches):
    import pyarrow as pa

    from . import classifier  # noqa: F401 - what a partition run's workers import first

    for _ in batches:
        yield pa.record_batch([pa.array([0], pa.int32())], names=["ready"])


def warm_up(session: SparkSession) -> None:
    """One tiny job over every core: the JVM compiles its first plan and the Python workers start
    and import the engine, so the first real job of a run does not pay for it."""
    try:
        cores = max(int(session.sparkContext.defaultParallelism), 1)
    except Exception:  # noqa: BLE001 - Spark Connect: the server's workers are not ours to warm
        return
    session.range(0, cores, 1, cores).mapInArrow(_import_engine, "ready int").collect()
