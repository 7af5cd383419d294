"""Dagster resources wrapping the engine: Spark session, warehouse storage, catalog source."""

from .catalog_source import CatalogSource
from .landing_zone import LandingZone
from .spark_session import SparkSessionResource
from .warehouse import Warehouse

__all__ = ["CatalogSource", "LandingZone", "SparkSessionResource", "Warehouse"]
