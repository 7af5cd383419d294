"""Dagster resources wrapping the engine: Spark session, warehouse storage, catalog source."""

from .catalog import CatalogSource
from .landing import LandingZone
from .spark import SparkSessionResource
from .warehouse import Warehouse

__all__ = ["CatalogSource", "LandingZone", "SparkSessionResource", "Warehouse"]
