"""Comparison of PCA, Coherence Pursuit and PCP fitted on the same (USPS) data."""
import numpy as np
import pytest
from PySide6.QtCore import Qt

from .conftest import data, make_state


@pytest.fixture
def comparison(views_for):
    state = make_state("usps-small", "pca", "coherence-pursuit", "pcp")
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


def test_reconstruction_error_of_each_methods_inliers(comparison):
    state, v = comparison
    ds = data("usps-small")
    cop = state.result("coherence-pursuit")
    inl = ~cop.flags["outlier"]
    C, m = cop.arrays["components"], cop.arrays["mean"]
    Z = ds.X[inl] - m
    ref = np.median(np.sum((Z - (Z @ C.T) @ C) ** 2, axis=1))
    assert v.errors["coherence-pursuit"]["own inliers"] == pytest.approx(ref, rel=1e-9)
    assert "known inliers" in v.errors["pca"]


def test_table_lists_flagged_samples_sorts_and_selects(comparison, qtbot):
    state, v = comparison
    ds = data("usps-small")
    union = ds.outliers.copy()
    for m in ("pca", "coherence-pursuit", "pcp"):
        union |= v.flags[m][0]
    assert sorted(v.table_samples()) == list(np.flatnonzero(union))
    # Sort by the PCA SPE column, descending: the first row is the largest SPE among the rows.
    col = [v.table.horizontalHeaderItem(c).text() for c in range(v.table.columnCount())].index("SPE PCA")
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
