"""Finds import cycles in a package from its source (ast): module-level and function-level
imports alike, since a deferred import is still an edge of the graph -- it only hides the circle
from Python's import machinery until the function runs.

Edges of a module M: every module an import statement of M names (``import a.b``,
``from a import b`` when b is a module, ``from .x import y``), and every package on the way to it
whose ``__init__`` the import runs (``from app.session.files import f`` runs
``app/session/__init__.py`` too), except M's own enclosing packages, which are being imported
already when M runs. Only modules of the package itself are nodes.
"""
from __future__ import annotations

import ast
import pathlib

__all__ = ["import_graph", "import_cycles"]


def _modules(root: pathlib.Path, package: str) -> dict[str, pathlib.Path]:
    out = {}
    for path in (root / package).rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph(root, package: str) -> dict[str, dict[str, int]]:
    """module -> {imported module of the package: line of the first import}."""
    root = pathlib.Path(root)
    mods = _modules(root, package)
    graph: dict[str, dict[str, int]] = {m: {} for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        own = {".".join(mod.split(".")[:k]) for k in range(1, len(mod.split(".")) + 1)}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module)
                targets = [base] + [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
            for target in targets:
                parts = target.split(".")
                for k in range(2, len(parts) + 1):     # the package's own top never counts
                    step = ".".join(parts[:k])
                    if step in mods and step not in own and step != mod:
                        graph[mod].setdefault(step, node.lineno)
    return graph


def import_cycles(root, package: str) -> list[list[str]]:
    """Every strongly connected set of modules (each a circle of imports), as sorted lists."""
    graph = import_graph(root, package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v):                      # Tarjan's algorithm (the graph is small: recursion is fine)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def describe(root, package: str, cycle: list[str]) -> str:
    """The edges inside one cycle, with where each import is written."""
    graph = import_graph(root, package)
    members = set(cycle)
    return "; ".join(f"{m} -> {t} (line {line})" for m in cycle for t, line in sorted(graph[m].items())
                     if t in members)
