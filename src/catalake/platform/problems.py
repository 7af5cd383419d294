"""The problems found in catalog and data schema documents: each names the file, where in it (a
JSON pointer, or a line and column) and the rule it breaks. A `CatalogError` lists them.

JSON pointers (RFC 6901) say where a problem is in a catalog document, and follow the `$ref`s of
data schemas into their documents: four functions of our own rather than the `jsonpointer`
package, which is installed here only as a dependency of the tests' tools (moto's cfn-lint,
through jsonpatch), not of anything catalake runs on; what is needed is the escaping of one
reference token, not resolution."""

from __future__ import annotations

from dataclasses import dataclass


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
