"""The Dagster code location: `dagster dev` loads `defs` from here (see [tool.dagster])."""

from dagster import Definitions, in_process_executor

from catalake.assets import (
    build_analytics_job,
    build_data_docs_asset,
    build_dbt_assets,
    build_daily_schedule,
    build_events_asset,
    build_events_job,
    build_landing_sensor,
    catalake_job,
    daily_partitions,
    dbt_cli,
    expectation_suites,
    message_catalog,
)
from catalake.assets.events import DEADLETTER_KEY
from catalake.assets.validation import build_validate_job
from catalake.platform.config import Settings
from catalake.resources import CatalogSource, LandingZone, SparkSessionResource, Warehouse


def build_definitions(settings: Settings | None = None) -> Definitions:
    settings = settings or Settings.from_env()
    partitions = daily_partitions(settings)
    events_job = build_events_job(partitions)
    return Definitions(
        assets=[message_catalog, expectation_suites, build_events_asset(settings), build_dbt_assets(partitions),
                build_data_docs_asset(partitions, DEADLETTER_KEY)],
        jobs=[catalake_job, events_job, build_analytics_job(partitions), build_validate_job(partitions)],
        schedules=[build_daily_schedule(events_job)],
        sensors=[build_landing_sensor(events_job, settings.landing, partitions)],
        resources={
            "spark": SparkSessionResource(master=settings.spark_master, conf=dict(settings.spark_conf)),
            "warehouse": Warehouse(path=str(settings.warehouse), delta_backend=settings.delta_backend),
            "catalog_source": CatalogSource(
                paths=[str(p) for p in settings.catalog], schema_roots=[str(p) for p in settings.schema_roots]
            ),
            "landing": LandingZone(path=str(settings.landing)),
            "dbt": dbt_cli(),
        },
        # One Spark session per run: steps share the process instead of each starting a JVM.
        executor=in_process_executor,
    )


defs = build_definitions()
