
from dagster import ConfigurableResource

from catalake.platform.catalog import Catalog, load_catalog


class CatalogSource(ConfigurableResource):
    """The xRegistry catalog files/directories the platform is driven by."""

    paths: list[str]

    def load(self) -> Catalog:
        return load_catalog(self.paths)
