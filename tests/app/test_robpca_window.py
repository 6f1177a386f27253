"""ROBPCA in the window, as a user meets it: picked in the Method panel's list, run with the Run
button on a demo, and its outlier map on screen drawing its own distances and cut-offs."""
import numpy as np
import pytest
from PySide6.QtCore import Qt

from robustcore.outlier_map import REGIONS


@pytest.mark.slow   # 15-75 s on a shared 2-core box: a full ROBPCA run and its views on 314 x 256
def test_robpca_picked_in_the_method_panel_runs_and_its_outlier_map_shows_it(qtbot, window):
    with qtbot.waitSignal(window.datasetLoaded, timeout=30000):
        window.load_demo("usps-1-vs-8")
    panel = window.method_panel
    combo = panel.combo
    idx = combo.findData("robpca")
    assert idx >= 0 and combo.itemText(idx) == "ROBPCA"
    combo.setCurrentIndex(idx)                      # what choosing it in the list does
    assert panel.form() is not None and "alpha" in panel.form().values()
    with qtbot.waitSignal(window.runFinished, timeout=180000) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    res = blocker.args[0]
    assert res.method == "robpca"
    est = res.estimator
    v = window.views.show_view("outlier-map")
    assert v.drawn is res and v.method_box.key() == "robpca"
    assert "ROBPCA" in v.plot.titleLabel.text
    x, y = v.cloud.points()
    # the estimator's own distances and cut-offs, not the generic rule's
    X = window.state.dataset.dense()
    T = est.transform(X)
    np.testing.assert_allclose(x, np.sqrt(np.sum(T ** 2 / est.explained_variance_, axis=1)), rtol=1e-8)
    assert v.cut_lines["sd"].value() == pytest.approx(est.sd_cutoff_)
    assert v.cut_lines["od"].value() == pytest.approx(est.od_cutoff_)
    region = (x > est.sd_cutoff_).astype(int) + 2 * (y > est.od_cutoff_).astype(int)
    for i, r in enumerate(REGIONS):
        assert v.region_labels[r].textItem.toPlainText() == f"{r} ({int(np.sum(region == i))})"
    # the 50 eights (known outliers) lie beyond a cut-off: ringed as the flags say
    truth = window.state.dataset.outliers
    assert np.all(region[truth] > 0)
    np.testing.assert_array_equal(res.flags["outlier"], est.predict(X) == -1)
