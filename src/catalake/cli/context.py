"""What a command works with: the environment's settings, read here and nowhere else on the
command line, and what they configure, through the same resources a code location is built
from (the catalog source, the warehouse and its store, the Spark session), each built when first
asked for (a command that only reads the catalog starts no JVM)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..platform.config import Settings

if TYPE_CHECKING:
    from ..platform.catalog import Catalog
    from ..platform.warehouse.message_tables import MessageTable
    from ..platform.warehouse.store import DeltaStore
    from ..resources import Configured


@dataclass
class Context:
    given: Settings | None = None  # else the environment's, read when first asked for

    @cached_property
    def settings(self) -> Settings:
        """The settings (a SettingsError names the variable and the rule)."""
        return self.given if self.given is not None else Settings.from_env()

    @cached_property
    def configured(self) -> Configured:
        """The resources the settings say: the same a code location is built from."""
        from ..resources import Configured

        return Configured.from_settings(self.settings)

    @cached_property
    def catalog(self) -> Catalog:
        """The configured catalog (CatalogError names every problem)."""
        return self.configured.catalog_source.load()

    @cached_property
    def tables(self) -> list[MessageTable]:
        return self.configured.catalog_source.tables(self.catalog)

    @property
    def spark(self):
        return self.configured.spark.session

    @cached_property
    def store(self) -> DeltaStore:
        """The warehouse's tables, through the Spark resource (started when a table needs it)."""
        return self.configured.warehouse.store(self.configured.spark)
