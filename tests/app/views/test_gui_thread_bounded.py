"""The comparison and the L + S views cost the GUI thread the same at any number of rows (issue
33.2): what grows with the data is computed on a worker, what the window builds is split over
idle turns, and nothing asks Qt to measure every row of a table. Checked by the thread the work
runs on, by what is built in a turn and by how many cells are asked for, never by timing."""
from __future__ import annotations

import numpy as np
import pytest

from app.views import _table_heatmaps as th
from app.views import comparison as cmp_view
from app.views._flag_table import FIT_ROWS
from app.views import decomposition as dec
from robustcore import compare

from .test_any_size import D, state_of, table
from .test_comparison import _angles_by_svd
from .test_first_show_bounded import _record   # whether each call ran on the GUI thread

# A table the comparison and the L + S view both take as large (40,000 x 8, the tour's size).
N = 40_000
assert N * D > cmp_view.SYNC_VALUES and N * D > th.LOAD_SYNC_VALUES


@pytest.fixture
def compared(views_for, qtbot, monkeypatch):
    on_gui = []
    _record(monkeypatch, compare, "common_rank_comparison", on_gui)
    state = state_of(N, ("pca", "coherence-pursuit"))
    views = views_for(state)
    v = views.show_view("comparison")
    assert "comparing 2 methods" in v.status.text()   # said while the worker computes
    qtbot.waitUntil(lambda: v._shown_key is not None and not v.drawing(), timeout=60_000)
    return state, views, v, on_gui


def test_a_large_comparison_is_computed_off_the_gui_thread(compared):
    state, _views, v, on_gui = compared
    assert on_gui == [False]
    pca, cop = state.result("pca"), state.result("coherence-pursuit")
    k = v.common_rank
    ang = v.angles[("pca", "coherence-pursuit")]
    np.testing.assert_allclose(ang, _angles_by_svd(pca.subspace.components[:k], cop.subspace.components[:k]),
                               atol=1e-6)
    np.testing.assert_allclose(v.angle_plot.listDataItems()[0].getData()[1], ang)
    # The table lists the samples either method flags and the known outliers.
    ds = table(N)
    listed = np.asarray(pca.flags["outlier"]) | np.asarray(cop.flags["outlier"]) | ds.outliers
    np.testing.assert_array_equal(np.sort(v.table_samples()), np.flatnonzero(listed))
    bars = [it for it in v.flag_plot.items if hasattr(it, "opts") and "height" in it.opts]
    assert [float(h) for h in bars[0].opts["height"]] == [float(np.sum(pca.flags["outlier"])),
                                                         float(np.sum(cop.flags["outlier"]))]


def test_a_method_change_alone_does_not_compare_again(compared, qtbot):
    state, views, v, on_gui = compared
    state.set_current_method("pca")   # the views follow the method: nothing the comparison shows changed
    qtbot.wait(200)
    v.ensure_fresh()
    assert on_gui == [False]
    from robustcore.methods import get_method
    state.add_result(get_method("pca").run(table(N), {"n_components": 1}))   # a new PCA result: compared again
    views.show_view("comparison")
    qtbot.waitUntil(lambda: len(on_gui) == 2 and not v.drawing(), timeout=60_000)
    assert on_gui == [False, False]


def test_an_export_draws_a_comparison_still_being_computed(views_for, qtbot, tmp_path):
    views = views_for(state_of(N, ("pca", "coherence-pursuit")))
    v = views.show_view("comparison")
    assert v._shown_key is None
    views.export_figure(str(tmp_path / "c.png"), view="comparison")
    assert v._shown_key is not None and not v.drawing() and (tmp_path / "c.png").stat().st_size > 0
    assert len(v.flag_plot.items) > 0 and v.model.rowCount() > 0
    assert v.angles[("pca", "coherence-pursuit")].size == v.common_rank


def test_the_table_is_sized_without_asking_qt_to_measure_every_row(compared, monkeypatch):
    """resizeColumnsToContents asked the model for ten roles of up to a thousand rows per
    column (150-450 ms per refresh); the columns are now sized from a fixed number of texts."""
    _state, _views, v, _ = compared
    calls = []
    real = type(v.model).data
    monkeypatch.setattr(type(v.model), "data", lambda self, *a: (calls.append(1), real(self, *a))[1])
    rows = v.rows
    assert rows.size > 2 * FIT_ROWS
    v._fill_table(v.available_methods(), table(N), rows)
    assert len(calls) < 2 * FIT_ROWS
    # ... and every text of the rows measured, and of the first rows shown, fits its column.
    from PySide6.QtGui import QFontMetrics
    fm, header = QFontMetrics(v.table.font()), v.table.horizontalHeader()
    for c, col in enumerate(v.model.columns):
        widest = max(fm.horizontalAdvance(col.text(int(i))) for i in v.table_samples()[:50])
        assert header.sectionSize(c) >= widest, col.name


def test_the_comparison_is_built_over_idle_turns(views_for):
    state = state_of(2_000, ("pca", "coherence-pursuit"))
    v = cmp_view.ComparisonView(state)
    assert v.angle_plot is None and v.error_plot is None and v.flag_plot is None
    made = []
    while v.build_step():
        made.append(len(v._plots()))
    assert made == [1, 2, 3]   # one plot (and its legend) per turn
    v.deleteLater()


def test_the_decomposition_is_built_over_idle_turns(views_for):
    v = dec.DecompositionView(state_of(2_000, ("pcp",)))
    assert len(v.panels) == 1 and v.s_bar is None and v.convergence is None
    steps = 0
    while v.build_step():
        steps += 1
    # three pictures, two colour bars, two convergence plots and the layout: one per turn
    assert steps == 8
    assert len(v.panels) == 4 and v.s_bar is not None and v.pictures.gray_bar is not None
    assert v.convergence.rank_plot is not None and v.pictures.grid is not None
    v.deleteLater()


def test_a_tables_scales_are_set_off_the_gui_thread(views_for, qtbot, monkeypatch):
    """The colour scales and the default mask threshold read every probed entry of S (a
    percentile and a quantile): with a large table's probe, on the worker that loads it."""
    from app import palette
    scales, thresholds = [], []
    _record(monkeypatch, dec, "scales_of", scales)
    _record(monkeypatch, palette, "mask_threshold", thresholds)
    views = views_for(state_of(N, ("pcp",), max_iter=3))
    v = views.show_view("decomposition")
    assert v.tables.loading()
    qtbot.waitUntil(lambda: not v.tables.loading() and v.drawn is not None, timeout=120_000)
    assert scales == [False] and thresholds == [False]
    # the scales of every entry (this table's probe is all of it), in the view's column units
    res = state_of(N, ("pcp",), max_iter=3).result("pcp")
    L, S = np.asarray(res.arrays["low_rank"]), np.asarray(res.arrays["sparse"])
    span = L.max(axis=0) - L.min(axis=0)
    Su = np.abs(S / span)
    assert v.s_levels[1] == pytest.approx(np.percentile(Su, 99.5), rel=1e-9)
    assert v.threshold() == pytest.approx(palette.mask_threshold(S / span), abs=1e-3)   # (3 decimals)


def test_a_comparison_from_the_worker_is_drawn_over_turns(compared, qtbot):
    """The angles in the turn the worker's numbers arrive, the bars and the table each in a
    turn of their own."""
    state, _views, v, _ = compared
    ms = v.available_methods()
    results = {m: state.result(m) for m in ms}
    got = cmp_view._comparison_work(table(N), results)(None)
    v.clear()
    v._show(cmp_view._key(table(N), results), table(N), ms, got, at_once=False)
    assert len(v.angle_plot.listDataItems()) == 1 and v.drawing()
    assert not v.flag_plot.items and v.model.rowCount() == 0
    qtbot.waitUntil(lambda: not v.drawing(), timeout=10_000)
    assert v.flag_plot.items and v.model.rowCount() == got["rows"].size


@pytest.mark.slow
def test_an_export_of_a_large_tables_l_s_counts_its_mask_and_numbers_rows_in_thousands(views_for, tmp_path,
                                                                                         monkeypatch):
    """The mask of a table loaded on a worker was exported before its share per bin was counted
    (on another worker): "any in bin", every bin in the mask colour for a 1,000,000-row table.
    Its rows were numbered "500000" and "1e+06"."""
    from app.views._pictures import binned_mask

    # Counted on a worker above this many entries: 20,000,000 then; 320,000 here.
    monkeypatch.setattr(th, "SYNC_VALUES", 10_000)

    from ._text_rects import drawn_ticks
    views = views_for(state_of(N, ("pcp",)))
    v = views.show_view("decomposition")
    assert v.tables.loading()                                 # (what this test is about)
    views.export_figure(str(tmp_path / "d.png"), view="decomposition")
    t = v.threshold()
    region, tiles = v.pictures.tiles["whole"]
    assert region.rows.binned and tiles["t"] == t and tiles["M"] is not None
    np.testing.assert_array_equal(v.images["mask"].image, binned_mask(tiles, v.gray_levels, t))
    assert v.panels["mask"].titleLabel.text.endswith("share per bin")
    rows = [text for text, _ in drawn_ticks(v.panels["original"].getAxis("left"))]
    assert any("," in r for r in rows) and not any("e+" in r for r in rows), rows
