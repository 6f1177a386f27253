"""robustcore's modules form a layered graph: no module imports, at module level or inside a
function, a module that imports it back (directly or through others). A deferred import inside a
function hides a circle from Python, not from this test (issue 26: anomaly -> compare ->
subspace._base -> subspace.pca, with the base class importing its limit formulas from a
subclass's module; bigdata._adapters <-> methods)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "robustcore"


def _modules() -> dict:
    out = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


def _targets(module: str, node, is_package: bool, known) -> set:
    """The robustcore modules an import statement names (``from .x import y`` names x.y when
    y is a module, else x)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")
            if not is_package:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
    out = set()
    for n in names:
        while n not in known and "." in n:
            n = n.rsplit(".", 1)[0]
        if n in known and n != module:
            out.add(n)
    return out


def import_graph() -> dict:
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = set()
        for node in ast.walk(tree):             # every import, at any depth (functions too)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= _targets(name, node, path.name == "__init__.py", mods)
        graph[name] = deps
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_core_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_planted_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("low", ["robustcore.limits", "robustcore.linalg", "robustcore._outlier",
                                 "robustcore._residual", "robustcore._passes", "robustcore._row_stats"])
def test_low_modules_import_no_estimator(low):
    """Formula and kernel modules import no estimator module (nothing low imports anything high)."""
    graph = import_graph()
    seen, todo = set(), [low]
    while todo:
        m = todo.pop()
        for n in graph.get(m, ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    high = {"robustcore.subspace.pca", "robustcore.subspace.coherence_pursuit", "robustcore.anomaly",
            "robustcore.subspace.pcp", "robustcore.methods", "robustcore.compare", "robustcore.subspace._base"}
    assert not seen & high, f"{low} reaches {sorted(seen & high)}"
