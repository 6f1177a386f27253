"""At 960 x 540 (a 1920 x 1080 screen at 200 %) the L + S heatmaps of a table and ESFS's
eigenvalue plot keep a readable size (issue 25's tour found them 82 and 87 px high). Checked on
the tour's own wide table, in the window, as a user sees it."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from app.main_window import MainWindow
from app.settings import Settings

from .views.test_legible import MIN_PLOT, legibility_problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table_fits():
    spec = importlib.util.spec_from_file_location("tour", ROOT / "docs" / "screenshots" / "tour.py")
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    ds = tour.wide_table()
    from robustcore.methods import get_method
    return tour, ds, {m: get_method(m).run(ds, {}) for m in ("pcp", "esfs")}


def _window(qtbot, tmp_path, table_fits, size):
    tour, ds, results = table_fits
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitExposed(w)
    tour.show_all(w, ds, results)
    return w


def _shown(qtbot, w, name):
    v = w.views.show_view(name)
    qtbot.wait(60)
    w.grab()   # painted once: view boxes apply their ranges when painted
    return v


@pytest.mark.slow
@pytest.mark.parametrize("size", [(960, 540), (1280, 800)])
def test_table_heatmaps_share_the_feature_axis_and_keep_equal_readable_heights(qtbot, tmp_path, table_fits, size):
    w = _window(qtbot, tmp_path, table_fits, size)
    v = _shown(qtbot, w, "decomposition")
    assert legibility_problems(v) == []
    rows, cols = v.pictures.grid
    panels = list(v.panels.values())
    heights = [p.getViewBox().sceneBoundingRect().height() for p in panels]
    assert min(heights) >= MIN_PLOT[1]
    assert max(heights) - min(heights) <= 8, heights   # one row does not starve the other
    # The feature axis is read under the lowest heatmap of each column, the sample axis on each.
    for k, p in enumerate(panels):
        assert p.getAxis("bottom").isVisible() == (k + cols >= len(panels))
        assert p.getAxis("left").isVisible()
    # The heatmaps move together: zooming one shows the same rows and features in all.
    panels[0].getViewBox().setRange(xRange=(5, 15), yRange=(100, 300), padding=0)
    for p in panels[1:]:
        (x0, x1), (y0, y1) = p.getViewBox().viewRange()
        assert np.allclose([x0, x1, y0, y1], [5, 15, 100, 300], atol=1e-6)


@pytest.mark.slow
def test_esfs_eigenvalue_plot_stays_readable_at_200_percent(qtbot, tmp_path, table_fits):
    w = _window(qtbot, tmp_path, table_fits, (960, 540))
    v = _shown(qtbot, w, "ranking")
    assert legibility_problems(v) == []
    for plot in (v.spec_plot, v.bar_plot):
        r = plot.getViewBox().sceneBoundingRect()
        assert r.width() >= MIN_PLOT[0] and r.height() >= MIN_PLOT[1], (plot.titleLabel.text, r)


@pytest.mark.slow
def test_learning_curve_titles_stay_on_one_line_at_200_percent(qtbot, tmp_path, table_fits):
    tour = table_fits[0]
    ds = tour.datasets(str(tmp_path))["libsvm"]
    from robustcore.methods import get_method
    results = {"scw": get_method("scw").run(ds, {})}
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.resize(960, 540)
    w.show()
    qtbot.waitExposed(w)
    tour.show_all(w, ds, results)
    v = _shown(qtbot, w, "learning-curve")
    assert legibility_problems(v) == []
    # As high as the shortest title ("test accuracy", one line): none wraps.
    heights = {p.titleLabel.text: p.titleLabel.item.boundingRect().height()
               for p in (v.rate_plot, v.upd_plot, v.acc_plot)}
    assert max(heights.values()) <= min(heights.values()) + 1, heights


@pytest.mark.slow
def test_opening_a_file_does_not_widen_the_side_panels_at_200_percent(qtbot, tmp_path, table_fits):
    """The Data panel's "Load options…" button sat beside the known-outliers chooser: opening a
    file (not a demo) widened the docks by 110 px and took that from the views."""
    tour, table, _ = table_fits
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
    qtbot.addWidget(w)
    w.resize(960, 540)
    w.show()
    qtbot.waitExposed(w)
    w.set_dataset(table)
    qtbot.wait(50)
    before = w.views.width()
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.open_path(tour.libsvm_file(str(tmp_path)))
    qtbot.wait(50)
    assert w.dataset_panel.options_button.isVisibleTo(w.dataset_panel)
    assert w.views.width() >= before - 2, (before, w.views.width())
