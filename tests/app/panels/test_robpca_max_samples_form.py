"""ROBPCA's max_samples in the window's form and on the command line: from its one declaration,
with the library's message for a bad value (the estimator's, in memory and out of core, is the
same but for naming its owner: tests/robustcore/bigdata/test_robpca_max_samples.py)."""
import pytest

from app.cli import main
from app.panels.param_form import ParamForm
from robustcore.methods import METHODS

MESSAGE = "The 'max_samples' parameter must be 'auto', 'all' or an integer >= 2. Got {} instead."


@pytest.fixture
def form(qtbot):
    f = ParamForm(METHODS["robpca"].params())
    qtbot.addWidget(f)
    return f


def test_the_form_offers_max_samples_with_its_default(form):
    assert form.values()["max_samples"] == "auto"
    form.set_text("max_samples", "all")
    assert form.values()["max_samples"] == "all"
    form.set_text("max_samples", "50000")
    assert form.values()["max_samples"] == 50000


@pytest.mark.parametrize("text, got", [("1", "1"), ("0", "0"), ("2.5", "2.5"), ("some", "'some'")])
def test_a_bad_value_gets_the_librarys_message_in_the_form_and_on_the_command_line(form, tmp_path, capsys, text, got):
    form.set_text("max_samples", text)
    assert form.errors() == {"max_samples": MESSAGE.format(got)}
    code = main(["run", "--demo", "iris", "--method", "robpca", "--param", f"max_samples={text}",
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and MESSAGE.format(got) in err
