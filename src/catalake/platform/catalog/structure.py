"""Structural validation of the canonical catalog with jsonschema (message-model.schema.json)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..problems import Problem
from .normalize import NormalizedDocument, Origin

SCHEMA_PATH = Path(__file__).with_name("message-model.schema.json")


@lru_cache(maxsize=1)
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _origin_for(doc: NormalizedDocument, path: list) -> tuple[Origin, list]:
    if len(path) >= 4 and path[0] == "messagegroups" and path[2] == "messages":
        key = (path[1], path[3])
        if key in doc.message_origins:
            return doc.message_origins[key], path[4:]
    if len(path) >= 2 and path[0] == "messagegroups" and path[1] in doc.group_origins:
        return doc.group_origins[path[1]], path[2:]
    return Origin(doc.file, ""), path


def validate_structure(doc: NormalizedDocument) -> tuple[list[Problem], set[tuple[str, str]]]:
    """Problems, and the (group, message) keys that are structurally broken."""
    canonical = {"messagegroups": doc.messagegroups, "schemagroups": doc.schemagroups}
    problems, broken = [], set()
    errors = sorted(validator().iter_errors(canonical), key=lambda e: list(map(str, e.absolute_path)))
    for error in errors:
        # Report the most specific cause of an if/then/allOf failure.
        error = best_match([error] + list(error.context or [])) if error.context else error
        path = list(error.absolute_path)
        origin, rest = _origin_for(doc, path)
        if len(path) >= 4 and path[0] == "messagegroups" and path[2] == "messages":
            broken.add((path[1], path[3]))
        elif len(path) >= 2 and path[0] == "messagegroups":
            broken.update((path[1], m) for m in (doc.messagegroups.get(path[1]) or {}).get("messages", {}) or {})
        rule = f"structure:{error.validator}"
        problems.append(Problem(doc.file, origin.translate(rest), rule, error.message))
    return problems, broken
