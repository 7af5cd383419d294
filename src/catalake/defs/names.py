"""What one catalake instance calls its assets, jobs, schedules, sensors and resources.

The bundled code location has no prefix: its names are the ones the README and the CLI use
(`message_catalog`, `events_job`, `warehouse`). Each instance of `CatalakeComponent` has its
`key_prefix`, so that two catalogs in one Dagster project give two disjoint sets of definitions;
the Spark resource is the one thing they share (one JVM per process)."""

from dataclasses import dataclass

from dagster import AssetKey

SPARK = "spark"  # one session per process whatever the number of instances


@dataclass(frozen=True)
class Names:
    prefix: tuple[str, ...] = ()
    group: str | None = None  # every asset in this group; None: catalog, events, a group per message group...

    def key(self, *path: str) -> AssetKey:
        return AssetKey([*self.prefix, *path])

    def of(self, name: str) -> str:
        """A job, schedule, sensor, op or resource name of this instance."""
        return "_".join([*self.prefix, name])

    def group_of(self, default: str) -> str:
        return self.group or default

    @property
    def catalog(self) -> AssetKey:
        return self.key("message_catalog")

    @property
    def deadletter(self) -> AssetKey:
        return self.key("deadletter")

    @property
    def suites(self) -> AssetKey:
        return self.key("expectation_suites")

    @property
    def dbt_project(self) -> AssetKey:
        return self.key("dbt_project")

    def message(self, message) -> AssetKey:
        """The asset of a message definition: its table's path under `messages/`."""
        return self.key(*message.asset_path)

    def resource_keys(self, *names: str) -> set[str]:
        return {SPARK if n == SPARK else self.of(n) for n in names}

    def resources(self, context) -> "Resources":
        return Resources(self, context.resources)


class Resources:
    """The resources of an instance as one step sees them: `catalog_source`, `landing`,
    `warehouse`, `dbt` under this instance's keys, `spark` shared."""

    def __init__(self, names: Names, resources):
        self._names, self._resources = names, resources

    def __getattr__(self, name: str):
        return getattr(self._resources, SPARK if name == SPARK else self._names.of(name))


DEFAULT = Names()
