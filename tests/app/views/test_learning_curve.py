"""SCW learning curves on iris: SCW-I and SCW-II overlaid, one point per sample seen."""
import numpy as np
import pytest

from robustcore.methods import get_method

from .conftest import data, make_state


@pytest.mark.slow
def test_both_variants_are_overlaid(views_for):
    state = make_state("iris")
    views = views_for(state)  # the views watch the runs as they arrive, as in the window
    res1 = get_method("scw").run(data("iris"), {"variant": "I", "shuffle": True, "random_state": 0})
    res2 = get_method("scw").run(data("iris"), {"variant": "II", "shuffle": True, "random_state": 0})
    assert state.add_result(res1) and state.add_result(res2)
    v = views.show_view("learning-curve")
    assert sorted(v.curves) == ["I", "II"]
    for variant, res in (("I", res1), ("II", res2)):
        c_rate, c_upd = v.curves[variant]
        x, y = c_rate.getData()
        n_train = 150 - res.summary["test samples"]  # the rest is the held-out test split
        np.testing.assert_array_equal(x, np.arange(1, n_train + 1))
        np.testing.assert_allclose(y, res.arrays["history_mistake_rate"])
        np.testing.assert_allclose(c_upd.getData()[1], res.arrays["history_updates"])
    names = [lab.text for _, lab in v.rate_legend.items]
    assert any("SCW-I " in n for n in names) and any("SCW-II" in n for n in names)
    # the majority-class baseline: one dashed line, in the legend, the run's own numbers
    assert "majority class so far" in names
    base = [it for it in v.rate_plot.listDataItems() if it.name() == "majority class so far"]
    assert len(base) == 1
    np.testing.assert_allclose(base[0].getData()[1], res2.arrays["history_majority_rate"])
    assert "majority class: mistake rate" in v.status.text()
    # held out: the training stream's majority class, a flat dashed line across the test points
    flat = [it for it in v.acc_plot.listDataItems() if it.name() == "majority class"]
    assert len(flat) == 1
    np.testing.assert_allclose(flat[0].getData()[1], res2.summary["majority-class test accuracy"])
    np.testing.assert_allclose(flat[0].getData()[0], res2.arrays["history_test_seen"][[0, -1]])
    assert "test accuracy" in v.status.text().split("majority class:")[1]
    assert v.acc_plot.isVisible() and len(v.acc_plot.listDataItems()) == 3  # both runs + the baseline
    assert "test accuracy" in v.status.text() and "no test split" not in v.status.text()


def test_new_data_forgets_old_runs(views_for):
    state = make_state("iris", "scw")
    views = views_for(state)
    v = views.show_view("learning-curve")
    assert list(v.runs) == ["I"]
    state.set_dataset(data("clusters-3d"))
    assert not v.runs
    assert "learning-curve" not in views.available_views()
