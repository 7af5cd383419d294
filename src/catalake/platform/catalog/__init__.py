"""The message catalog: read xRegistry documents of every shape, validate, resolve, normalize."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Iterable

from ..errors import CatalogError
from ..problems import Problem
from .documents import Document, read_documents
from .files import files_state
from .model import Catalog, FileReport, MessageDefinition, slug
from .normalize import NormalizedDocument, Origin, normalize_document
from .resolve import apply_group_defaults, fill_implied, infer_schema_format, message_key, resolve_messages, xid
from .rules import MESSAGE_RULES, RESOLVED_RULES, rule_group_consistency
from .structure import validate_structure

__all__ = ["Catalog", "CatalogError", "MessageDefinition", "Problem", "load_catalog", "read_catalog", "slug"]


def _merge_schemagroups(docs: list[tuple[Document, NormalizedDocument]], notes_by_file: dict) -> tuple[dict, dict]:
    registry: dict[str, dict] = {}
    sources: dict[str, str] = {}
    for doc, nd in docs:
        for gid, group in nd.schemagroups.items():
            if not isinstance(group, dict):
                continue
            target = registry.setdefault(gid, {k: v for k, v in group.items() if k != "schemas"})
            target.setdefault("schemas", {}).update(copy.deepcopy(group.get("schemas") or {}))
            sources.setdefault(gid, nd.file)
        for (gid, sid), content in doc.split_schemas.items():
            registry.setdefault(gid, {"schemas": {}}).setdefault("schemas", {})[sid] = content
            notes_by_file[nd.file]["split-file schema read from schemagroups/ folder"] += 1
    return registry, sources


def _merge_messagegroups(normalized: list[NormalizedDocument]):
    """Validate each document's structure and merge their groups; same message twice must be identical."""
    problems: list[Problem] = []
    groups: dict[str, dict] = {}
    group_origins: dict[str, Origin] = {}
    origins: dict[tuple[str, str], Origin] = {}
    broken: set[tuple[str, str]] = set()
    for nd in normalized:
        found, bad = validate_structure(nd)
        problems += found
        broken |= bad
        for gid, group in nd.messagegroups.items():
            if not isinstance(group, dict):
                continue
            if gid not in groups:
                groups[gid] = {k: v for k, v in group.items() if k != "messages"} | {"messages": {}}
                group_origins[gid] = nd.group_origins[gid]
            else:
                for attr in ("envelope", "protocol"):
                    if group.get(attr) and groups[gid].get(attr) and group[attr] != groups[gid][attr]:
                        problems.append(
                            Problem(nd.file, nd.group_origins[gid].translate([attr]), "group-conflict",
                                    f"group {gid!r} declares {attr} {group[attr]!r} here but "
                                    f"{groups[gid][attr]!r} in {group_origins[gid].file}")
                        )
                    elif group.get(attr):
                        groups[gid].setdefault(attr, group[attr])
            for mid, msg in (group.get("messages") or {}).items():
                origin = nd.message_origins[(gid, mid)]
                if mid in groups[gid]["messages"]:
                    if groups[gid]["messages"][mid] != msg:
                        problems.append(
                            Problem(nd.file, origin.pointer, "duplicate-message",
                                    f"message {gid}/{mid} is also defined, differently, in {origins[(gid, mid)].file}")
                        )
                    continue
                groups[gid]["messages"][mid] = msg
                origins[(gid, mid)] = origin

    return groups, origins, problems, broken


def read_catalog(paths: Iterable[str | Path]) -> tuple[Catalog, list[Problem]]:
    """Read and resolve a catalog from files/directories; returns it with every problem found."""
    docs, problems = read_documents(paths)
    normalized = [(d, normalize_document(d.data, str(d.path))) for d in docs]
    notes_by_file = {nd.file: nd.notes for _, nd in normalized}

    groups, origins, found, broken = _merge_messagegroups([nd for _, nd in normalized])
    problems += found
    problems += _check_messages(groups, origins, broken)

    registry, sources = _merge_schemagroups(normalized, notes_by_file)
    resolved, found = resolve_messages(groups, origins, broken)
    problems += found
    aliases = {key: _alias_target(key, resolved) for key, msg in resolved.items() if "xref" in msg}
    messages: list[MessageDefinition] = []
    for key, msg in sorted(resolved.items()):
        if key not in aliases:
            definition = _definition(key, msg, groups[key[0]], origins[key], registry, notes_by_file, problems)
            if definition is not None:
                messages.append(definition)

    messages, alias_definitions = _with_aliases(messages, aliases, origins)
    _check_table_names(messages, origins, problems)
    catalog = Catalog(
        messages=messages,
        aliases=alias_definitions,
        groups={gid: {k: v for k, v in g.items() if k != "messages"} for gid, g in groups.items()},
        schemagroups=registry,
        files=[_file_report(nd) for _, nd in normalized],
        schema_sources=sources,
    )
    return catalog, sorted(set(problems))


def _check_messages(groups: dict, origins: dict, broken: set) -> list[Problem]:
    """Each message's own rules (MESSAGE_RULES) before resolution; one that breaks an error rule
    joins `broken`."""
    problems = []
    for (gid, mid), origin in origins.items():
        msg = groups[gid]["messages"][mid]
        if (gid, mid) in broken or not isinstance(msg, dict):
            continue
        for rule in MESSAGE_RULES:
            found = rule(msg, origin)
            if any(p.severity == "error" for p in found):
                broken.add((gid, mid))
            problems += found
    return problems


def _definition(key: tuple[str, str], msg: dict, group: dict, origin, registry: dict, notes_by_file: dict,
                problems: list[Problem]) -> MessageDefinition | None:
    """A resolved message as a definition, with its group's defaults and what it implies; None
    when a rule of the resolved message (RESOLVED_RULES) finds an error (added to `problems`)."""
    msg = infer_schema_format(apply_group_defaults(msg, group), registry)
    if msg.pop("_schemaformat_inferred", False):
        notes_by_file[origin.file]["dataschemaformat taken from the referenced schema's format"] += 1
    found = rule_group_consistency(msg, group, origin)
    for rule in RESOLVED_RULES:
        found += rule(msg, origin, registry)
    problems += found
    if any(p.severity == "error" for p in found):
        return None
    msg = fill_implied(msg)
    chain = tuple(msg.pop("_chain", []))
    msg.pop("_own", None)
    inferred = msg.pop("_datacontenttype_inferred", False)
    return MessageDefinition(group_id=key[0], message_id=key[1], definition=msg, base_chain=chain,
                             source_file=origin.file, source_pointer=origin.pointer, datacontenttype_inferred=inferred)


def _file_report(nd) -> FileReport:
    """What a catalog file held, for `catalake catalog show` and the catalog asset."""
    return FileReport(
        path=nd.file,
        shape=nd.shape,
        groups=len(nd.messagegroups),
        messages=sum(len((g or {}).get("messages") or {}) for g in nd.messagegroups.values() if isinstance(g, dict)),
        schemas=sum(len((g or {}).get("schemas") or {}) for g in nd.schemagroups.values() if isinstance(g, dict)),
        notes=dict(sorted(nd.notes.items())),
    )


def _alias_target(key: tuple[str, str], resolved: dict) -> tuple[str, str]:
    """The definition an `xref` alias finally names (an alias of an alias names its target's)."""
    seen = {key}
    while "xref" in resolved.get(key, {}):
        key = message_key(resolved[key]["xref"])
        if key in seen:
            break
        seen.add(key)
    return key


def _with_aliases(messages: list[MessageDefinition], aliases: dict, origins) -> tuple[list, list]:
    """(the definitions, each naming its aliases; the aliases). An `xref` alias is the same
    definition as its target (xRegistry core: the alias stands for the target), not a second one:
    one table, the target's, and one candidate when matching. An alias whose target was refused
    is left out; the target's problem is reported at the target."""
    by_key = {(m.group_id, m.message_id): m for m in messages}
    names: dict[tuple[str, str], list[str]] = {}
    for alias, target in sorted(aliases.items()):
        if target in by_key:
            names.setdefault(target, []).append(xid(alias))
    messages = [dataclasses.replace(m, aliases=tuple(names[(m.group_id, m.message_id)]))
                if (m.group_id, m.message_id) in names else m for m in messages]
    by_key = {(m.group_id, m.message_id): m for m in messages}
    out = []
    for (gid, mid), target in sorted(aliases.items()):
        if target not in by_key:
            continue
        base = by_key[target]
        out.append(MessageDefinition(
            group_id=gid, message_id=mid, definition={**base.definition, "messageid": mid, "xref": base.xid},
            base_chain=base.base_chain, source_file=origins[(gid, mid)].file,
            source_pointer=origins[(gid, mid)].pointer, datacontenttype_inferred=base.datacontenttype_inferred,
            alias_of=base))
    return messages, out


def _check_table_names(messages: list[MessageDefinition], origins, problems: list[Problem]) -> None:
    seen: dict[str, MessageDefinition] = {}
    for m in messages:
        other = seen.setdefault(m.table_name, m)
        if other is not m:
            problems.append(
                Problem(m.source_file, m.source_pointer, "table-name-collision",
                        f"{m.xid} and {other.xid} would both feed table {m.table_name!r}; rename one")
            )


_LOADED: dict[tuple, Catalog] = {}  # the last catalog a process read, by its files' state


def load_catalog(paths: Iterable[str | Path]) -> Catalog:
    """The resolved catalog, or CatalogError listing every problem (file, JSON pointer, rule).
    Read once a process while its files stay as they were: a command checks the catalog, builds
    the definitions and runs the jobs from it, each asking for it (1.3 s a read at 1,000
    definitions, four reads a `catalake run`)."""
    paths = [str(p) for p in paths]
    key = (tuple(paths), files_state(paths))
    if key in _LOADED:
        return _LOADED[key]
    catalog, problems = read_catalog(paths)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise CatalogError(errors)
    catalog.warnings = [p for p in problems if p.severity != "error"]
    _LOADED.clear()
    _LOADED[key] = catalog
    return catalog
