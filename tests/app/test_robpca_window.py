"""ROBPCA in the window, as a user meets it: picked in the Method panel's list, run with the Run
button on a demo, and its outlier map on screen drawing its own distances and cut-offs."""
import itertools
import pathlib

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, Qt

from app.views._common import fmt
from app.views._point_names import _inked
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


OCTANE = pathlib.Path(__file__).resolve().parents[1] / "robustcore" / "subspace" / "data" / "octane.npz"
ALCOHOL = np.array([25, 26, 36, 37, 38, 39]) - 1      # octane samples with added alcohol (0-based)


@pytest.fixture
def octane_csv(tmp_path):
    """The paper's octane spectra as the CSV file a user would open (39 x 226, one header row)."""
    with np.load(OCTANE, allow_pickle=False) as z:
        X = z["X"]
    path = tmp_path / "octane.csv"
    np.savetxt(path, X, delimiter=",", header=",".join(f"nm{1102 + 2 * j}" for j in range(X.shape[1])),
               comments="", fmt="%.17g")
    return path


def _run_robpca_on_octane(qtbot, window, path, k: str):
    with qtbot.waitSignal(window.datasetLoaded, timeout=30000):
        window.open_path(str(path))
    panel = window.method_panel
    panel.combo.setCurrentIndex(panel.combo.findData("robpca"))
    qtbot.keyClicks(panel.form().editor("n_components"), k)     # typed, as a user does
    with qtbot.waitSignal(window.runFinished, timeout=120000) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


@pytest.mark.slow   # a ROBPCA run in the worker process on 39 x 226
def test_octane_map_shows_the_paper_s_six_and_where_the_rings_start(qtbot, window, octane_csv):
    """The paper's example, opened and run as a user would (k = 2): the six alcohol samples are
    the bad leverage points, in sight (the "bad leverage (6)" name covered the farthest, sample
    26), and the rings' boundary, ROBPCA's calibrated cut-offs, is drawn and named (ROBPCA's
    rings started inside the dashed lines with no line saying why: sample 31 ringed as
    "regular")."""
    res = _run_robpca_on_octane(qtbot, window, octane_csv, "2")
    v = window.views.show_view("outlier-map")
    qtbot.wait(50)
    v.grab()
    x, y = v.cloud.points()
    sd_cut, od_cut = v.cut_lines["sd"].value(), v.cut_lines["od"].value()
    np.testing.assert_array_equal(np.flatnonzero((x > sd_cut) & (y > od_cut)), ALCOHOL)
    assert v.region_labels["bad leverage"].textItem.toPlainText() == "bad leverage (6)"
    # the six are named beside their points (the paper's figure names them), the farthest, the
    # paper's 26, always; the names shown cover no other text
    assert sorted(int(t.textItem.toPlainText()) for t in v.names.items[:len(v.names.indices)]) == ALCOHOL.tolist()
    assert v.names.shown()[0] == "25" and "named: the 6 farthest" in v.status.text()
    texts = [t for t in [*v.names.items, *v.region_labels.values()] if t.isVisible()]
    for a, b in itertools.combinations(texts, 2):
        assert not _inked(a).intersects(_inked(b)), (a.textItem.toPlainText(), b.textItem.toPlainText())
    vb = v.plot.getViewBox()
    for t in v.region_labels.values():       # no region name over a sample
        rect = t.sceneBoundingRect()
        for i in range(x.size):
            assert not rect.contains(vb.mapViewToScene(pg.Point(x[i], y[i]))), (t.textItem.toPlainText(), i)
    # zoomed on the three close together, each gets its name; the one out of sight none
    hidden = set(v.names.shown()) ^ {str(i) for i in ALCOHOL}
    assert hidden
    vb.setRange(xRange=(5.0, 5.6), yRange=(0.7, 0.9), padding=0)
    qtbot.wait(50)
    v.grab()
    assert hidden <= set(v.names.shown()) and "25" not in v.names.shown()
    vb.autoRange()
    # the rings start at the solid lines, which the legend names in map units
    flags = np.asarray(res.flags["outlier"], dtype=bool)
    lines = {k: line.value() for k, line in v.flag_lines.items() if line.isVisible()}
    assert set(lines) == {"sd", "od"}
    np.testing.assert_array_equal((x > lines["sd"]) | (y > lines["od"]), flags)
    assert lines["sd"] < sd_cut and lines["od"] < od_cut      # calibrated below the paper's here
    ringed = next(label.text for _, label in v.legend.items if label.text.startswith("ringed"))
    assert "solid" in ringed and f"SD > {fmt(lines['sd'])}" in ringed
    # a click on the farthest point picks it; the sample detail says where the map puts it
    p = v.figure.mapFromScene(vb.mapViewToScene(pg.Point(x[25], y[25])))
    qtbot.mouseClick(v.figure.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(int(p.x()), int(p.y())))
    qtbot.waitUntil(lambda: list(window.state.selection) == [25], timeout=5000)
    d = window.views.show_view("detail")
    qtbot.waitUntil(lambda: "#25" in d.status.text(), timeout=5000)
    assert f"SD {fmt(x[25])} · OD {fmt(y[25])} · bad leverage" in d.status.text()


@pytest.mark.slow   # a ROBPCA run in the worker process on 39 x 226
def test_octane_results_exported_from_the_window_carry_the_outlier_map(qtbot, window, octane_csv, tmp_path):
    """Results > Export to a folder after an octane run: the samples CSV has the map's own
    numbers (score and orthogonal distance, region by name; they were only in the NPZ), the
    cut-offs they are measured against, and an outlier score described as ROBPCA's (it said
    "SPE and T² ... above 1 = flagged" beside flagged rows under 1)."""
    from .test_export import _read_csv

    res = _run_robpca_on_octane(qtbot, window, octane_csv, "2")
    (tmp_path / "out").mkdir()      # the folder the dialog picks
    written = window.export_results_to(str(tmp_path / "out"), overwrite=False)
    path = next(p for p in written if p.endswith("robpca-samples.csv"))
    header, cols, rows = _read_csv(path)
    col = {name: [r[cols.index(name)] for r in rows] for name in cols}
    np.testing.assert_array_equal(np.array(col["score_distance"], dtype=float), res.arrays["score_distance"])
    np.testing.assert_array_equal(np.array(col["orthogonal_distance"], dtype=float),
                                  res.arrays["orthogonal_distance"])
    assert [i for i, r in enumerate(col["map_region"]) if r == "bad leverage"] == ALCOHOL.tolist()
    assert set(col["map_region"]) == {"regular", "bad leverage"}
    assert header["outlier map"]["SD cut-off"] == res.summary["SD cut-off"]
    assert header["outlier map"]["OD cut-off"] == res.summary["OD cut-off"]
    # flagged rows under 1 (calibrated cut-offs): the description must not say 1 is the limit
    score = np.array(col["outlier_score"], dtype=float)
    flagged = np.array(col["flag_outlier"]) == "1"
    assert np.any(flagged & (score < 1))
    said = header["score directions"]["outlier_score"]
    assert "SD and OD" in said and "calibrated" in said and "above 1 = flagged" not in said
