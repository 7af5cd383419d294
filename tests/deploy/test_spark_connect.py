"""CATALAKE_SPARK_MASTER=sc://... : the same store works through Spark Connect (local server)."""

import subprocess
import sys
import textwrap

import pytest

# the server listens on Spark Connect's default port: never at the same time as the other test that
# starts one there (tests/deploy/test_object_storage.py, in the same xdist group)
pytestmark = [pytest.mark.jvm, pytest.mark.xdist_group("spark-connect-port-15002")]

SCRIPT = textwrap.dedent(
    """
    import datetime as dt, os, sys, tempfile
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the local server's Python workers import catalake
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DateType, StringType, StructField, StructType
    # pyspark starts a local Spark Connect server for a 'local' remote
    SparkSession.builder.remote("local[1]").getOrCreate()  # serves on the default port, 15002
    from catalake.platform.spark import build_session
    from catalake.platform.warehouse.store import DeltaStore
    spark = build_session("sc://localhost:" + sys.argv[1])
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    store = DeltaStore(spark, tempfile.mkdtemp())
    schema = StructType([StructField("id", StringType()), StructField("event_date", DateType())])
    store.create("t", schema, ["event_date"])
    store.append("t", spark.createDataFrame([("a", dt.date(2026, 1, 1)), ("b", dt.date(2026, 1, 2))], schema))
    store.overwrite_partition("t", spark.createDataFrame([("c", dt.date(2026, 1, 2))], schema), "event_date", "2026-01-02")
    print("ROWS", sorted(r["id"] for r in store.read("t").collect()), store.backend, len(store.history("t")))
    """
)


def test_store_over_spark_connect():
    out = subprocess.run([sys.executable, "-c", SCRIPT, "15002"], capture_output=True, text=True, timeout=300)
    assert "ROWS ['a', 'c'] delta-rs 3" in out.stdout, out.stderr[-3000:]
