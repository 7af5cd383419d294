from dagster import ConfigurableResource

from catalake.platform import uris


class LandingZone(ConfigurableResource):
    """The landing root: one folder per day of raw landed events (see landing-zone.md), a local
    folder or a URI (s3://bucket/prefix)."""

    path: str

    @property
    def root(self) -> str:
        return uris.normalize(self.path)
