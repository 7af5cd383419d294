"""Dagster assets, checks, jobs, schedules and sensors."""

from .catalog import message_catalog
from .jobs import catalake_job
from .messages import message_specs

__all__ = ["catalake_job", "message_catalog", "message_specs"]
