"""The engine's layering, read from the source: no import cycle in `catalake` (module-level and
function-level imports alike), and no Dagster under `platform/`."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

SOURCE = REPO / "src"


def modules() -> dict[str, Path]:
    found = {}
    for path in (SOURCE / "catalake").rglob("*.py"):
        parts = path.relative_to(SOURCE).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The catalake modules `name` imports anywhere in its file (a package counts as its __init__)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                out.add(candidate if candidate in known else target)
    return {m for m in out if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_catalake():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert len(graph) > 40
    found = cycles(graph)
    detail = [{m: sorted(graph[m] & set(c)) for m in c} for c in found]
    assert found == [], detail


def test_the_engine_imports_nothing_from_dagster():
    for name, path in modules().items():
        if name.startswith("catalake.platform"):
            tree = ast.parse(path.read_text())
            names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
            assert not [n for n in names if n.split(".")[0].startswith("dagster")], name


def test_the_architecture_document_names_modules_that_exist():
    """docs/architecture.md stays true to the layout: every module file it names exists."""
    import re

    text = (REPO / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:\.\./)?[a-z_/]+\.py)`", text))
    assert len(named) > 30
    missing = []
    for name in named:
        if not (REPO / name).exists() and not any((SOURCE / "catalake" / base / name).resolve().exists()
                                                  for base in ("platform", "assets", ".")):
            missing.append(name)
    assert missing == []
    listed = {p.name for p in (SOURCE / "catalake" / "platform").glob("*.py")} - {"__init__.py"}
    assert {m for m in listed if f"`{m}`" not in text} == set()  # every engine module has its place
