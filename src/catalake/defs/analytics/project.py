"""The catalog's dbt project as an asset of `catalake_job`: a run prepares it (its `sources.yml`
from the catalog) and parses it into `target/manifest.json`. The code location's state holds that
manifest (catalog/state.py); a load builds the dbt assets from it, and writes or parses nothing.

Kept apart from dbt_assets.py, which imports dagster-dbt (1.5 s): a state without a manifest has
no dbt assets to build."""

import json
from pathlib import Path

from dagster import AssetExecutionContext, AssetSelection, MaterializeResult, MetadataValue, asset, define_asset_job

from catalake.resources import Warehouse

from ..failures import failing_plainly
from ..names import DEFAULT, Names


def manifest_path(warehouse: Warehouse) -> Path:
    return warehouse.dbt_dir / "target" / "manifest.json"


def build_dbt_project_asset(names: Names = DEFAULT):
    @asset(key=names.dbt_project, group_name=names.group_of("analytics"), kinds={"dbt"}, deps=[names.catalog],
           tags={"layer": "analytics"}, required_resource_keys=names.resource_keys("catalog_source", "warehouse"))
    @failing_plainly
    def dbt_project(context: AssetExecutionContext) -> MaterializeResult:
        """The catalog's dbt project: the generic models with a `sources.yml` naming every message
        table (and the dead-letter and catalog tables), prepared under the warehouse's `dbt/`
        (only changed files rewritten) and parsed into `target/manifest.json`. The code location
        builds its dbt assets from that manifest, kept in its state (refreshed by the
        `message_catalog` step of the same run): after the first materialization, or one that changed
        the sources, reload the code location to see the models as they are now (`dagster dev`
        prepares the project as it loads)."""
        from .dbt_assets import dbt_project as prepare, ensure_manifest

        resources = names.resources(context)
        project = prepare(resources.warehouse, resources.catalog_source.tables())
        manifest = ensure_manifest(project, resources.warehouse)
        nodes = json.loads(manifest.read_text())
        models = sorted(n["name"] for n in nodes["nodes"].values() if n["resource_type"] == "model")
        return MaterializeResult(metadata={
            "path": MetadataValue.path(str(project.project_dir)),
            "manifest": MetadataValue.path(str(manifest)),
            "sources": len(nodes["sources"]),
            "models": MetadataValue.md("\n".join(f"- `{m}`" for m in models)),
        })

    return dbt_project


def build_analytics_job(partitions_def, assets: list, names: Names = DEFAULT):
    return define_asset_job(
        names.of("analytics_job"),
        selection=AssetSelection.assets(*assets),
        partitions_def=partitions_def,
        description="dbt build of one day's analytics models over the per-message tables, and the day's GX data docs.",
    )
