"""Finding a message definition's data schema: inline, in the catalog's registry, or in a file.

Reference forms:
* `dataschema`: the schema inline;
* `dataschemauri` / `dataschemaxid` into the registry: `#/schemagroups/g/schemas/s`,
  `/schemagroups/g/schemas/s`, with `/versions/v`; without a version the schema's
  `defaultversionid`, else its highest version;
* a `:TypeName` suffix names a type inside the schema (Avro/Protobuf), `:definitions/X` or a
  second `#/pointer` a part of it;
* a relative path or a `file:` URI: a file, resolved against the catalog file's folder.

Nothing is ever read from the network, and no file outside the configured roots (by default the
folders the catalog was read from) is read: such references are errors, naming the message and
the reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence
from urllib.parse import unquote, urlparse

from ..errors import ForbiddenReference, SchemaReferenceError
from ..problems import split_pointer
from .languages import Language, language_of
from .registry import find_schema, registry_reference, split_reference, version_content

NO_LANGUAGE = Language("", (), None, None)


class Referring(Protocol):
    """What a data schema is resolved for: a message definition (catalog/model.py `MessageDefinition`,
    which is above this package) with its resolved document, the file it came from and its xid."""

    definition: dict
    source_file: str

    @property
    def xid(self) -> str: ...




@dataclass(frozen=True)
class DataSchema:
    message: str  # xid of the message definition
    format: str | None
    family: str | None  # jsonschema, jsonstructure, avro, protobuf, xsd, or None when unknown
    content: Any  # the schema document (dict/list), or text (Protobuf, XSD)
    reference: str | None  # as written in the catalog; None for inline schemas
    type_name: str | None = None  # ':TypeName' suffix
    pointer: str | None = None  # ':definitions/X' or second '#' part, as a JSON pointer
    document: Any = None  # the whole schema document `content` was taken from (for '#' references)


def format_family(fmt: str | None) -> str | None:
    language = language_of(fmt)
    return language.family if language else None


def _within(path: Path, roots: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(Path(r).resolve()) for r in roots)


def _read_file(message: Referring, ref: str, location: str, roots: Sequence[Path]) -> Any:
    parsed = urlparse(location)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
    else:
        path = Path(message.source_file).parent / unquote(location)
    if not _within(path, roots):
        raise ForbiddenReference(
            f"{message.xid}: data schema reference {ref!r} points outside the configured roots "
            f"({', '.join(str(r) for r in roots)}); it is not read"
        )
    if not path.is_file():
        raise SchemaReferenceError(f"{message.xid}: data schema reference {ref!r}: no such file {path}")
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError:
        return text  # .proto, .xsd: text formats


def _descend(content: Any, pointer: str | None, message: Referring, ref: str) -> Any:
    for token in split_pointer(pointer or ""):
        if isinstance(content, dict) and token in content:
            content = content[token]
        elif isinstance(content, list) and token.isdigit() and int(token) < len(content):
            content = content[int(token)]
        else:
            raise SchemaReferenceError(f"{message.xid}: data schema reference {ref!r}: no {pointer!r} in the schema")
    return content


def resolve_data_schema(
    message: Referring, registry: dict, roots: Sequence[Path]
) -> DataSchema | None:
    """The data schema of `message`, or None when it declares none."""
    d = message.definition
    fmt = d.get("dataschemaformat")
    if "dataschema" in d:
        return DataSchema(message.xid, fmt, format_family(fmt), d["dataschema"], None)
    ref = d.get("dataschemauri") or d.get("dataschemaxid")
    if not ref:
        return None
    location, type_name, pointer = split_reference(ref)
    scheme = urlparse(location).scheme.lower()
    if scheme in ("http", "https", "ftp", "ws", "wss"):
        raise ForbiddenReference(
            f"{message.xid}: data schema reference {ref!r} is a network location; schemas are never fetched "
            "(put the schema in the catalog's registry or in a file under the configured roots)"
        )
    if registry_reference(location) is not None:
        found = find_schema(registry, location)
        if found is None:
            raise SchemaReferenceError(f"{message.xid}: data schema reference {ref!r} is not in the catalog's schema registry")
        schema, version = found
        content = version_content(version)
        if content is None:
            raise SchemaReferenceError(f"{message.xid}: data schema reference {ref!r}: the registry entry holds no schema")
        fmt = fmt or version.get("format") or schema.get("format")
    elif scheme in ("", "file") and not location.startswith("#"):
        content = _read_file(message, ref, location, roots)
    else:
        raise SchemaReferenceError(f"{message.xid}: data schema reference {ref!r} is neither a registry reference nor a file")
    if isinstance(content, str) and (language_of(fmt) or NO_LANGUAGE).json_text:
        try:
            content = json.loads(content)  # registries may hold JSON schemas as strings
        except ValueError:
            raise SchemaReferenceError(f"{message.xid}: data schema {ref!r} is not valid JSON") from None
    part = _descend(content, pointer, message, ref)
    return DataSchema(message.xid, fmt, format_family(fmt), part, ref, type_name, pointer, content)
