"""How the tasks of a run execute: one Spark job, or local Python processes for a small increment.

A Spark job of a partition run or a replay is one `mapInArrow` (over task numbers, or over the
day's dead-letter rows) whose function (`spark_tasks`) classifies on the executors and answers
one JSON summary per task (`TASK_OUTPUT`); the driver merges them (results.Merged).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession

from ..errors import StorageError
from ..landing.planning import Piece
from ..spark import is_session
from .classifier import Classifier, classifier_for
from .plan import Plan
from .results import LOCAL, NOTHING, Engine, Merged
from .taskio import TaskResult

TASK_OUTPUT = "task int, json string"
# what one task classifies: the pieces of each day it reads (a run of a range of days packs
# several days' pieces into one task; each day's rows go to that day's partitions)
Task = Sequence[tuple[dt.date, Sequence[Piece]]]
IN_PROCESS_BYTES = 8 << 20  # tasks reading at most this much run in the calling process


def spark_engine(session: SparkSession) -> Engine:
    """The session's application id and Spark UI address, classic or Spark Connect."""
    try:
        context = session.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: the server's settings say
        conf = session.conf
        host, port = conf.get("spark.driver.host", None), conf.get("spark.ui.port", None) or "4040"
        return Engine("spark", conf.get("spark.master", None), conf.get("spark.app.id", None),
                      f"http://{host}:{port}" if host and conf.get("spark.ui.enabled", None) != "false" else None)
    return Engine("spark", context.master, context.applicationId, context.uiWebUrl)


def engine_for(size: int, local_bytes: int, spark: SparkSession | Callable[[], SparkSession]) -> tuple[Engine, SparkSession | None]:
    """Local processes for a run of at most `local_bytes` landed bytes (Spark is then not
    started), else the session (`spark`, or a function starting it) and its Engine; nothing to
    read starts nothing."""
    if size == 0:
        return NOTHING, None
    if size <= local_bytes:
        return LOCAL, None
    session = spark if is_session(spark) else spark()
    return spark_engine(session), session


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
    and import the engine, so the first real job of a run does not pay for it (on Spark
    Connect, the server's: deploy/spark-connect.sh warms them once)."""
    cores = parallelism(session)
    session.range(0, cores, 1, cores).mapInArrow(_import_engine, "ready int").collect()


Work = Callable[[Classifier, Iterator[pa.RecordBatch], int, int], Iterator[tuple[int, TaskResult]]]


def spark_tasks(plan: Plan, work: Work):
    """The function of a Spark job: on an executor, `work` takes the run's classifier and the
    input of one Spark partition, with the partition's number and attempt, and yields (task
    number, its result); each result goes back as one JSON summary (`TASK_OUTPUT`)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        classifier = classifier_for(plan)
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        for task, result in work(classifier, batches, partition, attempt):
            yield pa.record_batch([pa.array([task], pa.int32()), pa.array([json.dumps(result.summary())])],
                                  names=["task", "json"])

    return run


def _run_tasks(plan: Plan, tasks: list[Task]):
    """The function of a partition run's Spark job: task ids in, one JSON summary per task and
    day out."""
    def work(classifier: Classifier, batches: Iterator[pa.RecordBatch], partition: int, attempt: int):
        for batch in batches:
            for task in batch.column(0).to_pylist():
                for day, pieces in tasks[task]:
                    yield task, classifier.run(f"{task}.{attempt}", pieces, day)

    return spark_tasks(plan, work)


def _local_task(work: tuple[Plan, int, Task]) -> list[dict]:
    """One task in a local worker process (run_local)."""
    plan, task, days = work
    classifier = classifier_for(plan)
    return [classifier.run(f"{task}.0", pieces, day).summary() for day, pieces in days]


def run_local(plan: Plan, tasks: list[Task]) -> list[dict]:
    """The tasks of a small increment (of every run with CATALAKE_ENGINE=local) in local Python
    processes: the same classifier and files as the Spark job, without waiting for a JVM to start (spawned, not forked: the driver holds
    threads, and delta-rs' runtime does not survive a fork). A few megabytes (an increment, a
    quiet day) are classified in this process: starting two interpreters would cost more."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if sum(p.length for t in tasks for _, pieces in t for p in pieces) <= IN_PROCESS_BYTES:
        return [s for i, t in enumerate(tasks) for s in _local_task((plan, i, t))]

    workers = min(len(tasks), os.cpu_count() or 2)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return [s for summaries in pool.map(_local_task, [(plan, i, t) for i, t in enumerate(tasks)]) for s in summaries]


def execute(plan: Plan, tasks: list[Task], session: SparkSession | None) -> dict[dt.date, Merged]:
    """The tasks' summaries merged per day: one Spark job, or local processes when there is no
    session. A day no task reads has no entry."""
    if not tasks:
        return {}
    if session is None:
        return _by_day(run_local(plan, tasks))
    days = sorted({day for task in tasks for day, _ in task})
    span = f"{days[0]}" if len(days) == 1 else f"{days[0]} to {days[-1]} ({len(days)} days)"
    with job_group(session, f"catalake-classify-{days[0]}", f"classify {span}: {len(tasks)} task(s)"):
        rows = session.range(0, len(tasks), 1, len(tasks)).mapInArrow(_run_tasks(plan, tasks), TASK_OUTPUT).collect()
    expected = sorted(i for i, task in enumerate(tasks) for _ in task)
    if sorted(r["task"] for r in rows) != expected:
        raise StorageError(f"{span}: task results {sorted(r['task'] for r in rows)} for {len(tasks)} task(s)")
    return _by_day([json.loads(r["json"]) for r in rows])


def _by_day(summaries: list[dict]) -> dict[dt.date, Merged]:
    days: dict[str, list[dict]] = {}
    for summary in summaries:
        days.setdefault(summary["day"], []).append(summary)
    return {dt.date.fromisoformat(day): Merged.of(found) for day, found in sorted(days.items())}
