"""The ROC / precision-recall view: one curve per outlier method that ran, drawn from the score
its summary was evaluated on, so the legend's numbers are the summary's; ranked best first."""
import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from .conftest import data, make_state


def test_curves_and_numbers_are_each_methods_own(views_for):
    state = make_state("usps-small", "pca", "coherence-pursuit", "pcp")
    views = views_for(state)
    v = views.show_view("evaluation")
    truth = data("usps-small").outliers
    assert set(v.metrics) == {"pca", "coherence-pursuit", "pcp"}
    for m, mt in v.metrics.items():
        res = state.result(m)
        key = {"pcp": "sparse_score"}.get(m, "outlier_score")
        # computed another way: scikit-learn's metrics on the result's own score
        assert mt["roc_auc"] == pytest.approx(roc_auc_score(truth, res.sample_scores[key]))
        assert mt["average_precision"] == pytest.approx(average_precision_score(truth, res.sample_scores[key]))
        assert res.summary["ROC-AUC (known outliers)"] == pytest.approx(mt["roc_auc"], abs=1e-4)
    aucs = [v.metrics[m]["roc_auc"] for m in v.order]
    assert aucs == sorted(aucs, reverse=True)
    # one ROC and one PR curve per method, plus the chance lines
    assert len(v.roc_plot.listDataItems()) == 3 + 1
    assert len(v.pr_plot.listDataItems()) == 3 + 1
    labels = [lab.text for _, lab in v.legend.items]
    for m in v.order:
        assert any(f"AUC {v.metrics[m]['roc_auc']:.3f}" in t for t in labels)
    assert v.status.text().startswith("Ranked by ROC-AUC")


def test_a_score_that_runs_the_wrong_way_shows_below_the_diagonal(views_for):
    """A planted anti-score (higher for inliers) gives AUC = 1 - AUC: the view reports it as is."""
    state = make_state("usps-small", "pca")
    res = state.result("pca")
    truth = data("usps-small").outliers
    auc = roc_auc_score(truth, res.sample_scores["outlier_score"])
    res.sample_scores["outlier_score"] = -np.asarray(res.sample_scores["outlier_score"])
    try:
        views = views_for(state)
        v = views.show_view("evaluation")
        assert v.metrics["pca"]["roc_auc"] == pytest.approx(1 - auc)
    finally:
        res.sample_scores["outlier_score"] = -np.asarray(res.sample_scores["outlier_score"])


def test_no_view_without_known_outliers(views_for):
    state = make_state("gaussian-2d", "pca")
    from app.views.evaluation import EvaluationView
    assert "no known outliers" in EvaluationView.missing(state)
    views = views_for(state)
    assert "evaluation" not in views.available_views()


def test_both_ends_of_the_rate_axes_are_labelled(views_for, qtbot):
    """0 and 1 under the ROC and precision-recall plots: pyqtgraph used to hide both as reaching
    past the axis, and the axes started at 0.2 as far as a reader could tell."""
    from PySide6.QtGui import QImage, QPainter

    state = make_state("usps-small", "pca")
    views = views_for(state)
    v = views.show_view("evaluation")
    qtbot.wait(50)
    v.grab()
    for plot in (v.roc_plot, v.pr_plot):
        ax = plot.getAxis("bottom")
        img = QImage(10, 10, QImage.Format.Format_ARGB32)
        painter = QPainter(img)
        try:
            texts = [t for *_, t in ax.generateDrawSpecs(painter)[2]]
        finally:
            painter.end()
        assert {"0", "1.0"} <= set(texts), texts
