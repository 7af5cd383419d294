"""The dbt project (`dbt_project/`) as Dagster assets: every model downstream of the
per-message assets (sources carry `meta.dagster.asset_key`), daily partitions passed as the dbt
var `partition`, dbt tests as asset checks."""

import json
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

from dagster import AssetExecutionContext, AssetSelection, DailyPartitionsDefinition, define_asset_job
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from catalake.resources import Warehouse

# the repository's dbt project (catalake is installed editable from the repository)
DBT_PROJECT_DIR = Path(os.environ.get("CATALAKE_DBT_PROJECT", Path(__file__).resolve().parents[3] / "dbt_project"))
WATCHED = ("models", "macros", "dbt_project.yml", "profiles.yml")


def dbt_project() -> DbtProject:
    return DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)


def dbt_cli() -> DbtCliResource:
    """dbt from this Python's environment, found even when its bin folder is not on PATH."""
    beside = Path(sys.executable).parent / "dbt"
    return DbtCliResource(project_dir=dbt_project(), dbt_executable=str(beside) if beside.exists() else shutil.which("dbt") or "dbt")


def ensure_manifest(project: DbtProject) -> Path:
    """`dbt parse` when the manifest is missing or older than the project's files (dagster-dbt
    loads the manifest, it does not parse outside `dagster dev`)."""
    manifest = project.manifest_path
    files = [p for w in WATCHED for p in ([DBT_PROJECT_DIR / w] if (DBT_PROJECT_DIR / w).is_file() else (DBT_PROJECT_DIR / w).rglob("*"))]
    newest = max((p.stat().st_mtime for p in files if p.is_file()), default=0)
    if not manifest.exists() or manifest.stat().st_mtime < newest:
        dbt_cli().cli(["parse", "--quiet"], target_path=project.target_path).wait()
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


class Translator(DagsterDbtTranslator):
    def get_group_name(self, dbt_resource_props) -> str:
        return "analytics"


def build_dbt_assets(partitions_def: DailyPartitionsDefinition):
    project = dbt_project()

    @dbt_assets(
        manifest=ensure_manifest(project),
        project=project,
        partitions_def=partitions_def,
        dagster_dbt_translator=Translator(),
        name="analytics",
    )
    def analytics(context: AssetExecutionContext, dbt: DbtCliResource, warehouse: Warehouse):
        """dbt build of one day: events_daily, deadletter_daily, catalog_coverage and the marts,
        with their dbt tests as asset checks."""
        args = ["build", "--vars", json.dumps({"partition": context.partition_key})]
        # dbt-duckdb reads the Delta tables from CATALAKE_WAREHOUSE (profiles.yml, sources.yml);
        # the dbt subprocess copies this process's environment when it starts
        with _environment(CATALAKE_WAREHOUSE=str(Path(warehouse.path).resolve())):
            invocation = dbt.cli(args, context=context)
        yield from invocation.stream()

    return analytics


def build_analytics_job(partitions_def: DailyPartitionsDefinition):
    return define_asset_job(
        "analytics_job",
        selection=AssetSelection.groups("analytics") | AssetSelection.assets("data_docs"),
        partitions_def=partitions_def,
        description="dbt build of one day's analytics models over the per-message tables, and the day's GX data docs.",
    )
