"""The catalog as a table: `catalog/messages`, one row per (group, message)."""

from __future__ import annotations

import json

from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

from ..catalog import Catalog, MessageDefinition
from ..catalog.normalize import ADDRESS_OPTIONS, protocol_family

CATALOG_TABLE = "catalog/messages"


def _field(name: str, dtype, comment: str, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable, {"comment": comment})


PROPERTY = StructType(
    [
        StructField("name", StringType()),
        StructField("type", StringType()),
        StructField("value", StringType()),
        StructField("required", BooleanType()),
        StructField("description", StringType()),
        StructField("implied", BooleanType()),
    ]
)

SCHEMA = StructType(
    [
        _field("group_id", StringType(), "message group id", nullable=False),
        _field("message_id", StringType(), "message definition id (unique within its group)", nullable=False),
        _field("xid", StringType(), "xRegistry id: `/messagegroups/{group}/messages/{message}`"),
        _field("name", StringType(), "display name"),
        _field("description", StringType(), "description from the catalog"),
        _field("envelope", StringType(), "envelope, e.g. CloudEvents/1.0"),
        _field("protocol", StringType(), "protocol binding, e.g. KAFKA, MQTT/5.0, AMQP/1.0, HTTP, NATS"),
        _field("base_message", StringType(), "xid of the direct basemessage"),
        _field("base_chain", ArrayType(StringType()), "basemessage chain, nearest first"),
        _field("xref", StringType(), "xid of the definition this one aliases (an alias feeds its target's table)"),
        _field("ce_type", StringType(), "declared CloudEvents type value"),
        _field("ce_source", StringType(), "declared CloudEvents source value (may be a URI template)"),
        _field("ce_subject", StringType(), "declared CloudEvents subject value (may be a URI template)"),
        _field("attributes", ArrayType(PROPERTY), "resolved envelope attributes, implied ones included"),
        _field("envelope_metadata_json", StringType(), "resolved envelope metadata as JSON"),
        _field("protocol_address", StringType(), "topic / topic_name / subject / path / to the binding sends to"),
        _field("protocol_options", ArrayType(PROPERTY), "resolved protocol options; name is a path like properties.subject"),
        _field("protocol_options_json", StringType(), "resolved protocol options as JSON"),
        _field("placeholders", ArrayType(StringType()), "URI template placeholders used in declared values"),
        _field("schema_format", StringType(), "dataschemaformat"),
        _field("schema_reference", StringType(), "dataschemauri / dataschemaxid, or 'inline'"),
        _field("schema_reference_kind", StringType(), "uri, xid or inline"),
        _field("datacontenttype", StringType(), "declared datacontenttype, else the one the schema format implies"),
        _field("datacontenttype_inferred", BooleanType(), "true when datacontenttype was inferred from the schema format"),
        _field("table_name", StringType(), "the per-message Delta table this definition feeds"),
        _field("fingerprint", StringType(), "sha256 of the resolved definition; changes exactly when the definition does"),
        _field("source_file", StringType(), "catalog file the definition was read from"),
        _field("source_pointer", StringType(), "JSON pointer of the definition in that file"),
    ]
)


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _property_row(name: str, decl) -> dict:
    decl = decl if isinstance(decl, dict) else {"value": decl}
    return {
        "name": name,
        "type": decl.get("type"),
        "value": _text(decl.get("value")),
        "required": decl.get("required"),
        "description": decl.get("description"),
        "implied": bool(decl.get("implied", False)),
    }


def flatten_options(options: dict) -> list[dict]:
    """Protocol options as rows: scalar options by name, map entries as section.entry, list entries as name[entry]."""
    rows = []
    for name, opt in sorted(options.items()):
        if isinstance(opt, list):
            rows += [_property_row(f"{name}[{e.get('name')}]", e) for e in opt if isinstance(e, dict)]
        elif isinstance(opt, dict) and opt and all(isinstance(v, dict) for v in opt.values()) and "value" not in opt:
            rows += [_property_row(f"{name}.{entry}", decl) for entry, decl in sorted(opt.items())]
        else:
            rows.append(_property_row(name, opt))
    return rows


def protocol_address(message: MessageDefinition) -> str | None:
    family = protocol_family(message.protocol)
    opts = message.protocol_options
    if family == "AMQP":
        decl = (opts.get("properties") or {}).get("to")
    else:
        decl = opts.get(ADDRESS_OPTIONS.get(family, ""))
    return _text(decl.get("value")) if isinstance(decl, dict) else None


def _declared(message: MessageDefinition, attribute: str) -> str | None:
    return _text((message.attributes.get(attribute) or {}).get("value"))


def catalog_row(message: MessageDefinition) -> dict:
    d = message.definition
    kind = "inline" if "dataschema" in d else "uri" if "dataschemauri" in d else "xid" if "dataschemaxid" in d else None
    reference = "inline" if kind == "inline" else d.get("dataschemauri") or d.get("dataschemaxid")
    return {
        "group_id": message.group_id,
        "message_id": message.message_id,
        "xid": message.xid,
        "name": d.get("name"),
        "description": d.get("description"),
        "envelope": message.envelope,
        "protocol": message.protocol,
        "base_message": message.base_chain[0] if message.base_chain else None,
        "base_chain": list(message.base_chain),
        "xref": d.get("xref"),
        "ce_type": _declared(message, "type"),
        "ce_source": _declared(message, "source"),
        "ce_subject": _declared(message, "subject"),
        "attributes": [_property_row(n, decl) for n, decl in message.attributes.items()],
        "envelope_metadata_json": json.dumps(message.attributes, sort_keys=True),
        "protocol_address": protocol_address(message),
        "protocol_options": flatten_options(message.protocol_options),
        "protocol_options_json": json.dumps(message.protocol_options, sort_keys=True),
        "placeholders": message.placeholders,
        "schema_format": d.get("dataschemaformat"),
        "schema_reference": reference,
        "schema_reference_kind": kind,
        "datacontenttype": d.get("datacontenttype"),
        "datacontenttype_inferred": message.datacontenttype_inferred if d.get("datacontenttype") else None,
        "table_name": message.table_name,
        "fingerprint": message.fingerprint,
        "source_file": message.source_file,
        "source_pointer": message.source_pointer,
    }


def create_catalog_table(store) -> bool:
    """`catalog/messages`, created empty if it is not there; True when it was created."""
    return store.create(CATALOG_TABLE, SCHEMA,
                        description="The message catalog: one row per (group, message) definition, resolved and normalized.")


def write_catalog_table(store, catalog: Catalog) -> dict:
    """Create `catalog/messages` if needed and replace its content when any definition changed.

    Returns what changed (added/removed/changed xids) and whether a commit was made; an
    unchanged catalog makes no commit, so re-materializing is idempotent.
    """
    create_catalog_table(store)
    before = {r["xid"]: r["fingerprint"] for r in store.read_arrow(CATALOG_TABLE).select(["xid", "fingerprint"]).to_pylist()}
    after = {m.xid: m.fingerprint for m in catalog.listed}
    changes = {
        "added": sorted(after.keys() - before.keys()),
        "removed": sorted(before.keys() - after.keys()),
        "changed": sorted(k for k in after.keys() & before.keys() if after[k] != before[k]),
    }
    committed = before != after
    if committed:
        store.overwrite_rows(CATALOG_TABLE, [catalog_row(m) for m in catalog.listed])
    return {**changes, "committed": committed, "version": store.version(CATALOG_TABLE)}
