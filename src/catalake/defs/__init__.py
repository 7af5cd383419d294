"""Dagster assets, checks, jobs, schedules and sensors. The dbt assets live in `analytics_assets.py`,
imported only by the definitions that include them (dagster-dbt takes a second to import)."""

from .catalog_assets import build_catalog_asset, message_catalog
from .drift_assets import build_drift_asset, build_replay_job
from .event_assets import DEADLETTER_KEY, build_events_asset, daily_partitions
from .jobs import build_catalog_job, build_events_job, catalake_job
from .maintenance_job import build_compaction_sensor, build_maintenance_job, build_maintenance_schedule
from .message_assets import message_specs
from .quality_assets import DATA_DOCS_KEY, build_data_docs_asset, build_suites_asset, expectation_suites
from .schedules import build_daily_schedule
from .sensors import build_landing_sensor
from .validation_job import build_validate_job

__all__ = [
    "DATA_DOCS_KEY",
    "DEADLETTER_KEY",
    "build_catalog_asset",
    "build_catalog_job",
    "build_compaction_sensor",
    "build_daily_schedule",
    "build_data_docs_asset",
    "build_drift_asset",
    "build_events_asset",
    "build_events_job",
    "build_landing_sensor",
    "build_maintenance_job",
    "build_maintenance_schedule",
    "build_replay_job",
    "build_suites_asset",
    "build_validate_job",
    "catalake_job",
    "daily_partitions",
    "expectation_suites",
    "message_catalog",
    "message_specs",
]
