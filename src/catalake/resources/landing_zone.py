from catalake.platform import uris
from dagster import ConfigurableResource


class LandingZone(ConfigurableResource):
    """The landing root: raw landed events, a local folder or a URI (s3://bucket/prefix), with
    the layout that says where each day's files are below it (see landing-zone.md, layouts.py)."""

    path: str
    layout: str = "day"
    start_date: str | None = None  # CATALAKE_START_DATE; else the landing's first day
    increment_seconds: int = 30  # CATALAKE_INCREMENT_SECONDS: how often the landing sensor looks

    @property
    def root(self) -> str:
        return uris.normalize(self.path)
