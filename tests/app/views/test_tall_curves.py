"""Curves of many samples or features reach the plots reduced to the vertices a screen can show
(app.views._vertices), while the numbers they report come from every sample."""
import numpy as np
import pytest
from sklearn.metrics import auc, roc_auc_score

from robustcore.datasets import Dataset
from robustcore.methods import get_method

from app.views._vertices import COLUMNS


def _state(ds, *runs):
    from app.state import AppState
    st = AppState()
    st.set_dataset(ds)
    for method, params in runs:
        assert st.add_result(get_method(method).run(ds, params))
        st.set_current_method(method)
    return st


@pytest.mark.slow
def test_roc_and_pr_of_300000_samples_are_a_few_thousand_vertices(views_for):
    rng = np.random.default_rng(0)
    n = 300_000
    X = rng.standard_normal((n, 3)) @ rng.standard_normal((3, 6)) + 0.3 * rng.standard_normal((n, 6))
    truth = np.zeros(n, dtype=bool)
    truth[rng.choice(n, 3000, replace=False)] = True
    X[truth] += 1.5 * rng.standard_normal((3000, 6))
    state = _state(Dataset(X=X, name="tall", outliers=truth), ("pca", {"n_components": 3}))
    v = views_for(state).show_view("evaluation")
    res = state.result("pca")
    assert v.metrics["pca"]["roc_auc"] == pytest.approx(roc_auc_score(truth, res.sample_scores["outlier_score"]))
    curves = [it for plot in (v.roc_plot, v.pr_plot) for it in plot.listDataItems() if len(it.getData()[0]) > 2]
    assert len(curves) == 2
    for it in curves:
        x, y = it.getData()
        assert 100 < x.size <= 4 * (COLUMNS + 2)
        assert np.all(np.diff(x) >= 0) and x[0] == 0 and x[-1] == 1
    # the drawn ROC's area is the full curve's within a pixel column's width
    x, y = curves[0].getData()
    assert auc(x, y) == pytest.approx(v.metrics["pca"]["roc_auc"], abs=1.0 / COLUMNS)


@pytest.mark.slow
def test_a_ranking_of_3000_features_is_two_filled_curves_in_ranking_order(views_for):
    from app.views.ranking import BAR_LIMIT
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 3000))
    X[:40, :20] += 3.0                                  # 20 features separate two clusters
    state = _state(Dataset(X=X, name="wide"), ("esfs", {"n_features_to_select": 20}))
    assert 3000 > BAR_LIMIT
    v = views_for(state).show_view("ranking")
    res = state.result("esfs")
    heights = np.asarray(res.feature_scores["evsc"])[res.arrays["ranking"]]
    assert len(v.bars.opts["height"]) == 0
    assert v.top_curve.isVisible() and v.rest_curve.isVisible()
    tx, ty = v.top_curve.getData()
    rx, ry = v.rest_curve.getData()
    # the top 20 bars' tops, then the rest's, reduced to what a plot shows
    assert tx.max() < 20 and rx.min() > 19 and rx.size <= 4 * (COLUMNS + 2)
    assert ty.max() == heights[0] and set(np.round(ty, 12)) <= set(np.round(heights[:20], 12))
    assert ry.max() == heights[20] and ry.min() == heights[-1]
    v.k_box.setValue(1)                                  # one bar alone is still drawn
    tx, ty = v.top_curve.getData()
    assert tx.size == 2 and np.all(ty == heights[0])


@pytest.mark.slow
def test_a_learning_curve_over_30000_samples_is_drawn_through_its_pixel_columns(views_for):
    rng = np.random.default_rng(2)
    n = 40_000
    X = rng.standard_normal((n, 10))
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    state = _state(Dataset(X=X, name="stream", labels=y), ("scw", {}))
    v = views_for(state).show_view("learning-curve")
    res = state.result("scw")
    rate = np.asarray(res.arrays["history_mistake_rate"], dtype=float)
    assert rate.size > 4 * (COLUMNS + 2)
    (c1, c2) = v.curves["I"]
    x, yy = c1.getData()
    assert x.size <= 4 * (COLUMNS + 2)
    assert (yy[0], yy[-1]) == (rate[0], rate[-1]) and yy.max() == rate.max() and yy.min() == rate.min()
    assert v.status.text().count("final mistake rate") == 1
