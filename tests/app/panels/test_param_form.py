"""The parameter form built from Param declarations: editors, defaults, validity, reset."""
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit

from app.panels.param_form import ParamForm
from robustcore._params import Param
from robustcore.methods import METHODS

SPECS = (
    Param("n_components", int, 2, "Rank of the subspace.", low=1, high=50),
    Param("tol", float, 1e-7, "Relative residual at which to stop.", low=0.0, high=1.0,
          low_inclusive=False, high_inclusive=False),
    Param("lam", float, None, "Weight of the sparse term.", low=0.0, low_inclusive=False,
          allow_none=True, none_label="1/sqrt(max(n, d))"),
    Param("center", bool, True, "Subtract the mean."),
    Param("svd", str, "auto", "SVD back-end.", choices=("auto", "full", "randomized"), advanced=True),
    Param("rho", float, 1.5, "Growth of mu per iteration.", low=1.0, low_inclusive=False, advanced=True),
    Param("callback", object, None, "Scripts only.", allow_none=True, scriptable_only=True),
)


@pytest.fixture
def form(qtbot):
    f = ParamForm(SPECS)
    qtbot.addWidget(f)
    return f


def test_editor_per_kind_and_defaults(form):
    assert isinstance(form.editor("n_components"), QLineEdit)
    assert isinstance(form.editor("center"), QCheckBox)
    assert isinstance(form.editor("svd"), QComboBox)
    assert "callback" not in form.names()  # scriptable_only parameters are not in forms
    assert form.values() == {"n_components": 2, "tol": 1e-7, "lam": None, "center": True,
                             "svd": "auto", "rho": 1.5}
    assert form.editor("lam").placeholderText() == "1/sqrt(max(n, d))"
    assert form.editor("svd").count() == 3


def test_tooltips_carry_help_range_and_default(form):
    tip = form.editor("tol").toolTip()
    assert "Relative residual at which to stop." in tip
    assert "a number in (1e-07, 1)" not in tip  # the range is the declared one, not the default
    assert "(0, 1)" in tip and "Default: 1e-07" in tip


def test_invalid_value_is_marked_with_the_library_message(form, qtbot):
    with qtbot.waitSignal(form.validityChanged, timeout=1000) as blocker:
        form.set_text("n_components", "0")
    assert blocker.args == [False]
    expected = str(pytest.raises(ValueError, SPECS[0].parse, "0").value)
    assert form.errors() == {"n_components": expected}
    assert expected == "The 'n_components' parameter must be an integer in [1, 50]. Got 0 instead."
    assert form.error_label.isVisibleTo(form) and expected in form.error_label.text()
    assert "border" in form.editor("n_components").styleSheet()
    with pytest.raises(ValueError, match="n_components"):
        form.values()
    with qtbot.waitSignal(form.validityChanged, timeout=1000) as blocker:
        form.set_text("n_components", "3")
    assert blocker.args == [True]
    assert form.editor("n_components").styleSheet() == ""
    assert form.values()["n_components"] == 3


@pytest.mark.parametrize("text, ok", [("", False), ("abc", False), ("2.5", False), ("7", True),
                                      ("7.0", True), ("51", False), ("nan", False), ("inf", False)])
def test_integer_field_accepts_exactly_what_param_parse_accepts(form, text, ok):
    form.set_text("n_components", text)
    assert form.is_valid() is ok


def test_empty_optional_field_means_automatic(form):
    form.set_text("lam", "0.25")
    assert form.values()["lam"] == 0.25
    form.set_text("lam", "")
    assert form.values()["lam"] is None
    form.set_text("lam", "-1")
    assert "lam" in form.errors()


def test_invalid_advanced_value_unfolds_the_advanced_section(form):
    assert not form.advanced_box.isVisibleTo(form)
    form.set_text("rho", "1")  # rho must be > 1
    assert "rho" in form.errors()
    assert form.advanced_toggle.isChecked() and form.advanced_box.isVisibleTo(form)


def test_reset_to_defaults(form):
    form.set_text("n_components", "9")
    form.editor("center").setChecked(False)
    form.editor("svd").setCurrentIndex(2)
    form.set_text("tol", "oops")
    assert not form.is_valid()
    form.reset()
    assert form.is_valid()
    assert form.values() == {p.name: p.default for p in SPECS if not p.scriptable_only}


def test_set_values_round_trip(form):
    vals = {"n_components": 7, "tol": 1e-3, "lam": 0.5, "center": False, "svd": "randomized", "rho": 2.0}
    form.set_values(vals)
    assert form.values() == vals
    assert form.changed_from_defaults() == {k: v for k, v in vals.items() if k != "rho" or v != 1.5}


@pytest.mark.parametrize("name", list(METHODS))
def test_every_registry_method_gets_a_form_showing_its_defaults(qtbot, name):
    m = METHODS[name]
    f = ParamForm(m.params())
    qtbot.addWidget(f)
    assert f.values() == m.validate(m.defaults())
    assert set(f.names()) == {p.name for p in m.params()}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                   st.integers(-10**6, 10**6)))
def test_float_field_validity_matches_param_validate(form, x):
    text = repr(float(x)) if isinstance(x, float) else str(x)
    form.set_text("tol", text)
    try:
        SPECS[1].validate(float(text))
        expected = True
    except ValueError:
        expected = False
    assert form.is_valid() is expected
    if expected:
        assert math.isclose(form.values()["tol"], float(text))


def test_optional_bool_is_a_three_way_choice(qtbot):
    p = Param("header", bool, None, "First row holds names.", allow_none=True, none_label="detect")
    f = ParamForm((p,))
    qtbot.addWidget(f)
    box = f.editor("header")
    assert isinstance(box, QComboBox)
    assert [box.itemText(i) for i in range(box.count())] == ["detect", "True", "False"]
    assert f.values() == {"header": None}
    f.set_values({"header": False})
    assert f.values() == {"header": False}
    f.set_values({"header": True})
    assert f.values() == {"header": True}
