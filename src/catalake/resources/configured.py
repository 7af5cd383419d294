"""The resources of one code location (or component instance), built once from its settings.

They are the one way settings reach the definitions: the assets, checks, sensors and schedules
are built from them when the location loads (the tables' locations and owners, the first day,
the dbt project), and a run reads its own from its context (how files are sized, which engine
classifies a small day). A field may be an `EnvVar`: Dagster resolves it when a run starts, and
a load reads the same variable from its own environment (`at_load`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from catalake.platform import uris
from catalake.platform.config import Settings

from .catalog_source import CatalogSource
from .landing_zone import LandingZone
from .spark_session import SparkSessionResource
from .warehouse import Warehouse

T = TypeVar("T")


def at_load(value: T) -> T:
    """A field's value while the definitions are built: an `EnvVar`'s from this process's environment."""
    resolve = getattr(type(value), "get_value", None)
    return resolve(value) if resolve is not None else value


@dataclass(frozen=True)
class Configured:
    warehouse: Warehouse
    catalog_source: CatalogSource
    landing: LandingZone
    spark: SparkSessionResource

    @classmethod
    def from_settings(cls, settings: Settings) -> "Configured":
        """The resources `settings` say, with their defaults (one `spark` object per Spark setting)."""
        return cls(
            warehouse=Warehouse(
                path=settings.warehouse, delta_backend=settings.delta_backend, local_path=str(settings.local),
                commit_threads=settings.commit_threads, target_file_bytes=settings.target_file_bytes,
                compact_files=settings.compact_files, retention_hours=settings.retention_hours,
                record_empty=settings.record_empty, dbt_path=str(settings.dbt_dir), dbt_template=str(settings.dbt_template)),
            catalog_source=CatalogSource(paths=[str(p) for p in settings.catalog],
                                         schema_roots=[str(p) for p in settings.schema_roots], owners=list(settings.owners)),
            landing=LandingZone(path=settings.landing, layout=settings.layout, start_date=settings.start_date,
                                increment_seconds=settings.increment_seconds, freshness=settings.freshness),
            spark=spark_resource(settings.spark_master, settings.spark_conf, settings.engine, settings.local_task_bytes,
                                 settings.compiled_path),
        )

    @property
    def warehouse_root(self) -> str:
        """The warehouse's location as the definitions name it (tables' URIs in their metadata)."""
        return uris.normalize(at_load(self.warehouse.path))

    @property
    def landing_root(self) -> tuple[str, str]:
        """The landing's location and layout as the definitions list it (first day, the sensor)."""
        return uris.normalize(at_load(self.landing.path)), at_load(self.landing.layout)


@lru_cache
def spark_resource(master: str, conf: tuple[tuple[str, str], ...], engine: str, local_task_bytes: int,
                   compiled_path: bool) -> SparkSessionResource:
    """One resource object per Spark setting: every instance of a project shares it (Dagster
    merges definitions whose resources under one key are the same object; a process has one
    Spark session anyway)."""
    return SparkSessionResource(master=master, conf=dict(conf), engine=engine, local_task_bytes=local_task_bytes,
                                compiled_path=compiled_path)
