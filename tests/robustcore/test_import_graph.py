"""robustcore's modules form a layered graph: formula and kernel modules never reach an estimator,
at module level or inside a function (issue 26: the base class imported its limit formulas from a
subclass's module). The graph is the one tests/import_cycles.py builds for the circle check."""
import functools
from pathlib import Path

import pytest

from ..import_cycles import import_graph

ROOT = Path(__file__).resolve().parents[2]
# (No circle in the core: tests/test_layout.py, with the one finder, tests/import_cycles.py.)


@functools.cache
def _core_graph():
    return import_graph(ROOT, "robustcore")


@pytest.mark.parametrize("low", ["robustcore.limits", "robustcore.linalg", "robustcore._outlier",
                                 "robustcore._residual", "robustcore._passes", "robustcore._row_stats"])
def test_low_modules_import_no_estimator(low):
    """Formula and kernel modules import no estimator module (nothing low imports anything high)."""
    graph = _core_graph()
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
