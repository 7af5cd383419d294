"""Errors catalake raises on purpose, all under `CatalakeError`, and the problems found in catalog
and schema documents: each names the file, the JSON pointer and the rule."""

from __future__ import annotations

from dataclasses import dataclass


class CatalakeError(Exception):
    """The base of every error catalake raises on purpose: its message says what is wrong and where
    (a file, a JSON pointer or line, a setting) and the rule it breaks."""


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    pointer: str  # JSON pointer into the original document ("" = the whole document), or "line N, column M"
    rule: str
    message: str
    severity: str = "error"  # "warning": reported, but the catalog still loads

    def __str__(self) -> str:
        where = f"{self.file}#{self.pointer}" if not self.pointer.startswith("line ") else f"{self.file}:{self.pointer}"
        tag = "" if self.severity == "error" else f"{self.severity}: "
        return f"{where}: {tag}[{self.rule}] {self.message}"


class CatalogError(CatalakeError, ValueError):
    """The catalog is invalid; `problems` lists every finding."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"invalid message catalog ({len(self.problems)} problem(s)):\n{lines}")


class StorageError(CatalakeError, RuntimeError):
    """A table operation that cannot be carried out as asked."""


def escape(token: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*tokens) -> str:
    return "".join("/" + escape(t) for t in tokens)


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def split_pointer(ptr: str) -> list[str]:
    ptr = ptr.lstrip("#")
    return [unescape(t) for t in ptr.split("/")[1:]] if ptr else []
