"""Building the Dagster definitions from settings (`definitions.py` is the code location itself)."""

from dagster import Definitions, in_process_executor

from catalake.defs import (
    DEADLETTER_KEY,
    build_compaction_sensor,
    build_daily_schedule,
    build_data_docs_asset,
    build_drift_asset,
    build_events_asset,
    build_events_job,
    build_landing_sensor,
    build_maintenance_job,
    build_maintenance_schedule,
    build_replay_job,
    build_validate_job,
    catalake_job,
    daily_partitions,
    expectation_suites,
    message_catalog,
)
from catalake.defs.message_assets import catalog_at_load
from catalake.platform.config import Settings
from catalake.resources import CatalogSource, LandingZone, SparkSessionResource, Warehouse


def build_definitions(settings: Settings | None = None, analytics: bool = True) -> Definitions:
    """Everything of the code location; `analytics=False` leaves out the dbt project, the data
    docs and their job (`catalake run --no-analytics` does not load them)."""
    settings = settings or Settings.from_env()
    loaded = catalog_at_load(settings)  # read once for every definition built from it
    partitions = daily_partitions(settings)
    events_job = build_events_job(partitions)
    assets = [message_catalog, expectation_suites, build_events_asset(settings, partitions, loaded),
              build_drift_asset(partitions)]
    maintenance_job = build_maintenance_job(settings, partitions)
    jobs = [catalake_job, events_job, build_validate_job(partitions), build_replay_job(partitions), maintenance_job]
    resources = {
        "spark": SparkSessionResource(master=settings.spark_master, conf=dict(settings.spark_conf)),
        "warehouse": Warehouse(path=settings.warehouse, delta_backend=settings.delta_backend,
                               local_path=str(settings.local), commit_threads=settings.commit_threads),
        "catalog_source": CatalogSource(
            paths=[str(p) for p in settings.catalog], schema_roots=[str(p) for p in settings.schema_roots]
        ),
        "landing": LandingZone(path=settings.landing, layout=settings.layout),
    }
    if analytics:
        from catalake.defs.analytics_assets import build_analytics_job, build_dbt_assets, dbt_cli, dbt_project

        project = dbt_project(settings, loaded.tables if loaded.error is None else [])
        assets += [build_dbt_assets(partitions, project), build_data_docs_asset(partitions, DEADLETTER_KEY)]
        jobs.append(build_analytics_job(partitions))
        resources["dbt"] = dbt_cli(project)
    return Definitions(
        assets=assets,
        jobs=jobs,
        schedules=[build_daily_schedule(events_job, partitions), build_maintenance_schedule(maintenance_job, partitions)],
        sensors=[build_landing_sensor(events_job, settings.landing, partitions, settings.layout,
                                      settings.increment_seconds),
                 build_compaction_sensor(events_job, maintenance_job)],
        resources=resources,
        # One Spark session per run: steps share the process instead of each starting a JVM.
        executor=in_process_executor,
    )
