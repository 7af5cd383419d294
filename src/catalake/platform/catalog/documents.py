"""Reading catalog files: JSON or YAML xRegistry documents, single files or directories."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..problems import Problem

CATALOG_SUFFIXES = (".json", ".cereg", ".xreg", ".yaml", ".yml")
CATALOG_KEYS = ("messagegroups", "definitionGroups", "schemagroups", "schemaGroups", "endpoints")


@dataclass
class Document:
    path: Path
    data: dict
    # split-file catalogs: schema objects found on disk under <dir>/schemagroups/<g>/schemas/<s>/index.json
    split_schemas: dict[tuple[str, str], dict] = field(default_factory=dict)


def is_catalog(data) -> bool:
    return isinstance(data, dict) and any(k in data for k in CATALOG_KEYS)


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases: an alias can multiply a small file into gigabytes once expanded
    (the "billion laughs"), and a catalog has no need of them."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in a catalog",
                                              self.peek_event().start_mark)
        return super().compose_node(parent, index)


def parse_text(path: Path, text: str) -> tuple[object, list[Problem]]:
    """Parse JSON (or YAML for .yaml/.yml). Syntax errors name the line and column."""
    if path.suffix in (".yaml", ".yml"):
        try:
            return yaml.load(text, Loader=_NoAliases), []
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            return None, [Problem(str(path), where, "yaml-syntax", str(getattr(exc, "problem", exc)))]
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        return None, [Problem(str(path), f"line {exc.lineno}, column {exc.colno}", "json-syntax", exc.msg)]


def _split_schemas(folder: Path) -> dict[tuple[str, str], dict]:
    """Schema objects of a split-file registry: schemagroups/<group>/schemas/<schema>/index.json."""
    found: dict[tuple[str, str], dict] = {}
    root = folder / "schemagroups"
    if not root.is_dir():
        return found
    for index in sorted(root.glob("*/schemas/*/index.json")):
        schema_dir = index.parent
        if "$" in schema_dir.name:  # "<schema>$meta" holds registry metadata, not the schema
            continue
        try:
            found[(schema_dir.parent.parent.name, schema_dir.name)] = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return found


def read_file(path: Path, explicit: bool = True) -> tuple[Document | None, list[Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(str(path), "", "unreadable", str(exc))]
    data, problems = parse_text(path, text)
    if problems:
        return None, problems
    if not is_catalog(data):
        if explicit:
            return None, [
                Problem(str(path), "", "not-a-catalog", f"no {' / '.join(CATALOG_KEYS[:4])} at the top level")
            ]
        return None, []
    split = _split_schemas(path.parent) if path.name == "index.json" else {}
    return Document(path=path, data=data, split_schemas=split), []


def discover(paths) -> list[tuple[Path, bool]]:
    """Files to read: explicit files as given, directories walked for catalog-looking files.

    Split-file registries (``schemagroups/`` trees beside an ``index.json``) are read through
    their index, never as catalogs of their own.
    """
    out: list[tuple[Path, bool]] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p).parts
                if not f.is_file() or f.suffix not in CATALOG_SUFFIXES or any(x.startswith(".") for x in rel):
                    continue
                if "schemagroups" in rel[:-1]:
                    continue
                out.append((f, False))
        else:
            out.append((p, True))
    return out


def read_documents(paths) -> tuple[list[Document], list[Problem]]:
    docs, problems = [], []
    for path, explicit in discover(paths):
        if explicit and not path.exists():
            problems.append(Problem(str(path), "", "missing-file", "no such file or directory"))
            continue
        doc, found = read_file(path, explicit)
        problems += found
        if doc is not None:
            docs.append(doc)
    return docs, problems
