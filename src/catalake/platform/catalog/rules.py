"""The message spec's rules, one named function each.

Each rule takes a canonical message (as normalized, before inheritance, unless it says
resolved), its group and its Origin, and returns the problems it finds. Section names refer to
xRegistry Message Definitions 1.0-rc2 (../shared/specs/xregistry-message-spec-1.0-rc2.txt).
"""

from __future__ import annotations

import re
from typing import Callable

from ..problems import Problem
from ..records import cloudevents
from ..records.attributes import same_media_type
from ..schemas.registry import registry_reference
from .normalize import Origin

NAME_VERSION = re.compile(r"^[A-Za-z][A-Za-z0-9.+_-]*/[A-Za-z0-9][A-Za-z0-9.+_-]*$")
# "KAFKA" and "NATS" name no version in the spec; the spec's own HTTP example says "HTTP".
UNVERSIONED_PROTOCOLS = {"KAFKA", "NATS", "HTTP"}
SCHEMA_SLOTS = ("dataschema", "dataschemauri", "dataschemaxid")
# RFC 6570 2.3 varname: letters, digits, `_` and %-escapes, with single dots inside
VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*")
OPERATORS = "+#./;?&"
CONTENT_TYPE_NAMES = ("content-type", "content_type", "contenttype")


def _problem(origin: Origin, tokens: list, rule: str, message: str, severity: str = "error") -> Problem:
    return Problem(origin.file, origin.translate(tokens), rule, message, severity)


def rule_envelope_format(msg: dict, origin: Origin) -> list[Problem]:
    """'envelope': MUST follow {NAME}/{VERSION}, e.g. CloudEvents/1.0."""
    env = msg.get("envelope")
    if env is not None and not NAME_VERSION.match(env):
        return [_problem(origin, ["envelope"], "envelope-format", f"envelope {env!r} is not of the form NAME/VERSION")]
    return []


def rule_protocol_format(msg: dict, origin: Origin) -> list[Problem]:
    """'protocol': {NAME}/{VERSION}; KAFKA, NATS (and HTTP, as in the spec's example) may omit the version."""
    proto = msg.get("protocol")
    if proto is not None and not (NAME_VERSION.match(proto) or proto in UNVERSIONED_PROTOCOLS):
        return [
            _problem(
                origin,
                ["protocol"],
                "protocol-format",
                f"protocol {proto!r} is not of the form NAME/VERSION (only KAFKA, NATS and HTTP may omit the version)",
            )
        ]
    return []


def rule_dataschema_exclusive(msg: dict, origin: Origin) -> list[Problem]:
    """'dataschema' (inline) excludes 'dataschemauri' and 'dataschemaxid'; those two go together
    (1.0-rc2 "dataschemaxid": if present, 'dataschemauri' MUST be present too; the xid alone
    still resolves, so its absence is a warning)."""
    if "dataschema" in msg:
        others = [k for k in ("dataschemauri", "dataschemaxid") if k in msg]
        if others:
            return [_problem(origin, [others[0]], "dataschema-exclusive",
                             f"dataschema and {' and '.join(others)} are mutually exclusive")]
    elif "dataschemaxid" in msg and "dataschemauri" not in msg:
        return [_problem(origin, ["dataschemaxid"], "dataschemaxid-without-uri",
                         "dataschemaxid without dataschemauri (1.0-rc2: dataschemauri MUST be present with it)", "warning")]
    return []


def rule_attribute_name_length(msg: dict, origin: Origin) -> list[Problem]:
    """CloudEvents attribute names SHOULD NOT exceed 20 characters (CloudEvents 1.0, "Attribute
    Naming Convention"): a warning, since events with longer names are valid."""
    meta = msg.get("envelopemetadata")
    if not cloudevents.is_envelope(msg.get("envelope")) or not isinstance(meta, dict):
        return []
    return [_problem(origin, ["envelopemetadata", name], "attribute-name-length",
                     f"CloudEvents attribute name {name!r} has {len(name)} characters; it SHOULD NOT exceed 20", "warning")
            for name in meta if isinstance(name, str) and len(name) > 20]


def rule_schemaformat_required(msg: dict, origin: Origin, registry: dict) -> list[Problem]:
    """'dataschema*': if present, 'dataschemaformat' MUST be present (checked on the resolved message).

    A reference into the catalog's schema registry may leave it out: the referenced schema's
    own `format` says it (and resolve.infer_schema_format fills it in). A registry reference
    that does not resolve is only a warning here; deriving the schema reports it as an error.
    """
    present = [k for k in SCHEMA_SLOTS if k in msg]
    if not present or msg.get("dataschemaformat"):
        return []
    slot = present[0]
    if slot not in msg.get("_own", msg):
        return []  # inherited: reported once, at the base message that declares it
    tokens = [slot]
    if slot != "dataschema" and registry_reference(msg[slot]) is not None:
        text = (f"{slot} {msg[slot]!r} is not in the catalog's schema registry, so its format is unknown "
                "and dataschemaformat is missing")
        return [_problem(origin, tokens, "dataschemaformat-required", text, severity="warning")]
    where = "inline" if slot == "dataschema" else f"{msg[slot]!r}, which does not point into a schema registry,"
    return [_problem(origin, tokens, "dataschemaformat-required", f"{slot} is given ({where}) but dataschemaformat is missing")]


def rule_cloudevents_required_attributes(msg: dict, origin: Origin) -> list[Problem]:
    """CloudEvents/1.0: type, id and source are implicitly required and MUST NOT be declared required: false."""
    meta = msg.get("envelopemetadata") or {}
    return [
        _problem(
            origin,
            ["envelopemetadata", name, "required"],
            "cloudevents-required-attribute",
            f"CloudEvents attribute '{name}' is always required and must not be declared required: false",
        )
        for name in cloudevents.REQUIRED
        if name != "specversion"  # the envelope says it; rule_specversion checks its value
        if isinstance(meta.get(name), dict) and meta[name].get("required") is False
    ]


def rule_specversion(msg: dict, origin: Origin) -> list[Problem]:
    """CloudEvents: the envelope is CloudEvents/1.0 and a declared specversion is the string '1.0'."""
    problems = []
    env = msg.get("envelope")
    if isinstance(env, str) and env.lower().startswith("cloudevents/") and env != "CloudEvents/1.0":
        problems.append(_problem(origin, ["envelope"], "specversion", f"envelope {env!r}: only CloudEvents/1.0 is defined"))
    decl = (msg.get("envelopemetadata") or {}).get("specversion")
    if isinstance(decl, dict):
        if "value" in decl and decl["value"] != "1.0":
            problems.append(
                _problem(
                    origin,
                    ["envelopemetadata", "specversion", "value"],
                    "specversion",
                    f"specversion must be '1.0', not {decl['value']!r}",
                )
            )
        if decl.get("type") not in (None, "string"):
            problems.append(
                _problem(
                    origin,
                    ["envelopemetadata", "specversion", "type"],
                    "specversion",
                    f"specversion must be declared with type string, not {decl['type']!r}",
                )
            )
    return problems


def rule_kafka_key_exclusive(msg: dict, origin: Origin) -> list[Problem]:
    """KAFKA: 'key' and 'key_base64' are mutually exclusive."""
    opts = msg.get("protocoloptions") or {}
    if (msg.get("protocol") or "").startswith("KAFKA") and "key" in opts and "key_base64" in opts:
        return [_problem(origin, ["protocoloptions", "key_base64"], "kafka-key-exclusive", "key and key_base64 are mutually exclusive")]
    return []


def rule_http_status_method_exclusive(msg: dict, origin: Origin) -> list[Problem]:
    """HTTP: 'status' and 'method' are mutually exclusive."""
    opts = msg.get("protocoloptions") or {}
    if (msg.get("protocol") or "").startswith("HTTP") and "status" in opts and "method" in opts:
        return [_problem(origin, ["protocoloptions", "status"], "http-status-method-exclusive", "status and method are mutually exclusive")]
    return []


def _declared_values(node, tokens: list) -> list[tuple[list, str]]:
    """(pointer tokens, text) of every declared `value` under an envelopemetadata/protocoloptions node."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("value"), str):
            found.append(([*tokens, "value"], node["value"]))
        for key, child in node.items():
            found += _declared_values(child, [*tokens, key]) if isinstance(child, (dict, list)) else []
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _declared_values(child, [*tokens, i])
    return found


def rule_placeholders(msg: dict, origin: Origin) -> list[Problem]:
    """Placeholders (spec "value": RFC 6570 Level 1, each a valid name): braces balanced and
    every variable a valid `varname`, else an error. An operator or a list (`{?page}`, `{a,b}`)
    is beyond level 1: a warning, and matched as RFC 6570 expands it (matcher.template_regex)."""
    problems = []
    for section in ("envelopemetadata", "protocoloptions"):
        for tokens, value in _declared_values(msg.get(section), [section]):
            if "{" not in value and "}" not in value:
                continue
            if re.sub(r"\{[^{}]*\}", "", value).count("{") or re.sub(r"\{[^{}]*\}", "", value).count("}"):
                problems.append(_problem(origin, tokens, "placeholder", f"unbalanced braces in {value!r}"))
                continue
            for expression in re.findall(r"\{([^{}]*)\}", value):
                operator = expression[:1] if expression[:1] in OPERATORS else ""
                names = expression[len(operator):].split(",")
                bare = [re.sub(r"(:[0-9]+|\*)$", "", n) for n in names]
                bad = [n for n in bare if not VARNAME.fullmatch(n)]
                if bad:
                    problems.append(_problem(origin, tokens, "placeholder",
                                             f"placeholder {{{expression}}} in {value!r}: {bad[0]!r} is not a valid name"))
                elif operator or len(names) > 1 or bare != names:
                    problems.append(_problem(origin, tokens, "placeholder-level",
                                             f"placeholder {{{expression}}} in {value!r} is beyond RFC 6570 level 1 "
                                             "(matched as RFC 6570 expands it)", "warning"))
    return problems


def _content_types(node, tokens: list) -> list[tuple[list, str]]:
    """Declared content types in protocoloptions: an option, map entry or named list item called
    content-type / content_type."""
    found = []
    if isinstance(node, dict):
        for key, child in node.items():
            if str(key).lower() in CONTENT_TYPE_NAMES and isinstance(child, dict) and isinstance(child.get("value"), str):
                found.append(([*tokens, key, "value"], child["value"]))
            elif isinstance(child, (dict, list)):
                found += _content_types(child, [*tokens, key])
    elif isinstance(node, list):
        for i, child in enumerate(node):
            if (isinstance(child, dict) and str(child.get("name", "")).lower() in CONTENT_TYPE_NAMES
                    and isinstance(child.get("value"), str)):
                found.append(([*tokens, i, "value"], child["value"]))
    return found


def rule_datacontenttype_consistent(msg: dict, origin: Origin) -> list[Problem]:
    """The payload's content type is the same wherever the definition declares it: the message's
    `datacontenttype`, the CloudEvents attribute's value and the protocol's content type (compared
    as media types)."""
    places = [(["datacontenttype"], msg["datacontenttype"])] if isinstance(msg.get("datacontenttype"), str) else []
    attribute = (msg.get("envelopemetadata") or {}).get("datacontenttype")
    if isinstance(attribute, dict) and isinstance(attribute.get("value"), str) and "{" not in attribute["value"]:
        places.append((["envelopemetadata", "datacontenttype", "value"], attribute["value"]))
    places += [(t, v) for t, v in _content_types(msg.get("protocoloptions"), ["protocoloptions"]) if "{" not in v]
    if not places:
        return []
    first_tokens, first = places[0]
    return [_problem(origin, tokens, "datacontenttype-consistent",
                     f"content type {value!r} differs from {first!r} declared at /{'/'.join(map(str, first_tokens))}")
            for tokens, value in places[1:] if not same_media_type(value, first)]


def rule_dataschema_attribute_matches(msg: dict, origin: Origin, registry: dict) -> list[Problem]:
    """The CloudEvents `dataschema` attribute's declared value names the schema the definition
    references: it equals `dataschemauri` when both are given (a value pointing into the
    catalog's own registry is not sent by producers and is not compared)."""
    attribute = (msg.get("envelopemetadata") or {}).get("dataschema")
    uri = msg.get("dataschemauri")
    if not isinstance(attribute, dict) or not isinstance(attribute.get("value"), str) or not isinstance(uri, str):
        return []
    value = attribute["value"]
    if "{" in value or registry_reference(value) is not None or value == uri:
        return []
    return [_problem(origin, ["envelopemetadata", "dataschema", "value"], "dataschema-attribute",
                     f"the dataschema attribute's value {value!r} differs from dataschemauri {uri!r}")]


def rule_options_declared(msg: dict, origin: Origin, registry: dict) -> list[Problem]:
    """An `envelope` comes with its `envelopemetadata`, a `protocol` with its `protocoloptions`
    (after basemessage resolution). Without them the definition filters on nothing of the
    envelope or protocol but its implied rules: a warning."""
    problems = []
    for selector, options in (("envelope", "envelopemetadata"), ("protocol", "protocoloptions")):
        if msg.get(selector) and not msg.get(options):
            problems.append(_problem(origin, [selector], f"{options}-missing",
                                     f"{selector} {msg[selector]!r} without {options}", "warning"))
    return problems


def rule_group_consistency(msg: dict, group: dict, origin: Origin) -> list[Problem]:
    """Message 'envelope'/'protocol' MUST be the same as the group's (checked on the resolved message)."""
    problems = []
    for attr in ("envelope", "protocol"):
        want = group.get(attr)
        have = msg.get(attr)
        if want is not None and have is not None and have != want:
            problems.append(
                _problem(
                    origin,
                    [attr] if attr in msg.get("_own", {}) else [],
                    f"group-{attr}-mismatch",
                    f"message {attr} {have!r} differs from its group's {attr} {want!r}",
                )
            )
    return problems


# Rules on the message as written; rules on the resolved message (after basemessage and group inheritance).
MESSAGE_RULES: list[Callable[[dict, Origin], list[Problem]]] = [
    rule_envelope_format,
    rule_protocol_format,
    rule_dataschema_exclusive,
    rule_attribute_name_length,
    rule_placeholders,
    rule_datacontenttype_consistent,
    rule_cloudevents_required_attributes,
    rule_specversion,
    rule_kafka_key_exclusive,
    rule_http_status_method_exclusive,
]
RESOLVED_RULES: list[Callable[[dict, Origin, dict], list[Problem]]] = [
    rule_schemaformat_required,
    rule_dataschema_attribute_matches,
    rule_options_declared,
]
