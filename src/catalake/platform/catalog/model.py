"""The resolved catalog: one MessageDefinition per (group, message)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from uritemplate import URITemplate


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _declared_values(section) -> Iterator[str]:
    """String `value`s of property declarations, at any depth (attributes, options, map entries)."""
    if isinstance(section, dict):
        if isinstance(section.get("value"), str):
            yield section["value"]
        for k, v in section.items():
            if k != "value":
                yield from _declared_values(v)
    elif isinstance(section, list):
        for v in section:
            yield from _declared_values(v)


@dataclass(frozen=True)
class MessageDefinition:
    """A message definition after normalization, basemessage/xref resolution and implied defaults."""

    group_id: str
    message_id: str
    definition: dict  # canonical resolved form (1.0-rc attribute names)
    base_chain: tuple[str, ...] = ()
    source_file: str = ""
    source_pointer: str = ""
    datacontenttype_inferred: bool = False
    # an `xref` alias is its target under another name (xRegistry core "xref"): the target's
    # definition, table and matching; it only shows in the catalog table and listings
    alias_of: "MessageDefinition | None" = None
    aliases: tuple[str, ...] = ()  # the xids of the aliases of this definition

    @property
    def xid(self) -> str:
        return f"/messagegroups/{self.group_id}/messages/{self.message_id}"

    @property
    def asset_path(self) -> list[str]:
        """The Dagster asset key of its table, `messages/<group>/<message>`: ids as they are, but
        for characters Dagster does not take in names (a quote, a space), which become `_`."""
        return ["messages", *(re.sub(r"[^A-Za-z0-9_.\-]", "_", part) for part in (self.group_id, self.message_id))]

    @property
    def table_name(self) -> str:
        """The per-message table this definition feeds: SQL-safe, `<group>__<message>`.

        Message ids usually repeat their group id as a prefix; it is dropped from the second part.
        A definition that declares a `versionid` other than the default "1" is a new version of
        the message with a table of its own, `<group>__<message>__v<version>` (see evolution.py).
        """
        if self.alias_of is not None:
            return self.alias_of.table_name
        group, message = slug(self.group_id), slug(self.message_id)
        if message.startswith(group + "_"):
            message = message[len(group) + 1 :]
        name = f"{group}__{message}"
        if self.version not in (None, "1"):
            name += f"__v{slug(self.version)}"
        return name

    @property
    def version(self) -> str | None:
        version = self.definition.get("versionid")
        return None if version is None else str(version)

    def get(self, key: str, default: Any = None) -> Any:
        return self.definition.get(key, default)

    @property
    def envelope(self) -> str | None:
        return self.definition.get("envelope")

    @property
    def protocol(self) -> str | None:
        return self.definition.get("protocol")

    @property
    def attributes(self) -> dict[str, dict]:
        return self.definition.get("envelopemetadata") or {}

    @property
    def protocol_options(self) -> dict:
        return self.definition.get("protocoloptions") or {}

    @property
    def placeholders(self) -> list[str]:
        """RFC 6570 level-1 variable names used in declared values, in first-seen order."""
        names: dict[str, None] = {}
        for value in list(_declared_values(self.attributes)) + list(_declared_values(self.protocol_options)):
            if "{" in value:
                for name in URITemplate(value).variable_names:
                    names.setdefault(name, None)
        return list(names)

    @property
    def fingerprint(self) -> str:
        identity = {"group": self.group_id, "message": self.message_id, "definition": self.definition}
        if self.aliases:  # only when there are any: the fingerprints of other definitions stay as they were
            identity["aliases"] = list(self.aliases)
        canonical = json.dumps(
            identity,
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class FileReport:
    """What was read from one file and what had to be normalized."""

    path: str
    shape: str
    groups: int
    messages: int
    schemas: int
    notes: dict[str, int] = field(default_factory=dict)


@dataclass
class Catalog:
    messages: list[MessageDefinition]
    groups: dict[str, dict]
    schemagroups: dict[str, dict]
    files: list[FileReport]
    schema_sources: dict[str, str] = field(default_factory=dict)  # schema group id -> file it came from
    warnings: list = field(default_factory=list)  # Problems of severity "warning"
    aliases: list[MessageDefinition] = field(default_factory=list)  # `xref` aliases, not in `messages`

    def __iter__(self):
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def listed(self) -> list[MessageDefinition]:
        """Every definition and every `xref` alias, as the catalog table and listings show them."""
        return sorted(self.messages + self.aliases, key=lambda m: (m.group_id, m.message_id))

    def find(self, message_id: str, group_id: str | None = None) -> MessageDefinition:
        hits = [m for m in self.listed if m.message_id == message_id and (group_id is None or m.group_id == group_id)]
        if len(hits) != 1:
            where = f" in group {group_id!r}" if group_id else ""
            raise KeyError(f"{len(hits)} definitions named {message_id!r}{where}")
        return hits[0]
