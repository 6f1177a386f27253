"""Coherence Pursuit's ``center="affine"`` (robustcore.subspace._cop_affine): the rows minus
the columns' medians, lifted by one constant coordinate, give a flat of the data whose answer
does not depend on where any column's zero lies."""
import warnings

import numpy as np
import pytest

from robustcore import PCP
from robustcore.subspace.coherence_pursuit import CoherencePursuit


def planted_flat(seed=0, n_in=2400, n_out=600, d=15, r=2, offset=40.0):
    """Inliers near an r-dimensional flat far from the origin (every column's zero far from
    the data), and 20 % outliers spread around the flat's centre in every direction."""
    rng = np.random.default_rng(seed)
    B = np.linalg.qr(rng.standard_normal((d, r)))[0].T
    c = offset * rng.standard_normal(d)
    inl = c + 3.0 * rng.standard_normal((n_in, r)) @ B + 0.05 * rng.standard_normal((n_in, d))
    outl = c + 3.0 * rng.standard_normal((n_out, d))
    X = np.vstack([inl, outl])
    return X, np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)], B, c


def _fit(X, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CoherencePursuit(center="affine", **kw).fit(X)


@pytest.mark.parametrize("scale", ["none", "standard", "robust"])
def test_shifting_a_column_changes_nothing_but_the_centre(scale):
    """Every column moved by its own constant (up to 1,000 spreads, either way): the same
    rows selected and flagged, the same subspace and scores to rounding, the centre moved by
    the shift. Unscaled, center="none" on the same data moves its scores by far more (the
    test's power; "standard" and "robust" scaling subtract a location of their own)."""
    X, _, _, _ = planted_flat(1)
    shift = np.random.default_rng(9).uniform(-1000, 1000, X.shape[1]) * X.std(axis=0)
    a, b = _fit(X, scale=scale), _fit(X + shift, scale=scale)
    sa, sb = a.score_samples(X), b.score_samples(X + shift)
    assert np.abs(sa - sb).max() <= 1e-8 * np.abs(sa).max()
    np.testing.assert_array_equal(a.selected_indices_, b.selected_indices_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X + shift))
    np.testing.assert_allclose(np.abs(a.components_ @ b.components_.T), np.eye(a.n_components_), atol=1e-8)
    def centre(e):          # in the data's units (mean_ is in the scaled ones)
        return e.scale_center_ + e.mean_ * e.scale_
    np.testing.assert_allclose(centre(b) - centre(a), shift, rtol=1e-9)
    if scale != "none":
        return
    c, e = (CoherencePursuit(center="none", scale=scale).fit(Z) for Z in (X, X + shift))
    sc, se = c.score_samples(X), e.score_samples(X + shift)
    assert np.abs(sc - se).max() > 1e-3 * np.abs(sc).max()


def test_a_planted_flat_far_from_the_origin_is_recovered_with_its_outliers():
    """A rank-2 flat 40 spreads from the origin with 20 % outliers around it: the rank is
    estimated as 2 (the offset is not counted), the directions are the planted ones, the
    centre lies on the flat, every outlier is flagged and about alpha of the inliers."""
    X, y, B, c = planted_flat(2)
    est = _fit(X)
    assert est.n_components_ == 2
    assert np.linalg.svd(est.components_ @ B.T, compute_uv=False).min() > 0.9999
    off = est.mean_ - c
    assert np.linalg.norm(off - B.T @ (B @ off)) < 0.05          # on the flat (noise 0.05 per column)
    flagged = est.predict(X) == -1
    assert flagged[y].all()
    assert 0.01 / 3 <= flagged[~y].mean() <= 0.03
    assert set(est.selected_indices_) <= set(np.flatnonzero(~y))
    # a rank given is the flat's: n_components = 2 gives the same subspace
    fixed = _fit(X, n_components=2)
    np.testing.assert_allclose(np.abs(fixed.components_ @ est.components_.T), np.eye(2), atol=1e-12)


def test_wide_tables_and_l1_take_the_same_lifted_rows():
    """Fewer than two rows per feature (the coherence from pairs of rows) and norm=1: the
    flat and its invariance hold on those routes too."""
    X, y, B, _ = planted_flat(3, n_in=60, n_out=10, d=40, r=2)
    shift = np.random.default_rng(4).uniform(-50, 50, X.shape[1])
    for kw in ({}, {"norm": 1}):
        a, b = _fit(X, scale="none", **kw), _fit(X + shift, scale="none", **kw)
        assert np.linalg.svd(a.components_ @ B.T, compute_uv=False).min() > 0.999
        np.testing.assert_array_equal(a.selected_indices_, b.selected_indices_)
        np.testing.assert_allclose(a.score_samples(X), b.score_samples(X + shift), rtol=1e-8)


def test_out_of_core_gives_the_in_memory_answer():
    """The lifting is in the passes' prep and the centre and lift come from the first pass's
    sampled rows (every second row here: 200,002 rows), the same rows out of core."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(5)
    n, d = 200_002, 6
    X = rng.standard_normal((n, 2)) @ rng.standard_normal((2, d)) + 0.1 * rng.standard_normal((n, d)) + 7.0
    X[rng.random(n) < 0.1] = 3.0 * rng.standard_normal(d) + 7.0
    a = _fit(X)
    b = _fit(da.from_array(X, chunks=(30_000, d)))
    np.testing.assert_array_equal(np.asarray(b.selected_indices_), a.selected_indices_)
    np.testing.assert_allclose(b.mean_, a.mean_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.abs(b.components_ @ a.components_.T), np.eye(a.n_components_), atol=1e-10)
    np.testing.assert_allclose(b.score_samples(X[:5000]), a.score_samples(X[:5000]), rtol=1e-9)


def test_affine_is_coherence_pursuits_alone():
    """PCP's centre has no lifted form: "affine" is refused there, with the choices."""
    X, *_ = planted_flat(0, n_in=100, n_out=10, d=5)
    with pytest.raises(ValueError, match="center"):
        PCP(center="affine").fit(X)


def test_usps_flags_catch_the_eights_with_the_ones_at_the_stated_rate():
    """The bundled usps-1-vs-8 (50 eights among 264 ones), center="affine": at least 40 of the
    eights flagged with the ones within [alpha / 3, 3 alpha], the guard a default must pass
    (benchmarks/results_outliers.md). Stop 48's lift (the median row length) and rank rule
    caught 31: 24 eights were inside the rows that bound the limits."""
    from robustcore.datasets import demo
    ds = demo("usps-1-vs-8")
    X, truth = np.asarray(ds.X, float), np.asarray(ds.outliers, bool)
    flagged = _fit(X).predict(X) == -1
    assert flagged[truth].sum() >= 40
    assert 0.01 / 3 <= flagged[~truth].mean() <= 0.03


def test_the_lift_is_twice_the_median_row_length():
    """s, the lifted coordinate, is twice the median length of the centred sampled rows
    (robustcore.subspace._cop_affine's doc: why twice)."""
    from robustcore.subspace._cop_affine import lift_length
    from robustcore.subspace._cop_passes import _Prep
    Y = np.random.default_rng(3).standard_normal((1001, 5)) + 7.0
    centre = np.median(Y, axis=0)
    s = lift_length(Y, _Prep(None, centre))
    assert s == pytest.approx(2.0 * np.median(np.linalg.norm(Y - centre, axis=1)), rel=1e-12)


def test_the_rank_is_the_elbow_of_the_whole_lifted_spectrum():
    """A lifted spectrum with the offset's eigenvalue and then a smooth decay (no elbow beyond
    the offset): the flat has rank 1. Stop 48's rule took the elbow of the rest alone, which
    on a smooth decay lands at the cap, half the dimensions (20 here; InternetAds 44)."""
    from robustcore.subspace._cop_affine import affine_rank
    ev = np.r_[1000.0, np.geomspace(10.0, 0.01, 40)]
    assert affine_rank(ev, 1000, 40) == 1
    # a clear elbow beyond the offset is kept: three strong directions, then noise
    assert affine_rank(np.r_[1000.0, 30.0, 25.0, 20.0, np.geomspace(2.0, 0.5, 37)], 1000, 40) == 3


def test_range_messages_count_the_offsets_direction_apart_from_n_components():
    """center="affine" selects at least n_components + 1 rows (the lifted offset is one more
    direction): a count out of range names that bound as such, not as n_components."""
    X = np.random.default_rng(0).standard_normal((50, 10))
    with pytest.raises(ValueError, match=r"integer in \[4, 50\] \(between n_components \+ 1 \(center=\"affine\""):
        _fit(X, n_components=3, n_inliers=51)
    with pytest.raises(ValueError, match=r"at least n_components \+ 1 \(center=\"affine\"[^)]*\) = 4 of the 50"):
        _fit(X, n_components=3, selection="fraction", outlier_fraction=0.95)
    with pytest.raises(ValueError, match=r"n_components = 4 \(and the offset of center=\"affine\"\) needs at least 6"):
        _fit(X[:5], n_components=4)
