"""A view never draws another result than the one it names (issue 15's first defect).

Driven as a user would: several methods run one after the other on the same data, the Method
panel switched, views switched; after every step each view's drawn result, result chooser,
title and legend are checked against the result object in the state.
"""
import numpy as np
import pytest

from robustcore.methods import METHODS




def _load(qtbot, w, name):
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.load_demo(name)
    return w.state.dataset


def _run(qtbot, w, method, **params):
    w.method_panel.set_method(method)
    w.method_panel.form().set_values(params)
    with qtbot.waitSignal(w.runFinished, timeout=120000) as blocker:
        assert w.run() is not None
    return blocker.args[0]


def _title(plot) -> str:
    return plot.titleLabel.text


def assert_names_what_it_draws(v, res):
    """The view draws ``res``, and its chooser, title and legend say so."""
    title = METHODS[res.method].title
    assert v.method_box.currentText() == title, f"{v.name}'s chooser says {v.method_box.currentText()!r}"
    if v.name == "scatter":
        assert _title(v.plot).startswith(title + " — "), _title(v.plot)
        np.testing.assert_array_equal(v.cloud.x, res.arrays["projection"][:, 0])
        flags = res.flags["outlier"]
        fx, _ = v.cloud.flag_item.getData()
        assert fx.size == int(flags.sum()), f"{fx.size} rings for {int(flags.sum())} flagged by {title}"
        ringed = [lab.text for _, lab in v.legend.items if lab.text.startswith("ringed:")]
        assert ringed == [f"ringed: {res.summary['outlier rule']} ({int(flags.sum())})"]
    elif v.name == "contour":
        assert title in v.status.text()
        assert v.limits == {"spe": res.summary["SPE limit"], "t2": res.summary["T2 limit"]}
        np.testing.assert_array_equal(v.current_flags, res.flags["outlier"])
    elif v.name == "detail":
        assert title in v.status.text()
    assert v.method_box.key() == res.method
    assert v.figure_results() == [res]  # what an exported figure records as its source


@pytest.mark.slow
def test_every_view_follows_the_latest_result_of_the_method_being_looked_at(qtbot, window):
    """PCA, then Coherence Pursuit, PCP and SPE/T² on usps-1-vs-8 with the scatter showing: the
    scatter used to keep "PCA — usps-1-vs-8" and PCA's rings while the Method panel said
    Coherence Pursuit had converged."""
    _load(qtbot, window, "usps-1-vs-8")
    views = window.views
    results = {}
    # SPE/T² at another false-alarm rate than Coherence Pursuit's: both limits are calibrated to
    # their rate, and at one rate the two flagged the same number of samples here.
    for method, params in (("pca", {}), ("coherence-pursuit", {}), ("pcp", {}), ("residual", {"alpha": 0.05})):
        results[method] = _run(qtbot, window, method, **params)
        assert window.method_panel.method_name() == method
        # the view on screen follows at once ...
        cur = views.current_view_name()
        if cur in METHODS[method].views and cur != "comparison":
            assert_names_what_it_draws(views.view(cur), results[method])
        # ... and so does every other view that draws this method, when it is shown
        for name in ("scatter", "contour"):
            if name in METHODS[method].views:
                assert_names_what_it_draws(views.show_view(name), results[method])
        views.show_view("scatter")
    assert_names_what_it_draws(views.show_view("detail"), results["residual"])
    # Coherence Pursuit and SPE/T² flag different samples here: a stale scatter would show it.
    assert results["coherence-pursuit"].flags["outlier"].sum() != results["residual"].flags["outlier"].sum()

    # Looking at another method in the Method panel (no new run): views follow to its result.
    views.show_view("scatter")
    window.method_panel.set_method("coherence-pursuit")
    assert_names_what_it_draws(views.view("scatter"), results["coherence-pursuit"])
    assert_names_what_it_draws(views.show_view("contour"), results["coherence-pursuit"])
    assert_names_what_it_draws(views.show_view("detail"), results["coherence-pursuit"])

    # A result picked in the chooser is drawn and named; it stays until the method changes.
    scatter = views.show_view("scatter")
    scatter.method_box.set_key("pca")
    assert_names_what_it_draws(scatter, results["pca"])
    views.show_view("detail")
    views.show_view("scatter")
    assert_names_what_it_draws(scatter, results["pca"])
    window.method_panel.set_method("pcp")
    assert_names_what_it_draws(scatter, results["pcp"])
    # A method the scatter does not draw leaves it as it was, still naming what it draws.
    window.method_panel.set_method("esfs")
    assert_names_what_it_draws(scatter, results["pcp"])


@pytest.mark.slow
def test_a_new_run_replaces_what_a_hidden_view_draws(qtbot, window):
    """On an outlier table: run SPE/T², look at the scatter, run Coherence Pursuit while the
    summary tab shows; the scatter must draw Coherence Pursuit's rings when shown again."""
    _load(qtbot, window, "cardio")
    residual = _run(qtbot, window, "residual", alpha=0.05)   # another rate: other counts
    window.views.show_view("scatter")
    window.views.setCurrentIndex(0)  # the Summary tab
    cop = _run(qtbot, window, "coherence-pursuit")
    assert cop.flags["outlier"].sum() != residual.flags["outlier"].sum()
    assert_names_what_it_draws(window.views.show_view("scatter"), cop)
    # Re-running a method replaces its result in every view that shows it.
    again = _run(qtbot, window, "coherence-pursuit", n_components=3)
    assert again is not cop
    assert_names_what_it_draws(window.views.show_view("scatter"), again)
    assert_names_what_it_draws(window.views.show_view("contour"), again)


def test_view_method_lists_come_from_the_registry():
    from app.views.catalog import view_class as _view_class
    from robustcore.methods import methods_for_view
    for name in ("scatter", "detail", "contour", "comparison", "decomposition", "ranking", "learning-curve"):
        assert _view_class(name).methods == methods_for_view(name)
