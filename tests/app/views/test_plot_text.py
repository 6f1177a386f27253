"""No text collides in the L + S view's convergence plots and the comparison's plots, in the
window at 1280 x 800 and in exported figures (issue 33.6). Checked geometrically: the
rectangles pyqtgraph paints titles, axis titles and tick labels in do not intersect, an axis
title stays within its axis, and every method is named under its bars with room between names
(as Qt measures them; "PCA (10)CoP (12)PCP (99)" ran together in an exported SVG)."""
import pytest
from PySide6.QtCore import Qt

from ._text_rects import collisions, drawn_ticks, misaligned_legend_rows, plot_texts, title_outside_axis
from .conftest import data, fit, make_state

NAME_GAP = 6   # px at least between two methods' names


def _usps_runs(state, robpca=False):
    state.set_dataset(data("usps-small"))
    for method, params in (("pca", {"n_components": 10}), ("coherence-pursuit", {"n_components": 12}), ("pcp", {}),
                           *((("robpca", {}),) if robpca else ())):
        assert state.add_result(fit("usps-small", method, **params))


def _check_plots(plots, where):
    texts = [t for p in plots for t in plot_texts(p)]
    assert texts and collisions(texts) == [], where
    for p in plots:
        for side in ("left", "bottom"):
            assert not title_outside_axis(p.getAxis(side)), (where, side, p.getAxis(side).labelText)


def _check_convergence(v, where):
    c = v.convergence
    assert v.bottom.isVisible(), where
    _check_plots((c.res_plot, c.rank_plot), where)
    for p in (c.res_plot, c.rank_plot):
        assert len(drawn_ticks(p.getAxis("left"))) >= 2, where       # a scale, not one number
    # Decades all written alike ("1, 0.01, 0.0001, 10⁻⁶" down one axis before).
    decades = [t for t, _ in drawn_ticks(c.res_plot.getAxis("left"))]
    assert all(t == "1" or (t.startswith("10") and "." not in t) for t in decades), (where, decades)


def _check_comparison(v, where):
    _check_plots((v.angle_plot, v.error_plot, v.flag_plot), where)
    names = [n for n, _ in v._tick_names]
    for p in (v.error_plot, v.flag_plot):
        ticks = drawn_ticks(p.getAxis("bottom"))
        assert [t.strip("\n").split("\n")[0].split(" ")[0] for t, _ in ticks] == names, (where, ticks)
        # Names on the same line have room between them (staggered ones take every other line).
        for line in (0, 1):
            same = [r for t, r in ticks if (len(t) - len(t.lstrip("\n"))) == line]
            for a, b in zip(same, same[1:]):
                assert b.left() - a.right() >= NAME_GAP, (where, ticks)
    assert len(drawn_ticks(v.angle_plot.getAxis("bottom"))) >= 2, where


@pytest.mark.slow
@pytest.mark.parametrize("robpca", [False, True], ids=["three methods", "four methods"])
def test_no_text_collides_in_the_window_at_1280x800(qtbot, small_window, robpca):
    w = small_window
    _usps_runs(w.state, robpca)
    w.state.set_current_method("pcp")
    v = w.views.show_view("decomposition")
    if not v.conv_button.isChecked():
        qtbot.mouseClick(v.conv_button, Qt.MouseButton.LeftButton)   # as a user shows them
    qtbot.waitUntil(lambda: v.bottom.isVisible(), timeout=5000)
    qtbot.wait(100)
    _check_convergence(v, "convergence at 1280 x 800")
    cmp_ = w.views.show_view("comparison")
    qtbot.wait(100)
    _check_comparison(cmp_, "comparison at 1280 x 800")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1000, 700), (640, 480)])
def test_no_text_collides_in_exported_figures(views_for, tmp_path, size):
    state = make_state("usps-small", ("pca", {"n_components": 10}), ("coherence-pursuit", {"n_components": 12}), "pcp")
    views = views_for(state, size=(1500, 900))
    views.show_view("comparison")
    views.resize(*size)            # narrower than when the names were first chosen
    for ext in ("png", "svg"):
        views.export_figure(tmp_path / f"c.{ext}", view="comparison")
        _check_comparison(views.view("comparison"), f"comparison exported at {size} as {ext}")
    state.set_current_method("pcp")
    d = views.show_view("decomposition")
    d.conv_button.setChecked(True)
    for ext in ("png", "svg"):
        views.export_figure(tmp_path / f"d.{ext}", view="decomposition")
        if d.bottom.isVisible():                       # (they give way to pictures too small)
            _check_convergence(d, f"convergence exported at {size} as {ext}")
    assert size[1] < 600 or d.bottom.isVisible()


@pytest.mark.slow
@pytest.mark.parametrize("robpca", [False, True], ids=["three methods", "four methods"])
def test_comparison_legend_rows_are_level_with_their_symbols(qtbot, small_window, robpca):
    """Four methods give the angle legend six entries in three rows: the error and count
    legends beside it stood in rows as tall, their labels at the top and their swatches in the
    middle (stop 44's tour), a label beside the next entry's symbol."""
    w = small_window
    _usps_runs(w.state, robpca)
    v = w.views.show_view("comparison")
    qtbot.wait(100)
    legends = (v.angle_legend, v.error_legend, v.flag_legend)
    assert misaligned_legend_rows(legends, "comparison at 1280 x 800") == []
    w.resize(900, 700)       # the legends take other columns and lines: still level
    qtbot.wait(100)
    assert misaligned_legend_rows(legends, "comparison at 900 x 700") == []


def test_the_residuals_decades_are_written_alike(qtbot):
    """A residual from 1 to 1e-7 (PCP on 1,000,000 x 20, exported) was labelled "1, 0.01,
    0.0001, 10⁻⁶" down one axis."""
    import numpy as np
    import pyqtgraph as pg

    from app.views._convergence import ConvergencePlots
    from ._text_rects import drawn_ticks
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    c = ConvergencePlots(w.ci)
    w.resize(500, 420)
    w.show()
    qtbot.waitExposed(w)
    c.show(np.logspace(0, -7, 35), np.full(35, 3), 1e-7, True)
    qtbot.wait(50)
    ticks = sorted(drawn_ticks(c.res_plot.getAxis("left")), key=lambda t: -t[1].top())   # bottom to top
    ticks = [t for t, _ in ticks]
    assert len(ticks) >= 3 and ticks[-1] in ("1", "10¹"), ticks
    assert all(t == "1" or (t.startswith("10") and "." not in t) for t in ticks), ticks
