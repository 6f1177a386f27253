"""In-app help (a page per method from the registry and its parameter declarations), Help →
Examples (each demo with the methods and view that show it best), and defaults that give a
useful picture on every demo."""
import pytest
from PySide6.QtCore import Qt

from app.examples import EXAMPLES
from app.help import method_help_html
from robustcore.datasets import demo, demos
from robustcore.methods import METHODS, methods_for_view




@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_has_a_page_with_every_parameter_and_the_paper(name):
    m = METHODS[name]
    html = method_help_html(name)
    assert m.about and m.reference
    for p in m.params():
        assert f"<code>{p.name}</code>" in html and p.help.replace("&", "&amp;")[:30] in html.replace("&#x27;", "'")
    assert m.reference.split(",")[0] in html
    if m.outlier_rule is not None:
        assert m.outlier_rule.text in html


def test_help_is_reachable_from_the_method_panel_and_f1(qtbot, window):
    window.method_panel.set_method("pcp")
    qtbot.mouseClick(window.method_panel.help_button, Qt.MouseButton.LeftButton)
    dlg = window.help_dialog
    assert dlg.isVisible() and dlg.method == "pcp"
    assert "Candès" in dlg.browser.toPlainText() and "max_iter" in dlg.browser.toPlainText()
    window.method_panel.set_method("esfs")
    window.act_method_help.trigger()
    assert dlg.method == "esfs" and "Laplacian" in dlg.browser.toPlainText()
    assert [k.toString() for k in window.act_method_help.shortcuts()] == ["F1"]


def test_examples_cover_every_demo_and_every_view():
    assert {e.demo for e in EXAMPLES} == set(demos())
    views = {e.view for e in EXAMPLES}
    assert views == {"scatter", "comparison", "decomposition", "detail", "contour", "ranking", "learning-curve",
                     "outlier-map", "evaluation"}
    for e in EXAMPLES:
        assert all(e.view in METHODS[m].views or e.view in methods_for_view(e.view) for m, _ in e.runs)
        for m, params in e.runs:
            METHODS[m].validate(params)


@pytest.mark.slow
def test_an_example_opens_its_demo_runs_and_shows_its_view(qtbot, window):
    ex = next(e for e in EXAMPLES if e.key == "blind-spot")
    with qtbot.waitSignal(window.runFinished, timeout=60000):
        window.example_actions[ex.key].trigger()
    qtbot.waitUntil(lambda: window.views.current_view_name() == "contour", timeout=10000)
    assert window.state.dataset.name == "gaussian-2d"
    assert window.state.result("residual").params["n_components"] == 1
    assert window.example is None
    assert ex.blurb[:40] in window.statusBar().currentMessage()


@pytest.mark.slow
def test_pca_on_a_two_feature_demo_gets_a_rank_that_leaves_a_residual(qtbot, window):
    """PCA's old default of 2 components on 2-D data left nothing off the subspace: no SPE limit,
    an empty SPE/T² map. The automatic rank (the scree elbow, at most half of min(n, d)) is 1."""
    window.method_panel.set_method("pca")
    with qtbot.waitSignal(window.datasetLoaded, timeout=30000):
        window.load_demo("gaussian-2d")
    form = window.method_panel.form("pca")
    assert form.values()["n_components"] is None
    with qtbot.waitSignal(window.runFinished, timeout=60000) as blocker:
        window.run()
    assert "SPE limit" in blocker.args[0].summary
    assert blocker.args[0].estimator.n_components_ == 1
    contour = window.views.show_view("contour")
    assert contour.limits
    qtbot.waitUntil(lambda: contour.images["spe"].image is not None, timeout=10000)   # made on a worker
    # A value the user chose is kept, whatever the data.
    form.set_values({"n_components": 2})
    window.method_panel.set_method("coherence-pursuit")
    window.method_panel.set_method("pca")
    assert form.values()["n_components"] == 2


@pytest.mark.parametrize("name", list(demos()))
def test_every_default_fits_every_demo_shape(name):
    ds = demo(name)
    for m in METHODS.values():
        if m.needs_labels and ds.labels is None:
            continue
        values = dict(m.defaults(), **m.data_defaults(ds.n_samples, ds.n_features))
        if m.rank_param:
            assert values[m.rank_param] is None or values[m.rank_param] < min(ds.n_samples, ds.n_features)
