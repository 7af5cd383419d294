from pathlib import Path

from dagster import ConfigurableResource
from pyspark.sql import SparkSession

from catalake.platform.config import DOCS_INDEX, SUITES_DIR
from catalake.platform.storage import DeltaStore


class Warehouse(ConfigurableResource):
    """Where the Delta tables live, and which Delta backend writes them ('auto' decides at run time)."""

    path: str
    delta_backend: str = "auto"

    def store(self, spark: SparkSession) -> DeltaStore:
        return DeltaStore(spark, self.path, self.delta_backend)

    @property
    def suites_dir(self) -> Path:
        """Where the expectation suites are written, one JSON file per definition."""
        return Path(self.path) / SUITES_DIR

    @property
    def docs_index(self) -> Path:
        return Path(self.path) / DOCS_INDEX

    def validator(self):
        """GX validation over this warehouse (its file context and data docs under `gx/`).

        Imported here: great_expectations takes seconds to import, which the code location
        should not pay when it loads."""
        from catalake.platform.validation import Validator

        return Validator(Path(self.path))

