
from dagster import ConfigurableResource
from pyspark.sql import SparkSession

from catalake.platform.storage import DeltaStore


class Warehouse(ConfigurableResource):
    """Where the Delta tables live, and which Delta backend writes them ('auto' decides at run time)."""

    path: str
    delta_backend: str = "auto"

    def store(self, spark: SparkSession) -> DeltaStore:
        return DeltaStore(spark, self.path, self.delta_backend)
