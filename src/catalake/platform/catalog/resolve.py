"""Resolving definitions: basemessage chains, xref aliases, group inheritance, implied attributes."""

from __future__ import annotations

import copy

from ..problems import split_pointer
from ..problems import Problem
from ..records import cloudevents
from ..records.protocols import BY_FAMILY
from ..schemas.languages import language_of
from ..schemas.registry import schema_format
from .normalize import Origin, protocol_family
from .rules import SCHEMA_SLOTS

Key = tuple[str, str]



NOT_INHERITED = {"messageid", "versionid", "basemessage", "xref", "original_messageid", "meta", "_own", "_chain"}


def message_key(ref: str) -> Key | None:
    """'/messagegroups/g/messages/m' or '#/messagegroups/g/messages/m' (also in 2023 names) -> (g, m)."""
    if not isinstance(ref, str) or "://" in ref:
        return None
    tokens = split_pointer(ref.strip().lstrip("#"))
    if len(tokens) == 4 and tokens[0] in ("messagegroups", "definitionGroups") and tokens[2] in ("messages", "definitions"):
        return tokens[1], tokens[3]
    return None


def xid(key: Key) -> str:
    return f"/messagegroups/{key[0]}/messages/{key[1]}"


def merge_definitions(base: dict, derived: dict) -> dict:
    """The derived definition shadows its base: field by field, attribute by attribute."""
    out = {k: copy.deepcopy(v) for k, v in base.items() if k not in NOT_INHERITED}
    if any(k in derived for k in SCHEMA_SLOTS):  # one schema reference slot: derived replaces the base's
        for k in SCHEMA_SLOTS:
            out.pop(k, None)
    protocol_changed = "protocol" in derived and derived.get("protocol") != base.get("protocol")
    for key, value in derived.items():
        if key == "envelopemetadata" and isinstance(out.get(key), dict) and isinstance(value, dict):
            merged = dict(out[key])
            for name, decl in value.items():
                base_decl = merged.get(name)
                merged[name] = {**base_decl, **decl} if isinstance(base_decl, dict) and isinstance(decl, dict) else decl
            out[key] = merged
        elif key == "protocoloptions" and isinstance(out.get(key), dict) and isinstance(value, dict) and not protocol_changed:
            merged = dict(out[key])
            for name, opt in value.items():
                base_opt = merged.get(name)
                if isinstance(base_opt, dict) and isinstance(opt, dict) and "value" not in opt and "value" not in base_opt:
                    merged[name] = {**base_opt, **opt}  # a map section: entries shadow entries
                else:
                    merged[name] = opt
            out[key] = merged
        else:
            out[key] = copy.deepcopy(value)
    if protocol_changed and "protocoloptions" not in derived:
        out.pop("protocoloptions", None)
    return out


def resolve_messages(
    groups: dict[str, dict], origins: dict[Key, Origin], skip: set[Key]
) -> tuple[dict[Key, dict], list[Problem]]:
    """Resolve basemessage chains (transitively, cycles detected) and xref aliases."""
    index = {
        (gid, mid): msg
        for gid, group in groups.items()
        for mid, msg in (group.get("messages") or {}).items()
        if (gid, mid) not in skip and isinstance(msg, dict)
    }
    resolver = _Resolver(index, origins, skip)
    for key in index:
        resolver.resolve(key, ())
    return resolver.resolved, resolver.problems


class _Resolver:
    """One catalog's messages resolved once each: `resolved` by key, `problems` of those that
    could not be (a message whose target failed is not reported again)."""

    def __init__(self, index: dict[Key, dict], origins: dict[Key, Origin], skip: set[Key]):
        self.index, self.origins, self.skip = index, origins, skip
        self.resolved: dict[Key, dict] = {}
        self.failed: set[Key] = set()
        self.problems: list[Problem] = []

    def fail(self, key: Key, field: str, rule: str, text: str) -> None:
        self.failed.add(key)
        self.problems.append(Problem(self.origins[key].file, self.origins[key].translate([field]), rule, text))

    def resolve(self, key: Key, stack: tuple[Key, ...]) -> dict | None:
        if key in self.resolved:
            return self.resolved[key]
        if key in self.failed:
            return None
        msg = self.index[key]
        if key in stack:
            members = stack[stack.index(key):]
            cycle = " -> ".join(xid(k) for k in members + (key,))
            self.fail(key, "basemessage", "basemessage-cycle", f"basemessage cycle: {cycle}")
            self.failed.update(members)  # one problem per cycle, not one per member
            return None
        for field, rule in (("xref", "xref-dangling"), ("basemessage", "basemessage-dangling")):
            if field in msg:
                return self._follow(key, msg, field, rule, stack)
        self.resolved[key] = {**copy.deepcopy(msg), "_own": sorted(msg), "_chain": []}
        return self.resolved[key]

    def _follow(self, key: Key, msg: dict, field: str, rule: str, stack: tuple[Key, ...]) -> dict | None:
        """`msg` resolved through the message its `field` (xref or basemessage) names."""
        target = message_key(msg[field])
        if target in self.skip:  # the target is broken and already reported; say nothing more here
            self.failed.add(key)
            return None
        if target is None or target not in self.index:
            why = "absolute URLs are never fetched" if "://" in str(msg[field]) else "no such message in the catalog"
            self.fail(key, field, rule, f"{field} {msg[field]!r} does not resolve: {why}")
            return None
        base = self.resolve(target, stack + (key,))
        if base is None:  # the target's own problem is reported at the target
            self.failed.add(key)
            return None
        if field == "xref":
            out = {k: copy.deepcopy(v) for k, v in base.items() if k not in ("_own",)}
            out["messageid"] = msg["messageid"]
            out["xref"] = xid(target)
            out["_chain"] = list(base.get("_chain", []))
        else:
            out = merge_definitions(base, msg)
            out["basemessage"] = xid(target)
            out["_chain"] = [xid(target), *base.get("_chain", [])]
        out["_own"] = sorted(msg)
        self.resolved[key] = out
        return out


def apply_group_defaults(msg: dict, group: dict) -> dict:
    """A message without envelope/protocol takes its group's (the group's apply to all its messages)."""
    for attr in ("envelope", "protocol"):
        if attr not in msg and group.get(attr):
            msg[attr] = group[attr]
    return msg


def infer_schema_format(msg: dict, registry: dict) -> dict:
    """No dataschemaformat, but the reference points into the registry: take the schema's own format."""
    if msg.get("dataschemaformat"):
        return msg
    for slot in ("dataschemauri", "dataschemaxid"):
        if slot in msg:
            fmt = schema_format(registry, msg[slot])
            if fmt:
                msg["dataschemaformat"] = fmt
                msg["_schemaformat_inferred"] = True
    return msg


def fill_implied(msg: dict) -> dict:
    """Fill in what the spec implies: attribute types, required flags, option types, datacontenttype."""
    if msg.get("envelope") == cloudevents.ENVELOPE:
        meta = {name: dict(decl) if isinstance(decl, dict) else {"value": decl} for name, decl in (msg.get("envelopemetadata") or {}).items()}
        for name in cloudevents.REQUIRED:
            if name not in meta:
                meta[name] = {"implied": True}
        for name, decl in meta.items():
            known = cloudevents.BY_NAME.get(name)
            decl.setdefault("type", known.catalog_type if known else "string")
            decl.setdefault("required", name in cloudevents.REQUIRED)
            if name == "specversion":
                decl.setdefault("value", "1.0")
        msg["envelopemetadata"] = dict(sorted(meta.items()))
    family = protocol_family(msg.get("protocol"))
    opts = msg.get("protocoloptions")
    if isinstance(opts, dict):
        binding = BY_FAMILY.get(family)
        types = binding.option_types if binding else {}
        for name, opt in opts.items():
            if isinstance(opt, dict) and ("value" in opt or "type" in opt or "required" in opt or "description" in opt):
                opt.setdefault("type", types.get(name, "string"))
                opt.setdefault("required", False)
        for section, table in (binding.section_types if binding else {}).items():
            for name, decl in (opts.get(section) or {}).items():
                if isinstance(decl, dict):
                    decl.setdefault("type", table.get(name, "string"))
    declared = msg.get("datacontenttype") or ((msg.get("envelopemetadata") or {}).get("datacontenttype") or {}).get("value")
    if declared:
        msg["datacontenttype"] = declared
        msg["_datacontenttype_inferred"] = False
    elif msg.get("dataschemaformat"):
        language = language_of(msg["dataschemaformat"], aliases=False) if isinstance(msg["dataschemaformat"], str) else None
        if language is not None and language.content_type:
            msg["datacontenttype"] = language.content_type
            msg["_datacontenttype_inferred"] = True
    return msg
