"""Dagster assets, checks, jobs, schedules and sensors."""

from .analytics import build_analytics_job, build_dbt_assets, dbt_cli
from .catalog import message_catalog
from .events import build_events_asset, daily_partitions
from .expectations import DATA_DOCS_KEY, build_data_docs_asset, expectation_suites
from .jobs import build_events_job, catalake_job
from .messages import message_specs
from .schedules import build_daily_schedule
from .sensors import build_landing_sensor

__all__ = [
    "DATA_DOCS_KEY",
    "build_analytics_job",
    "build_data_docs_asset",
    "build_daily_schedule",
    "build_dbt_assets",
    "build_events_asset",
    "build_events_job",
    "build_landing_sensor",
    "catalake_job",
    "daily_partitions",
    "dbt_cli",
    "expectation_suites",
    "message_catalog",
    "message_specs",
]
