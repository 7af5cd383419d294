from pathlib import Path

from dagster import ConfigurableResource


class LandingZone(ConfigurableResource):
    """The landing root: one folder per day of raw landed events (see landing-zone.md)."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path)
