"""The method form checks what the loaded data's SHAPE decides (a rank above min(n - 1, d), more
features to select than there are...) as soon as data are loaded or a value is typed: a red
field, the fit's own message under the form, and Run disabled; other data of a shape that allows
the value clear it. The rules are the declarations' (tests/robustcore/test_params_shape.py)."""
from pathlib import Path

import numpy as np
import pytest

from app.panels.param_form import _INVALID_STYLE, ParamForm
from robustcore.datasets import Dataset
from robustcore.methods import METHODS

OCTANE = Path(__file__).resolve().parents[2] / "robustcore" / "subspace" / "data" / "octane.npz"


def _octane():
    with np.load(OCTANE, allow_pickle=False) as z:
        return Dataset(X=z["X"], name="octane")


def _fit_message(method, values, X):
    m = METHODS[method]
    with pytest.raises(ValueError) as info:
        m.estimator_class(**values).fit(X)
    return str(info.value)


def test_robpca_n_components_above_the_octane_shape_is_red_with_the_fits_message(window, qtbot):
    ds = _octane()
    assert ds.X.shape == (39, 226)
    window.act_keep_params.trigger()               # Run > Keep parameters for new data
    window.set_dataset(ds)
    panel = window.method_panel
    assert panel.set_method("robpca")
    form = panel.form()
    form.set_text("n_components", "300")
    why = _fit_message("robpca", {"n_components": 300}, ds.X)
    assert "[1, 38]" in why
    assert form.errors() == {"n_components": why}
    assert form.editor("n_components").styleSheet() == _INVALID_STYLE
    assert form.error_label.isVisibleTo(form) and form.error_label.text() == why
    assert not panel.run_button.isEnabled() and panel.run_block_reason() == why
    assert "For the loaded data (39 × 226): an integer in [1, 38]" in form.editor("n_components").toolTip()
    # the largest value the shape allows: the field is fine again (the rank is Run's business)
    form.set_text("n_components", "38")
    assert form.errors() == {} and panel.run_button.isEnabled()
    form.set_text("n_components", "300")
    assert not panel.run_button.isEnabled()
    # a wider table: 300 is allowed by its shape, and the field clears without another edit
    rng = np.random.default_rng(0)
    window.set_dataset(Dataset(X=rng.standard_normal((400, 350)), name="wide"))
    assert form.values()["n_components"] == 300       # kept (Run > Keep parameters for new data)
    assert form.errors() == {}
    assert form.editor("n_components").styleSheet() == ""
    assert not form.error_label.isVisibleTo(form)
    assert panel.run_button.isEnabled()


def test_a_form_built_after_the_data_were_loaded_checks_their_shape(window):
    window.set_dataset(_octane())
    panel = window.method_panel
    assert panel.set_method("esfs")
    form = panel.form()
    form.set_text("n_features_to_select", "227")
    assert list(form.errors()) == ["n_features_to_select"]
    assert "at most n_features = 226" in form.errors()["n_features_to_select"]
    assert not panel.run_button.isEnabled()
    form.set_text("n_features_to_select", "226")
    assert form.errors() == {} and panel.run_button.isEnabled()


def test_a_value_typed_before_the_data_turns_red_when_they_are_loaded(window):
    panel = window.method_panel
    assert panel.set_method("pca")
    form = panel.form()
    form.set_text("n_components", "100")
    assert form.errors() == {} and form.shape() is None      # no data: no shape to check against
    window.act_keep_params.trigger()               # Run > Keep parameters for new data
    window.set_dataset(_octane())
    assert form.shape() == (39, 226)
    assert list(form.errors()) == ["n_components"]
    assert form.editor("n_components").styleSheet() == _INVALID_STYLE
    assert not panel.run_button.isEnabled()


def test_the_form_alone_takes_a_shape(qtbot):
    form = ParamForm(METHODS["coherence-pursuit"].params())
    qtbot.addWidget(form)
    form.set_text("n_components", "3")
    form.set_text("n_inliers", "50")
    assert form.errors() == {}
    with qtbot.waitSignal(form.validityChanged) as blocker:
        form.set_shape((40, 10))
    assert blocker.args == [False]
    assert list(form.errors()) == ["n_inliers"]
    with qtbot.waitSignal(form.validityChanged):
        form.set_shape(None)
    assert form.errors() == {}
