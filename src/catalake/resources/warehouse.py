from pathlib import Path

from dagster import ConfigurableResource

from catalake.platform import defaults
from catalake.platform.config import DBT_TEMPLATE, DOCS_INDEX, SUITES_DIR, local_folder


class Warehouse(ConfigurableResource):
    """Where the Delta tables live (a local folder or a URI), which Delta backend writes them
    ('auto' decides at run time), the local folder of the files a person opens (GX data
    docs, suites, the dbt project; default: the warehouse folder, or ./.catalake for object
    storage), and how a run writes and reports the tables (see the README's configuration:
    each field is a `CATALAKE_*` setting)."""

    path: str
    delta_backend: str = defaults.DELTA_BACKEND
    local_path: str | None = None
    commit_threads: int = defaults.COMMIT_THREADS  # CATALAKE_COMMIT_THREADS
    target_file_bytes: int = defaults.TARGET_FILE_BYTES  # CATALAKE_TARGET_FILE_BYTES
    compact_files: int = defaults.COMPACT_FILES  # CATALAKE_COMPACT_FILES
    retention_hours: float = defaults.RETENTION_HOURS  # CATALAKE_RETENTION_HOURS
    record_empty: bool = defaults.RECORD_EMPTY  # CATALAKE_RECORD_EMPTY
    dbt_path: str | None = None  # CATALAKE_DBT_DIR
    dbt_template: str = str(DBT_TEMPLATE)  # CATALAKE_DBT_PROJECT

    @property
    def local(self) -> Path:
        return local_folder(self.path, Path(self.local_path) if self.local_path else None)

    @property
    def dbt_dir(self) -> Path:
        """Where the catalog's dbt project is prepared, with dbt's target/ and logs."""
        return (Path(self.dbt_path) if self.dbt_path else self.local / "dbt").absolute()

    def store(self, spark):
        """The warehouse's tables (a DeltaStore), through a Spark session, or through the Spark
        resource: then Spark is started only when a table is read or written with it (the
        catalog's tables are written by delta-rs before Spark is up)."""
        from catalake.platform.spark import is_session
        from catalake.platform.warehouse.store import DeltaStore

        if is_session(spark):
            return DeltaStore(spark, self.path, self.delta_backend, commit_threads=self.commit_threads)
        return DeltaStore(lambda: spark.session, self.path, self.delta_backend, master=spark.master, conf=spark.conf,
                          commit_threads=self.commit_threads)

    @property
    def suites_dir(self) -> Path:
        """Where the expectation suites are written, one JSON file per definition."""
        return self.local / SUITES_DIR

    @property
    def docs_index(self) -> Path:
        return self.local / DOCS_INDEX

    def validator(self):
        """GX validation over this warehouse (its file context and data docs under `gx/`).

        Imported here: great_expectations takes seconds to import, which the code location
        should not pay when it loads."""
        from catalake.platform.quality.validator import Validator

        return Validator(self.local)

