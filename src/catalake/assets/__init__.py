"""Dagster assets, checks, jobs, schedules and sensors."""

from .catalog import message_catalog
from .jobs import catalake_job

__all__ = ["catalake_job", "message_catalog"]
