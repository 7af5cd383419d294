"""catalake as a Dagster component: the code location itself (`definitions.py` is one instance,
configured by the environment), or one `defs.yaml` per catalog in a team's own Dagster project.

    type: catalake.CatalakeComponent
    attributes:
      key_prefix: payments
      catalog: "{{ project_root }}/catalogs/payments"
      landing: s3://landing/payments
      warehouse: s3://lake/payments

Each instance gives its own assets (under `key_prefix`), jobs, schedules, sensors and resources
(named `<prefix>_<name>`); every instance shares the `spark` resource. An attribute left out is
the environment's setting (CATALAKE_CATALOG, CATALAKE_LANDING, ...; see `catalake.platform.config`).

`landing` and `warehouse` may name an environment variable, as Dagster's run config does
(`warehouse: {env: LAKE_URI}`): their resource's field is then an `EnvVar`, resolved by Dagster
when a run starts and never shown in the UI; a load reads the same variable."""

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from dagster import Definitions, EnvVar
from dagster.components import (
    Component,
    ComponentLoadContext,
    Resolvable,
    Resolver,
    Scaffolder,
    ScaffoldRequest,
    scaffold_with,
)

from catalake.defs.catalog.assets import build_catalog_asset, build_catalog_job
from catalake.defs.catalog.messages import catalog_at_load
from catalake.defs.drift.assets import build_drift_asset, build_replay_job
from catalake.defs.events.assets import build_events_asset, daily_partitions
from catalake.defs.events.jobs import build_events_job
from catalake.defs.events.schedules import build_daily_schedule
from catalake.defs.events.sensors import build_landing_sensor
from catalake.defs.maintenance.job import build_compaction_sensor, build_maintenance_job, build_maintenance_schedule
from catalake.defs.names import DEFAULT, SPARK, Names
from catalake.defs.quality.assets import build_data_docs_asset, build_suites_asset
from catalake.defs.quality.validation import build_validate_job
from catalake.leases import leased_in_process_executor
from catalake.platform import uris
from catalake.platform.config import Settings, local_folder
from catalake.platform.errors import SettingsError
from catalake.resources import Configured, LandingZone, Warehouse

DEFS_YAML = """\
type: catalake.CatalakeComponent

attributes:
  # every asset key of this catalog starts with it; jobs, schedules, sensors and resources are
  # named <key_prefix>_<name> (e.g. {name}_events_job)
  key_prefix: {name}
  # the xRegistry catalog: a file or a folder, or a list of them (left out: CATALAKE_CATALOG, the demo)
  # catalog: "{{{{ project_root }}}}/catalogs/{name}"
  # where the producers' files land, and how a day's files are found below it
  # landing: s3://landing-bucket/{name}
  # landing_layout: day
  # where the Delta tables are written: a folder or a URI
  warehouse: "{{{{ project_root }}}}/warehouse/{name}"
  # group_name: {name}
  # owners: ["team:{name}"]
  # start_date: "2026-01-01"
  # spark_conf: {{spark.sql.shuffle.partitions: "8"}}
"""


class CatalakeScaffolder(Scaffolder):
    """`dg scaffold defs catalake.CatalakeComponent <name>`: a defs.yaml that loads as it is (the
    environment's catalog and landing, a warehouse of its own) with every attribute explained."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        name = "_".join(p for p in request.target_path.name.replace("-", "_").split("_") if p) or "catalake"
        (request.target_path / "defs.yaml").write_text(DEFS_YAML.format(name=name))


@scaffold_with(CatalakeScaffolder)
@dataclass
class CatalakeComponent(Component, Resolvable):
    """An xRegistry message catalog as Dagster assets: the catalog table, a Delta table per message
    definition fed by daily partitioned runs (with a dead-letter table, expectation checks and a
    conservation check), the expectation suites, drift proposals, dbt analytics and maintenance.

    Relative paths are taken from the folder of the `defs.yaml`; `{{ project_root }}` names the
    project's. Instances of one project share the `spark` resource: give `spark_conf` on one of
    them, or the same on each."""

    catalog: Annotated[str | list[str] | None, Resolver.default(
        description="The xRegistry catalog: a file or a folder, or a list of them (default: CATALAKE_CATALOG)",
        examples=["{{ project_root }}/catalogs/payments"])] = None
    landing: Annotated[str | dict[str, str] | None, Resolver.default(
        description="Where the producers' files land: a folder or a URI, or {env: VARIABLE} (default: CATALAKE_LANDING)",
        examples=["s3://landing-bucket/payments", {"env": "PAYMENTS_LANDING"}])] = None
    landing_layout: Annotated[str | None, Resolver.default(
        description="Where a day's files are below the landing: day, hive, dated, capture, connect or a template "
        "(default: CATALAKE_LANDING_LAYOUT)", examples=["day", "{source}/{yyyy}/{mm}/{dd}"])] = None
    warehouse: Annotated[str | dict[str, str] | None, Resolver.default(
        description="Where the Delta tables are written: a folder or a URI, or {env: VARIABLE} (default: "
        "CATALAKE_WAREHOUSE)", examples=["s3://lake/payments", {"env": "PAYMENTS_WAREHOUSE"}])] = None
    key_prefix: Annotated[str | list[str] | None, Resolver.default(
        description="Every asset key starts with it; jobs, schedules, sensors and resources are named "
        "<key_prefix>_<name>", examples=["payments"])] = None
    group_name: Annotated[str | None, Resolver.default(
        description="Every asset of the catalog in this group (default: a group per message group)")] = None
    spark_conf: Annotated[dict[str, str] | None, Resolver.default(
        description="Spark settings, over CATALAKE_SPARK_CONF; the instances of a project share one Spark "
        "resource", examples=[{"spark.sql.shuffle.partitions": "8"}])] = None
    owners: Annotated[list[str] | None, Resolver.default(
        description="Owners of the tables: e-mail addresses or team:<name> (a message's labels.owner first)",
        examples=[["team:payments"]])] = None
    start_date: Annotated[str | None, Resolver.default(
        description="The first daily partition, YYYY-MM-DD (default: the landing's first day)")] = None
    local_dir: Annotated[str | None, Resolver.default(
        description="The files a person opens: suites, GX docs, the dbt project (default: beside the warehouse)")] = None
    analytics: Annotated[bool, Resolver.default(
        description="The dbt project, its models, the data docs and the analytics job")] = True

    @property
    def names(self) -> Names:
        prefix = [self.key_prefix] if isinstance(self.key_prefix, str) else list(self.key_prefix or [])
        return Names(prefix=tuple(p for p in prefix if p), group=self.group_name)

    def settings(self, folder: Path, environment: Settings | None = None) -> Settings:
        """The environment's settings with this instance's attributes (paths from `folder`)."""
        base = environment or Settings.from_env()
        given = {}
        if self.catalog is not None:
            paths = [self.catalog] if isinstance(self.catalog, str) else self.catalog
            given["catalog"] = tuple(Path(_located(p, folder)) for p in paths)
        if self.landing is not None:
            given["landing"] = _located(_value(self.landing, "landing"), folder)
        if self.landing_layout is not None:
            given["layout"] = self.landing_layout
        if self.warehouse is not None:
            given["warehouse"] = _located(_value(self.warehouse, "warehouse"), folder)
        if self.spark_conf:
            conf = {**dict(base.spark_conf), **{k: str(v) for k, v in self.spark_conf.items()}}  # YAML may give numbers
            given["spark_conf"] = tuple(sorted(conf.items()))
        if self.owners is not None:
            given["owners"] = tuple(self.owners)
        if self.start_date is not None:
            given["start_date"] = self.start_date
        settings = dataclasses.replace(base, **given)
        local = Path(_located(self.local_dir, folder)) if self.local_dir else None
        names = self.names
        if local is None and names.prefix and uris.is_remote(settings.warehouse) and base.local_dir is None:
            # two instances on object storage would share ./.catalake (suites, GX docs, dbt)
            local = local_folder(settings.warehouse).joinpath(*names.prefix)
        if local is not None:
            settings = dataclasses.replace(settings, local_dir=local)
        if names.prefix and base.dbt is None:
            # two prefixes over one warehouse: a dbt project each (their sources carry their keys)
            settings = dataclasses.replace(settings, dbt=settings.local / "dbt" / "_".join(names.prefix))
        return settings

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        return self.definitions(context.path)

    def definitions(self, folder: Path | None = None) -> Definitions:
        """This instance's definitions, relative paths taken from `folder` (default: here)."""
        settings = self.settings(folder or Path.cwd())
        r = Configured.from_settings(settings)
        if _variable(self.landing):
            r = dataclasses.replace(r, landing=_with(r.landing, path=EnvVar(_variable(self.landing))))
        if _variable(self.warehouse):
            r = dataclasses.replace(r, warehouse=_with(r.warehouse, path=EnvVar(_variable(self.warehouse))))
        return build_definitions(settings, analytics=self.analytics, names=self.names, configured=r)


def _variable(value) -> str | None:
    """The environment variable an attribute names (`{env: NAME}`), else None."""
    return value["env"] if isinstance(value, dict) else None


def _value(value: str | dict, attribute: str) -> str:
    """An attribute's value as this load sees it (a named variable read from the environment)."""
    name = _variable(value)
    if name is None:
        return value
    if set(value) != {"env"} or not isinstance(name, str):
        raise SettingsError(f"{attribute}: {value!r}: a value, or {{env: VARIABLE}}")
    if not os.environ.get(name):
        raise SettingsError(f"{attribute}: the environment variable {name} it names is not set")
    return os.environ[name]


def _with(resource: LandingZone | Warehouse, **fields):
    """`resource` with `fields` replaced (a resource is built whole: its fields are checked then)."""
    return type(resource)(**{**{name: getattr(resource, name) for name in type(resource).model_fields}, **fields})


def _located(path: str, folder: Path) -> str:
    """A URI as it is; a relative local path from `folder`."""
    if uris.is_remote(path) or path.startswith("file:"):
        return path
    local = Path(path).expanduser()
    return str(local if local.is_absolute() else (folder / local).resolve())


def build_definitions(settings: Settings | None = None, analytics: bool = True, names: Names = DEFAULT,
                      configured: Configured | None = None) -> Definitions:
    """Everything of the code location (or of one component instance, named by `names`), built
    from its resources: `configured`, else the ones `settings` say. `analytics=False` leaves out
    the dbt project, the data docs and their job (`catalake run --no-analytics` does not load them)."""
    settings = settings or Settings.from_env()
    r = configured or Configured.from_settings(settings)
    loaded = catalog_at_load(r.catalog_source)  # read once for every definition built from it
    partitions = daily_partitions(r, names)
    events = build_events_asset(r, partitions, loaded, names)
    events_job = build_events_job(partitions, events, names)
    assets = [build_catalog_asset(names), build_suites_asset(names), events, build_drift_asset(partitions, names)]
    maintenance_job = build_maintenance_job(partitions, names)
    jobs = [build_catalog_job(names, analytics), events_job, build_validate_job(partitions, names),
            build_replay_job(partitions, names), maintenance_job]
    resources = {SPARK: r.spark, names.of("warehouse"): r.warehouse, names.of("catalog_source"): r.catalog_source,
                 names.of("landing"): r.landing}
    if analytics:
        from catalake.defs.analytics.project import build_analytics_job, build_dbt_project_asset, manifest_at_load

        docs = build_data_docs_asset(partitions, names)
        assets += [build_dbt_project_asset(names), docs]
        analytics_assets = [docs]
        if manifest_at_load(r, loaded) is not None:  # parsed by a `catalake_job` run: read only
            from catalake.defs.analytics.dbt_assets import build_dbt_assets, dbt_cli, loaded_project

            project = loaded_project(r.warehouse)
            dbt = build_dbt_assets(partitions, project, names)
            assets.append(dbt)
            analytics_assets.insert(0, dbt)
            resources[names.of("dbt")] = dbt_cli(project)
        jobs.append(build_analytics_job(partitions, analytics_assets, names))
    return Definitions(
        assets=assets,
        jobs=jobs,
        schedules=[build_daily_schedule(events_job, partitions, names),
                   build_maintenance_schedule(maintenance_job, partitions, names)],
        sensors=[build_landing_sensor(events_job, r, partitions, names),
                 build_compaction_sensor(events_job, maintenance_job, names)],
        resources=resources,
        # One Spark session per run: steps share the process instead of each starting a JVM. Leased:
        # a run says which process runs it and beats a heartbeat, so a dead one never holds its day.
        executor=leased_in_process_executor,
    )
