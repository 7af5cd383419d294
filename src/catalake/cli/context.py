"""What a command works with, wired once from the settings: the catalog, its message tables, the
Spark session and the warehouse store, each built when first asked for (a command that only
reads the catalog starts no JVM)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..platform.catalog import Catalog, load_catalog
from ..platform.config import Settings

if TYPE_CHECKING:
    from ..platform.warehouse.message_tables import MessageTable


@dataclass
class Context:
    settings: Settings
    app_name: str = "catalake"

    @classmethod
    def from_env(cls, app_name: str = "catalake") -> "Context":
        return cls(Settings.from_env(), app_name)

    @cached_property
    def catalog(self) -> Catalog:
        """The configured catalog (CatalogError names every problem)."""
        return load_catalog(self.settings.catalog)

    @cached_property
    def tables(self) -> list["MessageTable"]:
        from ..platform.warehouse.message_tables import message_tables  # Spark's types: not for commands without tables

        return message_tables(self.catalog, self.settings.roots)[0]

    @cached_property
    def spark(self):
        from ..platform.spark import build_session

        return build_session(self.settings.spark_master, app_name=self.app_name, conf=dict(self.settings.spark_conf))

    @cached_property
    def store(self):
        from ..platform.warehouse.store import DeltaStore

        return DeltaStore(lambda: self.spark, self.settings.warehouse, self.settings.delta_backend,
                          commit_threads=self.settings.commit_threads)
