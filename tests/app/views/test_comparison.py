"""Comparison of PCA, Coherence Pursuit and PCP fitted on the same (USPS) data."""
import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from app.views._common import fmt

from .conftest import data, make_state


@pytest.fixture
def comparison(views_for):
    # Rank 2 pinned: the tests are about comparing, not about the automatic rank.
    state = make_state("usps-small", ("pca", {"n_components": 2}), ("coherence-pursuit", {"n_components": 2}), "pcp")
    return state, views_for(state).show_view("comparison")


def _angles_by_svd(A, B):
    # Reference computed another way: cosines of the principal angles are the singular values
    # of Qaᵀ Qb for orthonormal bases.
    qa, _ = np.linalg.qr(np.asarray(A).T)
    qb, _ = np.linalg.qr(np.asarray(B).T)
    s = np.clip(np.linalg.svd(qa.T @ qb, compute_uv=False), -1, 1)
    return np.sort(np.degrees(np.arccos(s)))


@pytest.mark.slow
def test_principal_angles_between_the_subspaces(comparison):
    state, v = comparison
    pca, cop = state.result("pca"), state.result("coherence-pursuit")
    ang = v.angles[("pca", "coherence-pursuit")]
    np.testing.assert_allclose(ang, _angles_by_svd(pca.subspace.components, cop.subspace.components), atol=1e-6)
    assert set(v.angles) == {("pca", "coherence-pursuit"), ("pca", "pcp"), ("coherence-pursuit", "pcp")}
    curves = v.angle_plot.listDataItems()
    assert len(curves) == 3
    assert np.allclose(curves[0].getData()[1], ang)


def _spe(X, C, m):
    Z = X - m
    return np.sum((Z - (Z @ C.T) @ C) ** 2, axis=1)


@pytest.mark.slow
def test_errors_compare_like_with_like(views_for):
    """Median SPE at one rank, on one set of samples: a rank-5 PCA and PCP's L (rank in the
    tens) would otherwise reconstruct better than a rank-2 Coherence Pursuit by construction."""
    state = make_state("usps-small", ("pca", {"n_components": 5}), ("coherence-pursuit", {"n_components": 2}), "pcp")
    v = views_for(state).show_view("comparison")
    ds = data("usps-small")
    res = {m: state.result(m) for m in ("pca", "coherence-pursuit", "pcp")}
    assert v.common_rank == 2
    unflagged = ~(res["pca"].flags["outlier"] | res["coherence-pursuit"].flags["outlier"] | res["pcp"].flags["outlier"])
    for m, r in res.items():
        C, mu = r.subspace.components[:2], r.subspace.mean
        assert v.errors["unflagged by all"][m] == pytest.approx(np.median(_spe(ds.X[unflagged], C, mu)), rel=1e-9)
        assert v.errors["known inliers"][m] == pytest.approx(np.median(_spe(ds.X[~ds.outliers], C, mu)), rel=1e-9)
        assert v.angles[("pca", "coherence-pursuit")].size == 2


def test_each_method_is_labelled_with_its_own_rank(comparison):
    """PCP was labelled "r = 10" (the directions kept) while its summary said rank of L = 152."""
    state, v = comparison
    rank_l = state.result("pcp").summary["rank of L"]
    assert rank_l > 10
    bottom = v.error_plot.getAxis("bottom")
    ticks = [t.replace("\n", " ") for _, t in bottom._tickLevels[0]]   # two lines where narrow
    assert ticks == ["PCA (2)", "CoP (2)", f"PCP ({rank_l})"]
    assert bottom.labelText == "method (own rank)"
    assert "compared at rank 2" in v.status.text() and f"PCP {rank_l} (rank of L)" in v.status.text()
    # with its unit where it fits on one line (the status line names the unit in any case)
    assert v.error_plot.titleLabel.text in ("median SPE at rank 2 (data units)", "median SPE at rank 2")
    assert "angles and errors in data units" in v.status.text()


def test_table_lists_flagged_samples_sorts_and_selects(comparison, qtbot):
    state, v = comparison
    ds = data("usps-small")
    union = ds.outliers.copy()
    for m in ("pca", "coherence-pursuit", "pcp"):
        union |= v.flags[m][0]
    assert sorted(v.table_samples()) == list(np.flatnonzero(union))
    # Sort by the PCA SPE column, descending (a click on its header, twice): the first row is
    # the largest SPE among the rows.
    col = _column(v, "SPE PCA (rank 2)")
    v.table.sortByColumn(col, Qt.SortOrder.DescendingOrder)
    rows = np.array(v.table_samples())
    assert rows[0] == rows[np.argmax(v.spe["pca"][rows])]
    assert v.table.model().index(0, col).data() == fmt(float(v.spe["pca"][rows[0]]))
    # Clicking a row selects that sample everywhere.
    v.table.selectRow(2)
    np.testing.assert_array_equal(state.selection, [rows[2]])
    # A selection made elsewhere is shown in the table.
    state.set_selection([rows[5], rows[7]])
    assert _selected_rows(v) == [5, 7]


def test_a_new_comparison_lists_its_samples_first_to_last(comparison):
    """Qt sorts a table descending unless told otherwise: the comparison opened on its last
    samples (22,691, 22,689 ... on a8a), under a header arrow few read."""
    _, v = comparison
    rows = [int(v.table.model().index(r, 0).data()) for r in range(v.table.model().rowCount())]
    assert rows == sorted(rows) and len(rows) > 10
    assert v.table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.AscendingOrder


def _column(v, name):
    model = v.table.model()
    return [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())].index(name)


def _selected_rows(v):
    return sorted(i.row() for i in v.table.selectionModel().selectedRows())


def test_sorting_by_spe_orders_rows_as_argsort_and_selection_follows(comparison, qtbot):
    """The table sorts by value with one stable argsort: ascending it is np.argsort(kind="stable")
    of the column, descending the same with ties kept in their order; a selection made in the
    state selects exactly the rows of those samples, wherever the sort put them, and a click on
    the header sorts the same way."""
    state, v = comparison
    # Shown as the header's sort indicator says (by index: Qt starts it on the first column).
    listed = np.array(v.table_samples())
    header = v.table.horizontalHeader()
    assert header.sortIndicatorSection() == 0
    descending = header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    np.testing.assert_array_equal(listed, np.sort(listed)[::-1] if descending else np.sort(listed))
    spe = v.spe["pcp"][listed]
    col = _column(v, f"SPE PCP (rank {v.common_rank})")
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(header.sectionViewportPosition(col) + 5, header.height() // 2))
    assert header.sortIndicatorSection() == col
    expected = listed[np.argsort(spe, kind="stable")]
    if header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder:
        expected = listed[np.argsort(-spe, kind="stable")]
    np.testing.assert_array_equal(v.table_samples(), expected)
    v.table.sortByColumn(col, Qt.SortOrder.AscendingOrder)
    np.testing.assert_array_equal(v.table_samples(), listed[np.argsort(spe, kind="stable")])
    # Every cell of the column, as shown, is the SPE of its row's sample.
    model = v.table.model()
    shown = np.array(v.table_samples())
    assert [model.index(r, col).data() for r in range(model.rowCount())] == [fmt(float(x)) for x in v.spe["pcp"][shown]]
    # A selection in the state (three samples, one not in the table) selects those rows only.
    outside = int(np.setdiff1d(np.arange(v.spe["pcp"].size), listed)[0])
    picked = shown[[0, 1, shown.size - 1]]
    state.set_selection(np.r_[picked, outside])
    assert _selected_rows(v) == [0, 1, shown.size - 1]
    # Sorting again moves the selected rows with their samples.
    v.table.sortByColumn(col, Qt.SortOrder.DescendingOrder)
    now = np.array(v.table_samples())
    assert sorted(now[_selected_rows(v)].tolist()) == sorted(picked.tolist())
    np.testing.assert_array_equal(state.selection, np.sort(np.r_[picked, outside]))


def test_a_mixed_unit_table_is_compared_in_one_unit(views_for):
    """PCA and Coherence Pursuit standardise a table in mixed units (scale="auto"); robust PCA's L
    lives in the data's own units. The comparison measured each in its own units (errors ~1 next
    to errors ~1e6), so robust PCA looked worse by the square of the units. Now every subspace is
    mapped into the one unit the scaled fits share, and the figure says which."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(3)
    n, d, r = 300, 8, 2
    X = rng.standard_normal((n, r)) @ rng.standard_normal((r, d)) + 0.05 * rng.standard_normal((n, d))
    X[:15] += 4 * rng.standard_normal((15, d))
    units = np.geomspace(1, 1e4, d)
    X = X * units + 100.0
    truth = np.zeros(n, bool)
    truth[:15] = True
    ds = Dataset(X=X, name="mixed units", outliers=truth)
    state = AppState()
    state.set_dataset(ds)
    for m, p in (("pca", {"n_components": 2}), ("coherence-pursuit", {"n_components": 2}), ("pcp", {})):
        res = get_method(m).run(ds, p)
        assert state.add_result(res)
    assert state.result("pca").subspace.scaling == "standard"
    assert not state.result("pcp").subspace.scaled
    v = views_for(state).show_view("comparison")
    assert v.unit == "standardised units"
    assert "standardised units" in v.error_plot.titleLabel.text and "standardised units" in v.status.text()
    # Reference computed another way: standardise X with PCA's own scaling, and carry PCP's
    # subspace over by mapping two points of each direction and orthonormalising.
    sub = state.result("pca").subspace
    Z = (X - sub.scale_center) / sub.scale
    pcp = state.result("pcp").subspace
    mu = (pcp.mean - sub.scale_center) / sub.scale
    D = (pcp.components[:2] + pcp.mean - sub.scale_center) / sub.scale - mu
    q, _ = np.linalg.qr(D.T)
    unflagged = ~(state.result("pca").flags["outlier"] | state.result("coherence-pursuit").flags["outlier"]
                  | state.result("pcp").flags["outlier"])
    assert v.errors["unflagged by all"]["pcp"] == pytest.approx(np.median(_spe(Z[unflagged], q.T, mu)), rel=1e-8)
    assert v.errors["unflagged by all"]["pca"] == pytest.approx(
        np.median(_spe(Z[unflagged], sub.components[:2], sub.mean)), rel=1e-8)
    # every method's error is now of the same order (one unit), not 1e6 apart
    errs = np.array(list(v.errors["unflagged by all"].values()))
    assert errs.max() / errs.min() < 100


def test_a_narrow_view_keeps_every_plot_and_legend_inside_the_figure(views_for, qtbot):
    """At 800 px of window the views get about 490 px: one legend entry ("flagged known outliers
    (of 50)") made its legend, and so the figure, wider than that, and the counts' plot was cut
    off at the right edge. Long entries now go on more lines instead."""
    state = make_state("usps-small", ("pca", {"n_components": 2}), ("coherence-pursuit", {"n_components": 2}), "pcp")
    v = views_for(state, size=(490, 600)).show_view("comparison")
    qtbot.wait(100)
    width = v.figure.viewport().width()
    assert 300 < width <= 490
    for item in (v.angle_plot, v.error_plot, v.flag_plot, v.angle_legend, v.error_legend, v.flag_legend):
        box = item.mapRectToScene(item.boundingRect())
        assert box.left() >= 0 and box.right() <= width + 1, (item, box, width)
    # and what the legends say is all still there, on more lines
    texts = [lab.text.replace("<br>", " ") for _, lab in v.flag_legend.items]
    assert any(t.startswith("flagged known outliers (of ") for t in texts), texts
    assert any("<br>" in lab.text for _, lab in v.flag_legend.items)


def test_a_failing_layout_while_a_view_is_resized_is_reported_not_fatal(views_for, qtbot, monkeypatch, capsys):
    """An exception leaving an event filter is stored by PySide6 for later, and 6.11 crashed doing
    so (a segmentation fault while a new data set's clearing showed a tab): the filter keeps it."""
    state = make_state("usps-small", ("pca", {"n_components": 2}), ("coherence-pursuit", {"n_components": 2}))
    v = views_for(state, size=(700, 600)).show_view("comparison")
    qtbot.wait(50)

    def broken():
        raise RuntimeError("a legend went away")
    monkeypatch.setattr(v, "fit_layout", broken)
    v.figure.resize(640, 500)
    qtbot.wait(50)
    v.figure.resize(600, 480)   # and the window goes on
    assert v.figure.width() == 600
    assert "a legend went away" in capsys.readouterr().err


def test_a_legend_deleted_with_its_plot_is_no_longer_fitted(views_for, qtbot):
    state = make_state("usps-small", ("pca", {"n_components": 2}), ("coherence-pursuit", {"n_components": 2}))
    v = views_for(state, size=(700, 600)).show_view("comparison")
    qtbot.wait(50)
    from shiboken6 import delete
    gone = v._legends[0][0]
    delete(gone)
    v.fit_layout()   # no "Internal C++ object already deleted"
    assert all(leg is not gone for leg, _ in v._legends) and v._legends


@pytest.mark.slow
def test_a_result_left_out_is_named_and_counts_read_in_thousands(views_for):
    """On rare 0/1 features PCP finds no low-rank part, so it has no subspace to compare: the
    view compared PCA and CoP without a word about PCP, under "unflagged by all (48964)" and
    "the 48534 known outliers" (a w8a-like table at 1280 x 800)."""
    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method

    rng = np.random.default_rng(0)
    known = np.zeros(1500, dtype=bool)
    known[:1200] = True
    ds = Dataset(X=(rng.random((1500, 20)) < 0.03).astype(float), name="rare features", outliers=known)
    state = AppState()
    state.set_dataset(ds)
    for m in ("pca", "coherence-pursuit", "pcp"):
        assert state.add_result(get_method(m).run(ds, {}))
    assert state.result("pcp").subspace is None          # (what this test is about)
    v = views_for(state).show_view("comparison")
    assert v.available_methods() == ["pca", "coherence-pursuit"]
    assert "not compared: Robust PCA (PCP) (robust PCA found no low-rank part" in v.status.text()
    assert "against the 1,200 known outliers" in v.status.text()
    texts = [label.text for leg in (v.error_legend, v.flag_legend) for _, label in leg.items]
    unflagged = v._counts["sets"]["unflagged by all"]
    assert unflagged >= 1000 and f"unflagged by all ({unflagged:,})" in texts
    assert "flagged known outliers (of 1,200)" in texts
    # each method's count of flagged samples, not "all flagged" (read as flagged by all beside
    # "unflagged by all", a8a at 1280 x 800)
    assert "flagged" in texts and "all flagged" not in texts
    # the counts' axis too: "30,000" where pyqtgraph wrote "30000" beside "1,000,000" in the legends
    axis = v.flag_plot.getAxis("left")
    assert axis.tickStrings([0.0, 30000.0, 60000.0], 1.0, 30000.0) == ["0", "30,000", "60,000"]
