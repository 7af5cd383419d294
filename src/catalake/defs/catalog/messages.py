"""One asset per message definition: its Delta table under `messages/`.

The specs are made when the code location's state is (catalog/state.py): while the catalog is
invalid the state keeps the last valid ones, and the UI shows each saying what is wrong, instead
of assets without a group or a description."""

import re
from dataclasses import dataclass

from dagster import AssetSpec, MetadataValue

from catalake.platform import uris
from catalake.platform.catalog import Catalog, CatalogError, load_catalog
from catalake.platform.catalog.model import MessageDefinition, slug
from catalake.platform.catalog.normalize import protocol_family
from catalake.platform.records.protocols import BY_FAMILY
from catalake.platform.schemas import keys
from catalake.platform.warehouse.message_tables import MessageTable, message_table, message_tables, table_fingerprint
from catalake.resources import CatalogSource, Configured, at_load

from ..metadata import code_version, column_schema, stats_columns
from ..names import DEFAULT, Names


def fed_by(names: Names) -> str:
    return (f"Written by the step `{names.of('classify_events')}` of `{names.of('events_job')}`, one partition a "
            f"day: the schedule `{names.of('daily_events_schedule')}` runs yesterday's, the sensor "
            f"`{names.of('landing_sensor')}` (when on) what just landed.")


def short_name(message: MessageDefinition) -> str:
    """The message id without its group's prefix (`bikeshare.rides.kafka.RideEnded` -> `RideEnded`)."""
    return message.message_id.removeprefix(message.group_id + ".") or message.message_id


def protocol_name(message: MessageDefinition) -> str | None:
    """The binding's name as people write it (Kafka, MQTT, AMQP, HTTP, NATS), None for none."""
    binding = BY_FAMILY.get(protocol_family(message.protocol) or "")
    return binding.title if binding is not None else message.protocol


def owners(message: MessageDefinition, catalog: Catalog, default: list[str]) -> list[str]:
    """The message's or its group's `labels.owner` (xRegistry labels), else CATALAKE_OWNERS: an
    e-mail address, or a team name shown as `team:<name>`."""
    for labels in ((message.get("labels") or {}), (catalog.groups.get(message.group_id, {}).get("labels") or {})):
        owner = labels.get("owner") if isinstance(labels, dict) else None
        if isinstance(owner, str) and owner.strip():
            return [as_owner(o) for o in owner.split(",") if o.strip()]
    return [as_owner(o) for o in default]


def as_owner(text: str) -> str:
    text = text.strip()
    return text if "@" in text or text.startswith("team:") else f"team:{re.sub(r'[^A-Za-z0-9_-]', '_', text)}"


def _tag(value: str) -> str:
    """A value Dagster takes as a tag (letters, digits, `-_.`, at most 63 characters)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", value).strip("-.")[:63] or "none"


@dataclass(frozen=True)
class CatalogAtLoad:
    """The configured catalog as the code location loads it, read once for every definition
    built from it: its definitions' tables, or what is wrong with it."""

    catalog: Catalog | None
    tables: list[MessageTable]
    error: str | None = None

    @property
    def by_xid(self) -> dict[str, MessageTable]:
        return {t.message.xid: t for t in self.tables}


def catalog_at_load(source: CatalogSource) -> CatalogAtLoad:
    try:
        catalog = load_catalog([at_load(p) for p in source.paths])
        return CatalogAtLoad(catalog, message_tables(catalog, source.roots())[0])
    except CatalogError as exc:
        return CatalogAtLoad(None, [], catalog_error(exc))


def message_spec(message: MessageDefinition, catalog: Catalog, configured: Configured,
                 table: MessageTable | None = None, names: Names = DEFAULT) -> AssetSpec:
    text = message.get("description") or message.get("name") or ""
    protocol = protocol_name(message)
    over = f" over {protocol}" if protocol else ""
    table = table if table is not None else message_table(message, catalog, configured.catalog_source.roots())
    location = uris.join(configured.warehouse_root, table.name)
    uri = uris.as_uri(location)
    metadata = {
        "dagster/table_name": message.table_name,
        "dagster/uri": uri,
        "message_id": message.message_id,
        "xid": message.xid,
        "envelope": message.envelope or "none",
        "protocol": protocol or "any",
        "placeholders": ", ".join(message.placeholders) or "none",
        "dagster/column_schema": column_schema(table.schema),
        "stats_columns": stats_columns(table.schema),
        "path": MetadataValue.path(location),
    }
    if table.data_schema is not None:
        metadata["data_schema"] = table.data_schema.reference or f"inline {table.data_schema.format}"
    if keys.SCHEMA_ERROR in table.schema["data"].metadata:
        metadata["untyped_payload"] = table.schema["data"].metadata[keys.SCHEMA_ERROR]
    return AssetSpec(
        key=names.message(message),
        # the first line is what the asset graph shows under the name
        description=f"{short_name(message)}{over} -> table `{message.table_name}`"
        + (f": {text}" if text else "")
        + f"\n\nMessage `{message.message_id}` of group `{message.group_id}` (`{message.xid}`), "
        f"{message.envelope or 'no'} envelope, {protocol or 'any protocol'}. Delta table "
        f"`{message.table_name}`, partitioned by `event_date`, at `{uri}`.\n\n{fed_by(names)}",
        group_name=names.group_of(slug(message.group_id)),
        kinds={"spark", "delta"},
        deps=[names.catalog],
        metadata=metadata,
        tags={"layer": "messages", "protocol": _tag((protocol or "any").lower()),
              "envelope": _tag((message.envelope or "none").lower())},
        owners=owners(message, catalog, configured.catalog_source.owners),
        code_version=table_fingerprint(table),
        skippable=True,  # a day that does not feed the table leaves its partition unmaterialized
    )


def catalog_error(exc: CatalogError) -> str:
    first = exc.problems[0] if exc.problems else None
    where = f"{first.file} {first.pointer or ''}: {first.rule}: {first.message}" if first else str(exc)
    more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    return f"The message catalog is invalid: {where}{more}"


def deadletter_spec(configured: Configured, names: Names = DEFAULT) -> AssetSpec:
    """The dead-letter table's spec, made with the location's state (its schema is Spark's)."""
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE, REASONS, SCHEMA as DEADLETTER_SCHEMA

    location = uris.join(configured.warehouse_root, DEADLETTER_TABLE)
    return AssetSpec(
        key=names.deadletter,
        description="Landed records no message table takes, each with a machine-readable reason: "
        + "; ".join(f"`{k}`: {v}" for k, v in REASONS.items()),
        group_name=names.group_of("events"),
        kinds={"spark", "delta"},
        deps=[names.catalog],
        metadata={"dagster/column_schema": column_schema(DEADLETTER_SCHEMA), "stats_columns": stats_columns(DEADLETTER_SCHEMA),
                  "dagster/table_name": DEADLETTER_TABLE,
                  "dagster/uri": uris.as_uri(location)},
        tags={"layer": "messages"},
        owners=[as_owner(o) for o in configured.catalog_source.owners],
        code_version=code_version("catalake.platform"),  # the whole engine decides where a record goes
    )
