"""The catalog's dbt project as Dagster assets: every model downstream of the per-message assets
(sources carry `meta.dagster.asset_key`), daily partitions built a range at a time (a backfill's
range of days in one `dbt build`, its first and last day passed as `min_date`/`max_date` in the
environment, which leaves dbt's partial parsing alone), dbt tests as asset checks. The project is
the repository's `dbt_project/` with the configured catalog's sources, prepared under the warehouse (platform/warehouse/dbt_sources.py) by a run of
the `dbt_project` asset (analytics/project.py) or a refresh of the code location's state, which
holds its manifest (catalog/state.py): a load builds the dbt assets from that."""

import datetime as dt
import json
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, AssetSpec, BackfillPolicy, DailyPartitionsDefinition
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets
from dagster_dbt.core.dbt_event_iterator import DbtEventIterator

from catalake.platform.config import DAYS_PER_RUN
from catalake.resources import Warehouse

from ..names import DEFAULT, Names
from .environment import dbt_environment, parsed_as_built, parsed_with


def dbt_project(warehouse: Warehouse, tables: list) -> DbtProject:
    """The catalog's dbt project over its message tables `tables`, prepared in the warehouse's
    dbt folder from its template (only changed files are rewritten)."""
    from catalake.platform.warehouse.dbt_sources import prepare_project

    folder = prepare_project(Path(warehouse.dbt_template), warehouse.dbt_dir, tables)
    return DbtProject(project_dir=folder, profiles_dir=folder)


def dbt_cli(project: DbtProject) -> DbtCliResource:
    """dbt from this Python's environment, found even when its bin folder is not on PATH."""
    beside = Path(sys.executable).parent / "dbt"
    return DbtCliResource(project_dir=project, dbt_executable=str(beside) if beside.exists() else shutil.which("dbt") or "dbt")


def ensure_manifest(project: DbtProject, warehouse: Warehouse) -> Path:
    """`dbt parse` when the manifest is missing, older than the project's files, or parsed with
    another profile environment (dagster-dbt loads the manifest, it does not parse outside
    `dagster dev`). The parse leaves `partial_parse.msgpack` in target/, which every build
    starts from (dagster-dbt copies it into the build's own target folder)."""
    manifest = project.manifest_path
    root = Path(project.project_dir)
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_relative_to(root / "target") and not p.is_relative_to(root / "logs")]
    newest = max((p.stat().st_mtime for p in files), default=0)
    if not manifest.exists() or manifest.stat().st_mtime < newest or not parsed_as_built(warehouse):
        environment = dbt_environment(warehouse)
        with _environment(**environment):
            dbt_cli(project).cli(["parse", "--quiet"], target_path=project.target_path).wait()
        parsed_with(warehouse).write_text(json.dumps(environment, sort_keys=True))
    return manifest


@contextmanager
def _environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _release(invocation) -> None:
    """Close this process's DuckDB file that reading the column metadata opened (dbt-duckdb keeps
    it in a class-level environment), so that the next dbt build can lock it."""
    if invocation.adapter is not None:
        invocation.adapter.cleanup_connections()
    try:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    except ImportError:
        return
    with DuckDBConnectionManager._LOCK:
        if DuckDBConnectionManager._ENV is not None:
            DuckDBConnectionManager._ENV.close()
            DuckDBConnectionManager._ENV = None


class Translator(DagsterDbtTranslator):
    """The models in `analytics` (or the instance's group), every key (the sources' message
    assets too) under the instance's prefix."""

    def __init__(self, names: Names = DEFAULT):
        super().__init__()
        self.names = names

    def get_asset_key(self, dbt_resource_props) -> AssetKey:
        return self.names.key(*super().get_asset_key(dbt_resource_props).path)

    def get_group_name(self, dbt_resource_props) -> str:
        return self.names.group_of("analytics")

    def get_asset_spec(self, manifest, unique_id: str, project) -> AssetSpec:
        """A source's spec is only its key: sources are the message assets, defined by catalake
        (dagster-dbt makes every source's whole spec to find colliding keys: 0.7 ms each, seconds
        at thousands of message tables)."""
        if unique_id.startswith("source."):
            return AssetSpec(key=self.get_asset_key(manifest["sources"][unique_id]))
        return super().get_asset_spec(manifest, unique_id, project)


def build_dbt_assets(partitions_def: DailyPartitionsDefinition, project: DbtProject, manifest: dict,
                     names: Names = DEFAULT):

    @dbt_assets(
        manifest=manifest,  # from the code location's state
        project=project,
        partitions_def=partitions_def,
        dagster_dbt_translator=Translator(names),
        name=names.of("analytics"),
        required_resource_keys=names.resource_keys("dbt", "warehouse"),
        backfill_policy=BackfillPolicy.multi_run(DAYS_PER_RUN),  # the classification's ranges
    )
    def analytics(context: AssetExecutionContext):
        """dbt build of one day, or of a backfill's range of days at once: events_daily,
        deadletter_daily, expectation_failures_daily, catalog_coverage and the marts, with their
        dbt tests as asset checks."""
        from catalake.leases import wait_for_days

        wait_for_days(context.instance, context.partition_keys, by=f"run {context.run_id}", run=context.run,
                      say=context.log.info)
        resources = names.resources(context)
        dbt, warehouse = resources.dbt, resources.warehouse
        window = context.partition_time_window
        # the dbt subprocess copies this process's environment when it starts. The range goes there
        # too, not in --vars: a changed var makes dbt parse the whole project again
        with _environment(**dbt_environment(warehouse),
                          CATALAKE_MIN_DATE=window.start.date().isoformat(),
                          CATALAKE_MAX_DATE=(window.end - dt.timedelta(days=1)).date().isoformat()):
            invocation = dbt.cli(["build"], context=context)
            # the build first, then each model's columns and column lineage (dagster-dbt reads them
            # through the dbt adapter in this process): DuckDB lets one process at a time open the
            # file, so reading while dbt writes would fail one of them
            events = list(invocation.stream())
            try:
                yield from DbtEventIterator(iter(events), dbt_cli_invocation=invocation).fetch_column_metadata()
            finally:
                _release(invocation)

    return analytics


def loaded_project(warehouse: Warehouse) -> DbtProject:
    """The project a `dbt_project` run prepared, as the code location loads it (nothing written)."""
    return DbtProject(project_dir=warehouse.dbt_dir, profiles_dir=warehouse.dbt_dir)
