"""Building the Dagster definitions from settings (`definitions.py` is the code location itself;
`component.py` builds one set per `CatalakeComponent` instance)."""

from functools import lru_cache

from dagster import Definitions

from catalake.defs.catalog.assets import build_catalog_asset, build_catalog_job
from catalake.defs.catalog.messages import catalog_at_load
from catalake.defs.drift.assets import build_drift_asset, build_replay_job
from catalake.defs.events.assets import build_events_asset, daily_partitions
from catalake.defs.events.jobs import build_events_job
from catalake.defs.events.schedules import build_daily_schedule
from catalake.defs.events.sensors import build_landing_sensor
from catalake.defs.maintenance.job import build_compaction_sensor, build_maintenance_job, build_maintenance_schedule
from catalake.defs.names import DEFAULT, SPARK, Names
from catalake.defs.quality.assets import build_data_docs_asset, build_suites_asset
from catalake.defs.quality.validation import build_validate_job
from catalake.leases import leased_in_process_executor
from catalake.platform.config import Settings
from catalake.resources import Configured, SparkSessionResource


def build_definitions(settings: Settings | None = None, analytics: bool = True, names: Names = DEFAULT,
                      configured: Configured | None = None) -> Definitions:
    """Everything of the code location (or of one component instance, named by `names`), built
    from its resources: `configured`, else the ones `settings` say. `analytics=False` leaves out
    the dbt project, the data docs and their job (`catalake run --no-analytics` does not load them)."""
    settings = settings or Settings.from_env()
    r = configured or Configured.from_settings(settings, spark_resource(
        settings.spark_master, settings.spark_conf, settings.engine, settings.local_task_bytes))
    loaded = catalog_at_load(r.catalog_source)  # read once for every definition built from it
    partitions = daily_partitions(r, names)
    events = build_events_asset(r, partitions, loaded, names)
    events_job = build_events_job(partitions, events, names)
    assets = [build_catalog_asset(names), build_suites_asset(names), events, build_drift_asset(partitions, names)]
    maintenance_job = build_maintenance_job(partitions, names)
    jobs = [build_catalog_job(names, analytics), events_job, build_validate_job(partitions, names),
            build_replay_job(partitions, names), maintenance_job]
    resources = {SPARK: r.spark, names.of("warehouse"): r.warehouse, names.of("catalog_source"): r.catalog_source,
                 names.of("landing"): r.landing}
    if analytics:
        from catalake.defs.analytics.project import build_analytics_job, build_dbt_project_asset, manifest_at_load

        docs = build_data_docs_asset(partitions, names)
        assets += [build_dbt_project_asset(names), docs]
        analytics_assets = [docs]
        if manifest_at_load(r, loaded) is not None:  # parsed by a `catalake_job` run: read only
            from catalake.defs.analytics.dbt_assets import build_dbt_assets, dbt_cli, loaded_project

            project = loaded_project(r.warehouse)
            dbt = build_dbt_assets(partitions, project, names)
            assets.append(dbt)
            analytics_assets.insert(0, dbt)
            resources[names.of("dbt")] = dbt_cli(project)
        jobs.append(build_analytics_job(partitions, analytics_assets, names))
    return Definitions(
        assets=assets,
        jobs=jobs,
        schedules=[build_daily_schedule(events_job, partitions, names),
                   build_maintenance_schedule(maintenance_job, partitions, names)],
        sensors=[build_landing_sensor(events_job, r.landing, partitions, names),
                 build_compaction_sensor(events_job, maintenance_job, names)],
        resources=resources,
        # One Spark session per run: steps share the process instead of each starting a JVM. Leased:
        # a run says which process runs it and beats a heartbeat, so a dead one never holds its day.
        executor=leased_in_process_executor,
    )


@lru_cache
def spark_resource(master: str, conf: tuple[tuple[str, str], ...], engine: str = "spark",
                   local_task_bytes: int = 8 << 20) -> SparkSessionResource:
    """One resource object per Spark setting: every instance of a project shares it (Dagster
    merges definitions whose resources under one key are the same object; a process has one
    Spark session anyway)."""
    return SparkSessionResource(master=master, conf=dict(conf), engine=engine, local_task_bytes=local_task_bytes)
