"""PySpark's Python worker daemon with the engine imported before it forks its workers
(`spark.python.daemon.module` of a local session, platform/spark.py): each worker starts with
PySpark's worker, pandas, pyarrow and catalake's classifier already loaded, imported once in the
daemon instead of once per worker on the first task of a run."""

import pyspark.sql.pandas.serializers  # what a mapInArrow worker imports first
import pyspark.worker  # noqa: F401 - the worker module the daemon forks into

import catalake.platform.runs.classifier  # noqa: F401 - a partition run's tasks

if __name__ == "__main__":
    from pyspark.daemon import manager

    manager()
