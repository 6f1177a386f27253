"""Axis numbers are the data's own: no hidden SI scale factor, whatever range an axis had before.

The defect: an SPE/T² scatter's y axis once read 0 to 42,000 while the scores never exceeded 42.
The style code turned the SI prefix "off" while the axis still held the previous plot's range
(a component, within ±1): pyqtgraph then froze a factor 1000 and, the prefix being off, showed
no "(x0.001)" either.
"""
import numpy as np
import pytest

from app.state import AppState
from robustcore.datasets import Dataset
from robustcore.methods import get_method


def shown_numbers(ax) -> list[float]:
    """The tick numbers the axis paints (its own tick logic, at its current size)."""
    lo, hi = ax.range
    length = ax.size().height() if ax.orientation in ("left", "right") else ax.size().width()
    out = []
    for spacing, values in ax.tickValues(lo, hi, max(length, 100)):
        for text in ax.tickStrings(values, ax.autoSIPrefixScale * ax.scale, spacing):
            if text:
                out.append(float(text.replace("−", "-").replace(",", "")))
    return out


@pytest.fixture
def small_scale_state():
    """A data set whose components stay within ±1 while its T² reaches tens."""
    rng = np.random.default_rng(3)
    X = 0.02 * (rng.standard_normal((300, 2)) @ rng.standard_normal((2, 8))) + 0.002 * rng.standard_normal((300, 8))
    X[:6] += 0.1 * rng.standard_normal((6, 8))
    ds = Dataset(X=X, name="small")
    state = AppState()
    state.set_dataset(ds)
    state.add_result(get_method("residual").run(ds, {"n_components": 2}))
    state.set_current_method("residual")
    return state


def test_score_axis_after_a_component_axis_shows_the_scores(views_for, small_scale_state, qtbot):
    state = small_scale_state
    v = views_for(state).show_view("scatter")
    t2 = state.result("residual").sample_scores["t2"]
    v.y_box.set_key(("comp", 1))
    qtbot.wait(50)  # the axis takes its new range when the plot is laid out
    left = v.plot.getAxis("left")
    assert max(abs(x) for x in shown_numbers(left)) < 1.0  # the component axis, within ±1
    v.y_box.set_key(("score", "t2"))
    qtbot.wait(50)
    nums = shown_numbers(left)
    assert 1.0 < max(nums) <= 1.2 * t2.max(), f"T² up to {t2.max():.3g} shown as {nums}"
    assert left.autoSIPrefixScale == 1.0 and "x0" not in left.labelString()


@pytest.mark.slow
def test_no_axis_of_any_view_scales_its_numbers(views_for, small_scale_state, qtbot):
    state = small_scale_state
    views = views_for(state)
    for name in views.available_views():
        v = views.show_view(name)
        if name == "scatter":  # walk through every axis choice: each leaves its range behind
            for key in v.y_box.keys():
                v.y_box.set_key(key)
                qtbot.wait(20)
        qtbot.wait(20)
        axes = [it for it in v.figure.scene().items() if it.__class__.__name__ == "AxisItem"]
        assert axes
        for ax in axes:
            assert ax.autoSIPrefixScale == 1.0, f"{name}: {ax.orientation} axis scaled by {ax.autoSIPrefixScale}"
