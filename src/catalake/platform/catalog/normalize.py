"""Every catalog shape found in the wild, normalized into the xRegistry 1.0-rc message form.

Shapes (see ../shared/data/INDEX.md):
  A  2023 camelCase: definitionGroups/definitions, message `format` + `metadata`, schemaUrl
  B  0.5 early: messagegroups/messages with `id`, `format`, `binding`, flat `metadata`, schemaurl
  C  0.5 late: messageid, envelope, protocol ("None" allowed), envelopemetadata, schemaformat/schemauri
  D  0.5 / rc1: dataschemaformat, dataschemauri, basemessageurl
  E  1.0-rc: dataschemaformat/dataschemauri/dataschemaxid, basemessage(uri), protocoloptions

The canonical form has `messagegroups.<g>.messages.<m>` with `messageid`, `envelope`,
`envelopemetadata` (flat), `protocol`, `protocoloptions` (every option a property definition
`{value?, type?, required?, description?}`), `dataschema*`, `basemessage`, `xref`.
Each renaming is recorded as a note for the file and in an Origin, so that a problem found in
the canonical form is reported at its JSON pointer in the original document.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field

from ..problems import escape, pointer
from ..records.cloudevents import is_envelope
from ..records.protocols import BY_FAMILY

PROPERTY_KEYS = {"value", "type", "required", "description", "specurl", "name"}

# Message attribute renames to the 1.0-rc names (the format/metadata pair is handled apart).
MESSAGE_RENAMES = {
    "id": "messageid",
    "schemaformat": "dataschemaformat",
    "schemaFormat": "dataschemaformat",
    "dataSchemaFormat": "dataschemaformat",
    "schema": "dataschema",
    "schemauri": "dataschemauri",
    "schemaurl": "dataschemauri",
    "schemaUrl": "dataschemauri",
    "schemaUri": "dataschemauri",
    "dataschemaurl": "dataschemauri",
    "dataSchemaUri": "dataschemauri",
    "basemessageurl": "basemessage",
    "basemessageuri": "basemessage",
    "baseMessageUrl": "basemessage",
    "binding": "protocol",
    "protocolmetadata": "protocoloptions",
    "protocolOptions": "protocoloptions",
    "envelopeMetadata": "envelopemetadata",
}
GROUP_RENAMES = {"id": "messagegroupid", "binding": "protocol", "definitions": "messages"}
ATTRIBUTE_TYPE_RENAMES = {"datetime": "timestamp"}

# from the bindings (protocols.py): one entry per protocol
KNOWN_PROTOCOLS = set(BY_FAMILY)
MAP_OPTIONS = {family: set(b.map_options) for family, b in BY_FAMILY.items() if b.map_options}
LIST_OPTIONS = {family: set(b.list_options) for family, b in BY_FAMILY.items() if b.list_options}
OPTION_RENAMES = {family: dict(b.option_renames) for family, b in BY_FAMILY.items() if b.option_renames}
# the option that names where a message goes (AMQP: its `properties.to`)
ADDRESS_OPTIONS = {family: b.address_option for family, b in BY_FAMILY.items() if b.address_option}

@dataclass
class Origin:
    """Where a canonical object came from, to report problems at the original pointer."""

    file: str
    pointer: str
    renames: dict[str, str] = field(default_factory=dict)  # canonical rel. path -> original rel. pointer

    def translate(self, tokens: list) -> str:
        tokens = [str(t) for t in tokens]
        for n in range(len(tokens), 0, -1):
            key = "/".join(tokens[:n])
            if key in self.renames:
                return self.pointer + self.renames[key] + pointer(*tokens[n:])
        return self.pointer + pointer(*tokens)


@dataclass
class NormalizedDocument:
    file: str
    shape: str
    messagegroups: dict[str, dict]
    schemagroups: dict[str, dict]
    group_origins: dict[str, Origin]
    message_origins: dict[tuple[str, str], Origin]
    notes: Counter


def canonical_protocol(name) -> str | None:
    """'Kafka' -> 'KAFKA', 'mqtt/5.0' -> 'MQTT/5.0'; 'None' and '' mean no protocol."""
    if name is None or not isinstance(name, str):
        return name
    if name.strip().lower() in ("", "none"):
        return None
    head, sep, version = name.partition("/")
    return (head.upper() + sep + version) if head.upper() in KNOWN_PROTOCOLS else name


def protocol_family(protocol: str | None) -> str | None:
    return protocol.partition("/")[0].upper() if protocol else None


def canonical_envelope(name):
    if isinstance(name, str) and name.lower() == "cloudevents/1.0":
        return "CloudEvents/1.0"
    return name


def detect_shape(doc: dict) -> str:
    if "definitionGroups" in doc:
        return "A (2023 camelCase)"
    messages = [
        m
        for g in (doc.get("messagegroups") or {}).values()
        if isinstance(g, dict)
        for m in (g.get("messages") or {}).values()
        if isinstance(m, dict)
    ]
    keys = {k for m in messages for k in m}
    if keys & {"format", "metadata", "binding"}:
        return "B (0.5 early)"
    if keys & {"schemaformat", "schemauri", "schema"}:
        return "C (0.5 late)"
    if keys & {"basemessageurl", "dataschemaurl"}:
        return "D (0.5 / rc1)"
    return "E (1.0-rc)"


def _as_property(value) -> tuple[dict, bool]:
    """A bare option value becomes {value}; a property definition is kept. Returns (def, wrapped)."""
    if isinstance(value, dict) and value and set(value) <= PROPERTY_KEYS | {"properties"}:
        return dict(value), False
    return {"value": value}, True


def _normalize_attributes(meta, notes: Counter, renames: dict, key: str, orig: str) -> dict:
    if not isinstance(meta, dict):
        return meta
    if set(meta) == {"attributes"} and isinstance(meta["attributes"], dict):
        notes["envelopemetadata: 'attributes' wrapper removed"] += 1
        meta = meta["attributes"]
        orig = orig + "/attributes"
        renames[key] = orig
    out = {}
    for name, decl in meta.items():
        if isinstance(decl, dict) and decl.get("type") in ATTRIBUTE_TYPE_RENAMES:
            notes[f"attribute type '{decl['type']}' read as '{ATTRIBUTE_TYPE_RENAMES[decl['type']]}'"] += 1
            decl = {**decl, "type": ATTRIBUTE_TYPE_RENAMES[decl["type"]]}
        out[name] = decl
    return out


def normalize_protocol_options(protocol: str | None, options, notes: Counter, renames: dict, orig: str):
    """Canonical protocol options: underscore names, every option a property definition."""
    if not isinstance(options, dict):
        return options
    family = protocol_family(protocol)
    if family != "AMQP" and set(options) <= {"properties", "attributes"} and len(options) == 1:
        (wrapper,) = options
        if isinstance(options[wrapper], dict):
            notes[f"protocoloptions: '{wrapper}' wrapper removed"] += 1
            options = options[wrapper]
            orig = orig + "/" + wrapper
            renames["protocoloptions"] = orig
    out: dict = {}
    for key, value in options.items():
        name = key.replace("-", "_")
        name = OPTION_RENAMES.get(family, {}).get(name, name)
        if name != key:
            notes[f"protocol option '{key}' read as '{name}'"] += 1
            renames[f"protocoloptions/{name}"] = orig + "/" + escape(key)
        if name in MAP_OPTIONS.get(family, set()):
            out[name] = _normalize_map_option(family, name, value, notes)
        elif name in LIST_OPTIONS.get(family, set()):
            out[name] = _normalize_list_option(name, value, notes)
        else:
            prop, wrapped = _as_property(value)
            if wrapped:
                notes["protocol option bare values read as {value}"] += 1
            out[name] = prop
    return out


def _normalize_map_option(family, name, value, notes: Counter):
    if isinstance(value, dict) and value.get("type") == "object" and isinstance(value.get("properties"), dict):
        notes[f"protocol option '{name}' given as a JSON Schema object; its properties read as entries"] += 1
        value = value["properties"]
    if isinstance(value, list):  # [{name, value}] given for a map
        notes[f"protocol option '{name}' given as a list; read as a map"] += 1
        value = {e.get("name"): e for e in value if isinstance(e, dict)}
    if not isinstance(value, dict):
        return value
    out = {}
    for entry, decl in value.items():
        prop, wrapped = _as_property(decl)
        if wrapped:
            notes["protocol option bare values read as {value}"] += 1
        out[entry] = prop
    return out


def _normalize_list_option(name, value, notes: Counter):
    if isinstance(value, dict):  # {name: def} given for a list of named entries
        notes[f"protocol option '{name}' given as a map; read as a list"] += 1
        value = [{"name": k, **_as_property(v)[0]} for k, v in value.items()]
    return value


def normalize_message(raw: dict, key: str, notes: Counter, file: str, ptr: str) -> tuple[dict, Origin]:
    origin = Origin(file, ptr)
    msg: dict = {}
    fmt = raw.get("format")
    for k, v in raw.items():
        target = MESSAGE_RENAMES.get(k, k)
        if k == "format" and isinstance(fmt, str):
            target = "envelope" if is_envelope(fmt) else "protocol"
        elif k == "metadata":
            target = "protocoloptions" if isinstance(fmt, str) and not is_envelope(fmt) else "envelopemetadata"
        if target != k:
            if target in raw:  # both spellings present: the 1.0 name wins
                notes[f"'{k}' ignored: '{target}' also present"] += 1
                continue
            notes[f"'{k}' read as '{target}'"] += 1
            origin.renames[target] = "/" + escape(k)
        msg[target] = copy.deepcopy(v)
    if "messageid" in msg and msg["messageid"] != key:
        notes["messageid differs from its key; the key is the id"] += 1
        msg["original_messageid"] = msg["messageid"]
    msg["messageid"] = key
    if "meta" in msg and isinstance(msg["meta"], dict) and "xref" in msg["meta"] and "xref" not in msg:
        msg["xref"] = msg["meta"]["xref"]
        origin.renames["xref"] = "/meta/xref"
    if "protocol" in msg:
        proto = canonical_protocol(msg["protocol"])
        if proto != msg["protocol"]:
            notes[f"protocol '{msg['protocol']}' read as '{proto}'"] += 1
        if proto is None:
            msg.pop("protocol")
        else:
            msg["protocol"] = proto
    if "envelope" in msg:
        env = canonical_envelope(msg["envelope"])
        if env != msg["envelope"]:
            notes[f"envelope '{msg['envelope']}' read as '{env}'"] += 1
            msg["envelope"] = env
    if "envelopemetadata" in msg:
        orig = origin.renames.get("envelopemetadata", "/envelopemetadata")
        msg["envelopemetadata"] = _normalize_attributes(msg["envelopemetadata"], notes, origin.renames, "envelopemetadata", orig)
    if "protocoloptions" in msg:
        orig = origin.renames.get("protocoloptions", "/protocoloptions")
        msg["protocoloptions"] = normalize_protocol_options(
            msg.get("protocol"), msg["protocoloptions"], notes, origin.renames, orig
        )
    return msg, origin


def normalize_group(raw: dict, key: str, notes: Counter, file: str, ptr: str) -> tuple[dict, Origin]:
    origin = Origin(file, ptr)
    group: dict = {}
    for k, v in raw.items():
        target = GROUP_RENAMES.get(k, k)
        if k == "format" and isinstance(v, str):
            target = "envelope" if is_envelope(v) else "protocol"
        if target != k and target not in raw:
            notes[f"group '{k}' read as '{target}'"] += 1
            origin.renames[target] = "/" + escape(k)
            group[target] = v
        elif target == k:
            group[k] = v
    if "protocol" in group:
        proto = canonical_protocol(group["protocol"])
        if proto is None:
            group.pop("protocol")
        else:
            group["protocol"] = proto
    if "envelope" in group:
        group["envelope"] = canonical_envelope(group["envelope"])
    group["messagegroupid"] = key
    return group, origin


def normalize_document(data: dict, file: str) -> NormalizedDocument:
    notes: Counter = Counter()
    shape = detect_shape(data)
    groups_key = "messagegroups" if "messagegroups" in data else "definitionGroups"
    schemas_key = "schemagroups" if "schemagroups" in data else "schemaGroups"
    if groups_key != "messagegroups" and groups_key in data:
        notes["'definitionGroups' read as 'messagegroups'"] += 1
    if schemas_key != "schemagroups" and schemas_key in data:
        notes["'schemaGroups' read as 'schemagroups'"] += 1
    groups: dict[str, dict] = {}
    group_origins: dict[str, Origin] = {}
    message_origins: dict[tuple[str, str], Origin] = {}
    raw_groups = data.get(groups_key)
    if isinstance(raw_groups, dict):
        for gid, raw_group in raw_groups.items():
            gptr = pointer(groups_key, gid)
            if not isinstance(raw_group, dict):
                groups[gid] = raw_group  # structure validation reports it
                group_origins[gid] = Origin(file, gptr)
                continue
            group, gorigin = normalize_group(raw_group, gid, notes, file, gptr)
            messages_key = "messages" if "messages" in raw_group else "definitions"
            messages = {}
            raw_messages = raw_group.get(messages_key)
            if isinstance(raw_messages, dict):
                for mid, raw_msg in raw_messages.items():
                    mptr = gptr + pointer(messages_key, mid)
                    if isinstance(raw_msg, dict):
                        messages[mid], message_origins[(gid, mid)] = normalize_message(raw_msg, mid, notes, file, mptr)
                    else:
                        messages[mid], message_origins[(gid, mid)] = raw_msg, Origin(file, mptr)
                group["messages"] = messages
            groups[gid] = group
            group_origins[gid] = gorigin
    elif raw_groups is not None:
        groups = raw_groups  # structure validation reports it
    schemagroups = data.get(schemas_key) or {}
    return NormalizedDocument(
        file=file,
        shape=shape,
        messagegroups=groups,
        schemagroups=schemagroups if isinstance(schemagroups, dict) else {},
        group_origins=group_origins,
        message_origins=message_origins,
        notes=notes,
    )
