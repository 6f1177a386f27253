"""Comparison of PCA, Coherence Pursuit and PCP fitted on the same (USPS) data."""
import numpy as np
import pytest
from PySide6.QtCore import Qt

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


def test_principal_angles_between_the_subspaces(comparison):
    state, v = comparison
    pca, cop = state.result("pca"), state.result("coherence-pursuit")
    ang = v.angles[("pca", "coherence-pursuit")]
    np.testing.assert_allclose(ang, _angles_by_svd(pca.arrays["components"], cop.arrays["components"]), atol=1e-6)
    assert set(v.angles) == {("pca", "coherence-pursuit"), ("pca", "pcp"), ("coherence-pursuit", "pcp")}
    curves = v.angle_plot.listDataItems()
    assert len(curves) == 3
    assert np.allclose(curves[0].getData()[1], ang)


def _spe(X, C, m):
    Z = X - m
    return np.sum((Z - (Z @ C.T) @ C) ** 2, axis=1)


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
        C, mu = r.arrays["components"][:2], r.arrays["mean"]
        assert v.errors["unflagged by all"][m] == pytest.approx(np.median(_spe(ds.X[unflagged], C, mu)), rel=1e-9)
        assert v.errors["known inliers"][m] == pytest.approx(np.median(_spe(ds.X[~ds.outliers], C, mu)), rel=1e-9)
        assert v.angles[("pca", "coherence-pursuit")].size == 2


def test_each_method_is_labelled_with_its_own_rank(comparison):
    """PCP was labelled "r = 10" (the directions kept) while its summary said rank of L = 152."""
    state, v = comparison
    rank_l = state.result("pcp").summary["rank of L"]
    assert rank_l > 10
    bottom = v.error_plot.getAxis("bottom")
    ticks = [t for _, t in bottom._tickLevels[0]]
    assert ticks == ["PCA (2)", "CoP (2)", f"PCP ({rank_l})"]
    assert bottom.labelText == "method (own rank)"
    assert "compared at rank 2" in v.status.text() and f"PCP {rank_l} (rank of L)" in v.status.text()
    assert v.error_plot.titleLabel.text.replace("<br>", " ") == "median SPE at rank 2"


def test_table_lists_flagged_samples_sorts_and_selects(comparison, qtbot):
    state, v = comparison
    ds = data("usps-small")
    union = ds.outliers.copy()
    for m in ("pca", "coherence-pursuit", "pcp"):
        union |= v.flags[m][0]
    assert sorted(v.table_samples()) == list(np.flatnonzero(union))
    # Sort by the PCA SPE column, descending: the first row is the largest SPE among the rows.
    col = [v.table.horizontalHeaderItem(c).text() for c in range(v.table.columnCount())].index("SPE PCA (rank 2)")
    v.table.sortItems(col, Qt.SortOrder.DescendingOrder)
    rows = np.array(v.table_samples())
    assert rows[0] == rows[np.argmax(v.spe["pca"][rows])]
    # Clicking a row selects that sample everywhere.
    v.table.selectRow(2)
    np.testing.assert_array_equal(state.selection, [rows[2]])
    # A selection made elsewhere is shown in the table.
    state.set_selection([rows[5], rows[7]])
    picked = sorted({it.row() for it in v.table.selectedItems()})
    assert picked == [5, 7]
