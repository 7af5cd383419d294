"""One asset per message definition: its Delta table under `messages/`."""

from dagster import AssetKey, AssetSpec, MetadataValue

from catalake.platform import uris
from catalake.platform.catalog import Catalog, CatalogError, load_catalog
from catalake.platform.catalog.model import MessageDefinition, slug
from catalake.platform.config import Settings
from catalake.platform.message_table import message_table, table_fingerprint

from .metadata import column_schema

CATALOG_KEY = AssetKey("message_catalog")


def message_key(message: MessageDefinition) -> AssetKey:
    return AssetKey(message.asset_path)


def message_spec(message: MessageDefinition, catalog: Catalog, settings: Settings) -> AssetSpec:
    description = message.get("description") or message.get("name") or message.message_id
    metadata = {
        "xid": message.xid,
        "dagster/table_name": message.table_name,
        "envelope": message.envelope or "none",
        "protocol": message.protocol or "any",
        "placeholders": ", ".join(message.placeholders) or "none",
    }
    table = message_table(message, catalog, settings.roots)
    metadata["dagster/column_schema"] = column_schema(table.schema)
    metadata["path"] = MetadataValue.path(uris.join(settings.warehouse, table.name))
    if table.data_schema is not None:
        metadata["data_schema"] = table.data_schema.reference or f"inline {table.data_schema.format}"
    if "catalake.schema_error" in table.schema["data"].metadata:
        metadata["untyped_payload"] = table.schema["data"].metadata["catalake.schema_error"]
    return AssetSpec(
        key=message_key(message),
        description=f"{description}\n\n`{message.xid}` -> Delta table `{message.table_name}`",
        group_name=slug(message.group_id),
        kinds={"spark", "delta"},
        deps=[CATALOG_KEY],
        metadata=metadata,
        tags={"layer": "messages"},
        code_version=table_fingerprint(table),
        skippable=True,  # a day that does not feed the table leaves its partition unmaterialized
    )


def message_specs(settings: Settings) -> list[AssetSpec]:
    """Specs for the configured catalog as it is when the code location loads.

    An invalid catalog gives no specs here (the code location still loads); materializing
    `message_catalog` shows its problems.
    """
    try:
        catalog = load_catalog(settings.catalog)
    except CatalogError:
        return []
    return [message_spec(m, catalog, settings) for m in catalog]
