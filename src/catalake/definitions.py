"""The Dagster code location: `dagster dev` loads `defs` from here (see [tool.dagster])."""

from dagster import Definitions, in_process_executor

from catalake.assets import catalake_job, message_catalog, message_specs
from catalake.platform.config import Settings
from catalake.resources import CatalogSource, SparkSessionResource, Warehouse


def build_definitions(settings: Settings | None = None) -> Definitions:
    settings = settings or Settings.from_env()
    return Definitions(
        assets=[message_catalog, *message_specs(settings)],
        jobs=[catalake_job],
        resources={
            "spark": SparkSessionResource(master=settings.spark_master),
            "warehouse": Warehouse(path=str(settings.warehouse), delta_backend=settings.delta_backend),
            "catalog_source": CatalogSource(
                paths=[str(p) for p in settings.catalog], schema_roots=[str(p) for p in settings.schema_roots]
            ),
        },
        # One Spark session per run: steps share the process instead of each starting a JVM.
        executor=in_process_executor,
    )


defs = build_definitions()
