from dagster import ConfigurableResource

from catalake.platform import defaults, uris


class LandingZone(ConfigurableResource):
    """The landing root: raw landed events, a local folder or a URI (s3://bucket/prefix), with
    the layout that says where each day's files are below it (see landing-zone.md, layouts.py)."""

    path: str
    layout: str = defaults.LAYOUT
    start_date: str | None = None  # CATALAKE_START_DATE; else the landing's first day
    increment_seconds: int = defaults.INCREMENT_SECONDS  # CATALAKE_INCREMENT_SECONDS: how often the landing sensor looks

    @property
    def root(self) -> str:
        return uris.normalize(self.path)
