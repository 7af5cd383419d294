from pathlib import Path

from dagster import ConfigurableResource

from catalake.platform.config import catalog_roots


class CatalogSource(ConfigurableResource):
    """The xRegistry catalog files/directories the platform is driven by.

    Data schema files are read only under `schema_roots` (default: the catalog's own folders).
    `owners` own the tables whose group and message name none (`labels.owner`).
    """

    paths: list[str]
    schema_roots: list[str] = []
    owners: list[str] = []  # CATALAKE_OWNERS

    def load(self):
        """The resolved catalog (imported here: a code location's load reads its state, not the catalog)."""
        from catalake.platform.catalog import load_catalog

        return load_catalog(self.paths)

    def roots(self) -> list[Path]:
        return [Path(p) for p in self.schema_roots] or list(catalog_roots(self.paths))

    def tables(self, catalog=None) -> list:
        """The message tables of the catalog (loaded when not given); CatalogError names every problem."""
        from catalake.platform.warehouse.message_tables import message_tables

        return message_tables(catalog if catalog is not None else self.load(), self.roots())[0]
