from dagster import ConfigurableResource

from catalake.platform import defaults, uris


class LandingZone(ConfigurableResource):
    """The landing root: raw landed events, a local folder or a URI (s3://bucket/prefix), with
    the layout that says where each day's files are below it (see landing-zone.md, layouts.py)."""

    path: str
    layout: str = defaults.LAYOUT
    start_date: str | None = None  # CATALAKE_START_DATE; else the landing's first day
    increment_seconds: int = defaults.INCREMENT_SECONDS  # CATALAKE_INCREMENT_SECONDS: how often the landing sensor looks
    freshness: str = str(int(defaults.FRESHNESS_SECONDS))  # CATALAKE_FRESHNESS_SECONDS: each table's target

    def cadence(self, target_file_bytes: int):
        """When an increment commits each table (runs/cadence.py): the freshness targets, the
        sensor's interval and a run's launch before the next increment, the target file size."""
        from catalake.platform.config import parse_freshness
        from catalake.platform.runs.cadence import LAUNCH_SECONDS, Cadence

        default, by_name = parse_freshness(self.freshness)
        return Cadence(freshness=default, by_name=by_name, interval=self.increment_seconds + LAUNCH_SECONDS,
                       target_bytes=target_file_bytes)

    @property
    def root(self) -> str:
        return uris.normalize(self.path)
