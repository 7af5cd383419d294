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

import asyncio
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from dagster import DailyPartitionsDefinition, Definitions, EnvVar, StateBackedComponent
from dagster.components import (ComponentLoadContext, DefsStateConfig, DefsStateConfigArgs, Resolvable,
                                ResolvedDefsStateConfig, Resolver, scaffold_with)
from dagster_shared.serdes.objects.models.defs_state_info import DefsStateManagementType

from catalake.defs.catalog.assets import build_catalog_asset, build_catalog_job
from catalake.defs.catalog.current import build_current_check, build_current_sensor
from catalake.defs.catalog.state import (DefsState, StateKeeper, changed_files, file_keeper, flagged, refresh,
                                         start_date)
from catalake.defs.drift.assets import build_drift_asset, build_replay_job
from catalake.defs.events.assets import build_events_asset, deadletter_at_load
from catalake.defs.events.jobs import build_events_job
from catalake.defs.events.schedules import build_daily_schedule
from catalake.defs.events.sensors import build_landing_sensor
from catalake.defs.maintenance.job import (build_checkpoint_job, build_compaction_sensor, build_maintenance_job,
                                          build_maintenance_schedule)
from catalake.defs.names import DEFAULT, SPARK, Names
from catalake.defs.quality.assets import build_data_docs_asset, build_suites_asset
from catalake.defs.quality.validation import build_validate_job
from catalake.leases import leased_in_process_executor
from catalake.platform import uris
from catalake.platform.config import Settings, local_folder
from catalake.platform.errors import SettingsError
from catalake.resources import Configured, LandingZone, Warehouse
from catalake.scaffolder import CatalakeScaffolder


@scaffold_with(CatalakeScaffolder)
@dataclass
class CatalakeComponent(StateBackedComponent, Resolvable):
    """An xRegistry message catalog as Dagster assets: the catalog table, a Delta table per message
    definition fed by daily partitioned runs (with a dead-letter table, expectation checks and a
    conservation check), the expectation suites, drift proposals, dbt analytics and maintenance.

    Relative paths are taken from the folder of the `defs.yaml`; `{{ project_root }}` names the
    project's. Instances of one project share the `spark` resource: give `spark_conf` on one of
    them, or the same on each.

    State-backed: a load builds the definitions from the state (defs/catalog/state.py), written by
    `dg utils refresh-defs-state`, by `dagster dev` and `dg` as they load (unless
    `defs_state: {refresh_if_dev: false}`), and by a `catalake_job` run whose catalog changed.
    Without a state the catalog is read as the location loads, and a warning says how to write it."""

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
    defs_state: ResolvedDefsStateConfig = field(default_factory=DefsStateConfigArgs.local_filesystem)

    @property
    def defs_state_config(self) -> DefsStateConfig:
        return DefsStateConfig.from_args(self.defs_state, default_key=f"CatalakeComponent[{self.state_name}]")

    @property
    def state_name(self) -> str:
        """What tells this instance's state from the others' of the project: its key prefix."""
        return "/".join(self.names.prefix) or "catalake"

    @classmethod
    def load(cls, attributes, context: ComponentLoadContext) -> "CatalakeComponent":
        component = super().load(attributes, context)
        # refreshing the state (`dg utils refresh-defs-state`, a catalog run) is given no context:
        # relative paths are from the defs.yaml's folder, as when the definitions are built
        component._folder, component._project_root = context.path, context.project_root
        return component

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

    def configured(self, folder: Path | None = None) -> Configured:
        """This instance's resources, relative paths taken from `folder` (default: here)."""
        r = Configured.from_settings(self.settings(folder or Path.cwd()))
        if _variable(self.landing):
            r = dataclasses.replace(r, landing=_with(r.landing, path=EnvVar(_variable(self.landing))))
        if _variable(self.warehouse):
            r = dataclasses.replace(r, warehouse=_with(r.warehouse, path=EnvVar(_variable(self.warehouse))))
        return r

    def write_state_to_path(self, state_path: Path) -> None:
        """The catalog read and checked, its tables derived, the landing's first day listed and,
        with the analytics, the dbt project prepared and parsed: what every load then reads."""
        refresh(state_path, self.configured(getattr(self, "_folder", None)), self.names, self.analytics)

    def build_defs_from_state(self, context: ComponentLoadContext, state_path: Path | None) -> Definitions:
        keeper = StateKeeper(self.configured(context.path), self.names, self.analytics, state_path, self._store)
        how = f"`dg utils refresh-defs-state --defs-state-key '{self.defs_state_config.key}'`"
        return load_definitions(keeper, refresh_first=False, how=how)  # Dagster refreshes under `dagster dev`

    def _store(self, state: DefsState, context) -> str:
        """A catalog run's new state, stored as Dagster stores this component's (`defs_state`):
        Dagster's refresh makes it again (the catalog read again; the dbt manifest the run parsed
        is current, so not parsed again)."""
        from dagster._core.storage.defs_state.base import set_defs_state_storage  # not exported (1.13)

        config = self.defs_state_config
        if config.management_type == DefsStateManagementType.LEGACY_CODE_SERVER_SNAPSHOTS:
            return "kept by the code server: refreshed when it starts"
        with set_defs_state_storage(context.instance.defs_state_storage):
            version = asyncio.run(self.refresh_state(self._project_root))
        return f"refreshed: {config.management_type.value}, version {version}"

    def definitions(self, folder: Path | None = None) -> Definitions:
        """The bundled code location's definitions (definitions.py, no dg project), relative paths
        taken from `folder` (default: here): its state is a file beside the warehouse
        (`state_file`), refreshed as the location loads under `dagster dev`."""
        return build_definitions(analytics=self.analytics, names=self.names, configured=self.configured(folder))


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
    """The bundled code location (or one instance of it, named by `names`), built from its
    resources (`configured`, else the ones `settings` say) and its state file beside the warehouse.
    `analytics=False` leaves out the dbt project, the data docs and their job (`catalake run
    --no-analytics` does not load them)."""
    keeper = file_keeper(configured or Configured.from_settings(settings or Settings.from_env()), names, analytics)
    return load_definitions(keeper, refresh_first=bool(os.environ.get("DAGSTER_IS_DEV_CLI")),
                                how="A `catalake_job` run (`catalake run`, or from the UI)")


def load_definitions(keeper: StateKeeper, *, refresh_first: bool, how: str) -> Definitions:
    """The one path from a state, or none, to an instance's definitions: the dg component's
    (`build_defs_from_state`) and the bundled location's (`build_definitions`). `refresh_first`:
    the state is made anew before the load, as Dagster's state-backed components are under
    `dagster dev`; `how`: how a state is written, said when there is none."""
    return definitions_from_state(keeper.load(refresh_first=refresh_first, how=how))


def definitions_from_state(keeper: StateKeeper) -> Definitions:
    """Everything of one instance, from its resources and its loaded state alone (no catalog
    read, no dbt parse, no landing listed once a day landed)."""
    r, state, analytics, names = keeper.configured, keeper.loaded, keeper.analytics, keeper.names
    changed = changed_files(state, r)
    specs = state.message_specs
    if state.error is not None:
        specs = [flagged(spec, state.error) for spec in specs]
    partitions = DailyPartitionsDefinition(start_date=start_date(r, state))
    events = build_events_asset(partitions, specs, deadletter_at_load(state.deadletter_spec, state.error), names)
    events_job = build_events_job(partitions, events, names)
    assets = [build_catalog_asset(names, keeper, changed), build_suites_asset(names), events,
              build_drift_asset(partitions, names)]
    maintenance_job = build_maintenance_job(partitions, names)
    checkpoint_job = build_checkpoint_job(names)
    jobs = [build_catalog_job(names, analytics), events_job, build_validate_job(partitions, names),
            build_replay_job(partitions, names), maintenance_job, checkpoint_job]
    resources = {SPARK: r.spark, names.of("warehouse"): r.warehouse, names.of("catalog_source"): r.catalog_source,
                 names.of("landing"): r.landing}
    if analytics:
        from catalake.defs.analytics.project import build_analytics_job, build_dbt_project_asset

        docs = build_data_docs_asset(partitions, names)
        assets += [build_dbt_project_asset(names), docs]
        analytics_assets = [docs]
        if state.manifest is not None and r.warehouse.dbt_dir.is_dir():  # parsed when the state was made
            from catalake.defs.analytics.dbt_assets import build_dbt_assets, dbt_cli, loaded_project

            project = loaded_project(r.warehouse)
            dbt = build_dbt_assets(partitions, project, state.manifest, names)
            assets.append(dbt)
            analytics_assets.insert(0, dbt)
            resources[names.of("dbt")] = dbt_cli(project)
        jobs.append(build_analytics_job(partitions, analytics_assets, names))
    return Definitions(
        assets=assets,
        asset_checks=[build_current_check(names, state, r)],
        jobs=jobs,
        schedules=[build_daily_schedule(events_job, partitions, names),
                   build_maintenance_schedule(maintenance_job, partitions, names)],
        sensors=[build_landing_sensor(events_job, checkpoint_job, r, partitions, names),
                 build_compaction_sensor(events_job, maintenance_job, names),
                 build_current_sensor(names, state, r)],
        resources=resources,
        # One Spark session per run: steps share the process instead of each starting a JVM. Leased:
        # a run says which process runs it and beats a heartbeat, so a dead one never holds its day.
        executor=leased_in_process_executor,
    )
