"""Sample detail: pictures of the selected sample, its reconstruction, L, S and residual for
images; per-feature residual contributions for tables."""
import numpy as np
import pytest

from robustcore import compare

from .conftest import data, make_state


def test_image_sample_with_its_reconstruction_and_residual(views_for):
    state = make_state("usps-1-vs-8", "coherence-pursuit")
    v = views_for(state).show_view("detail")
    ds, res = data("usps-1-vs-8"), state.result("coherence-pursuit")
    state.set_selection([12])
    assert v.current_sample == 12
    shape = ds.image_shape
    x = ds.X[12]
    # Reference computed another way: projector P = CᵀC applied to the centred sample.
    C, m = res.subspace.components, res.subspace.mean
    recon = m + C.T @ (C @ (x - m))
    np.testing.assert_array_equal(v.images["original"].image, x.reshape(shape))
    np.testing.assert_allclose(v.images["reconstruction"].image, recon.reshape(shape), atol=1e-12)
    np.testing.assert_allclose(v.images["residual"].image, (x - recon).reshape(shape), atol=1e-12)
    assert not v.panels["part"].isVisible()
    assert "sample #12" in v.panels["original"].titleLabel.text


def test_pcp_detail_shows_L_and_S(views_for):
    state = make_state("usps-small", "pcp")
    v = views_for(state).show_view("detail")
    ds, res = data("usps-small"), state.result("pcp")
    state.set_selection([3, 30])
    shape = ds.image_shape
    np.testing.assert_array_equal(v.images["reconstruction"].image, res.arrays["low_rank"][3].reshape(shape))
    np.testing.assert_array_equal(v.images["part"].image, res.arrays["sparse"][3].reshape(shape))
    np.testing.assert_allclose(v.images["residual"].image,
                               (ds.X[3] - res.arrays["low_rank"][3] - res.arrays["sparse"][3]).reshape(shape))
    v.next_button.click()
    assert v.current_sample == 30
    v.next_button.click()
    assert v.current_sample == 3


def test_table_sample_contributions_sum_to_its_spe(views_for):
    state = make_state("cardio", "residual")
    v = views_for(state).show_view("detail")
    res = state.result("residual")
    state.set_selection([7])
    assert v.bar_plot.isVisible()
    bars = v.bars.opts["height"]
    assert len(bars) == data("cardio").n_features
    assert np.sum(bars) == pytest.approx(res.sample_scores["spe"][7], rel=1e-10)
    np.testing.assert_allclose(bars, compare.residual_contributions(data("cardio").X[7], res.subspace.components,
                                                                    res.subspace.mean)[0], rtol=1e-10, atol=1e-12)


def test_without_selection_the_most_outlying_flagged_sample_is_shown(views_for):
    state = make_state("cardio", "residual")
    v = views_for(state).show_view("detail")
    res = state.result("residual")
    flagged = np.flatnonzero(res.flags["outside_either"])
    assert v.current_sample == flagged[np.argmax(res.sample_scores["spe"][flagged])]
    assert "nothing selected" in v.status.text()


def test_sparse_data_densify_only_the_sample_shown(views_for, monkeypatch):
    # issue 24: the detail view densified the whole sparse data set to show one row
    import scipy.sparse as sp

    from app.state import AppState
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method

    rng = np.random.default_rng(0)
    X = sp.random(300, 40, density=0.1, format="csr", random_state=1) * 5 + sp.eye(300, 40, format="csr")
    ds = Dataset(X=X, name="sparse")
    res = get_method("pca").run(ds, {"n_components": 3})   # the fit itself works on a dense copy
    state = AppState()
    state.set_dataset(ds)
    assert state.add_result(res)
    state.set_current_method("pca")

    def whole(self, *a, **k):
        raise AssertionError("the whole sparse data set was densified")
    monkeypatch.setattr(Dataset, "dense", whole)
    v = views_for(state).show_view("detail")
    row = int(rng.integers(300))
    state.set_selection([row])
    assert v.current_sample == row
    x = X[row].toarray()[0]
    np.testing.assert_array_equal(v.parts["original"], x)
    C, m = res.subspace.components, res.subspace.mean
    np.testing.assert_allclose(v.parts["reconstruction"], m + C.T @ (C @ (x - m)), atol=1e-10)
    np.testing.assert_allclose(v.bars.opts["height"], compare.residual_contributions(x, C, m)[0],
                               rtol=1e-10, atol=1e-12)


def test_clearing_after_binned_bars_leaves_no_bars(views_for):
    """A table's contributions drawn in bins give each bar its own width and colour; clearing
    (new data while the view, drawn ahead, is not on screen) broadcast the old widths against
    no bars and raised inside Qt's event loop."""
    state = make_state("cardio", "residual")
    v = views_for(state).show_view("detail")
    k = 12
    v.bars.setOpts(x=np.arange(k) * 3.0, height=np.ones(k), width=np.full(k, 2.4),
                   brushes=[v.bars.opts.get("brush") or "b"] * k, pen=None)
    v.clear()
    assert len(v.bars.opts["x"]) == 0 and len(v.bars.opts["height"]) == 0
    state.set_selection([7])   # and it draws again
    assert len(v.bars.opts["height"]) == data("cardio").n_features
