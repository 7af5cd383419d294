"""Dagster resources wrapping the engine: Spark session, warehouse storage, catalog source, the
landing zone; `Configured`, one location's set of them, built from its settings."""

from .catalog_source import CatalogSource
from .configured import Configured, at_load
from .landing_zone import LandingZone
from .spark_session import SparkSessionResource
from .warehouse import Warehouse

__all__ = ["CatalogSource", "Configured", "LandingZone", "SparkSessionResource", "Warehouse", "at_load"]
