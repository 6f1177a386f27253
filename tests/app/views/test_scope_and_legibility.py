"""Issue 25: what a user reads in the views at 1280 x 800 and in exported figures: feature names
that do not run together, region names apart, the fitted selection highlighted, no convergence
"curve" through one point, legends that scale with the figure, and a view exported without ever
being shown laid out as it would be on screen."""
import numpy as np
import pytest
from PySide6.QtGui import QImage

from robustcore.datasets import Dataset
from robustcore.methods import get_method

from .conftest import data, fit, make_state


def _show(qtbot, window, ds, results, view):
    window.set_dataset(ds)
    for res in results:
        window.state.add_result(res)
        window.method_panel.set_method(res.method)
    v = window.views.show_view(view)
    qtbot.wait(80)
    v.grab()
    return v


def _wide_table():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 4)) @ rng.standard_normal((4, 30)) + 0.1 * rng.standard_normal((200, 30))
    X[:10, 5] += 8
    return Dataset(X=X, name="wide30", feature_names=[f"sensor_{j}" for j in range(30)])


@pytest.mark.slow
def test_sample_detail_feature_names_do_not_run_together_and_the_title_names_method_and_data(qtbot, small_window):
    window = small_window
    ds = _wide_table()
    res = get_method("pca").run(ds, {})
    v = _show(qtbot, window, ds, [res], "detail")
    ax = v.bar_plot.getAxis("bottom")
    ticks = ax._tickLevels[0]
    assert len(ticks) >= 3
    vb = v.bar_plot.getViewBox()
    px_per_bar = vb.mapViewToScene(pg_point(1, 0)).x() - vb.mapViewToScene(pg_point(0, 0)).x()
    from PySide6.QtGui import QFont, QFontMetrics
    fm = QFontMetrics(ax.style.get("tickFont") or QFont())
    for (a, name_a), (b, name_b) in zip(ticks, ticks[1:]):
        room = (b - a) * px_per_bar
        assert room >= (fm.horizontalAdvance(name_a) + fm.horizontalAdvance(name_b)) / 2, (name_a, name_b, room)
    title = v.bar_plot.titleLabel.text
    assert "PCA" in title and "wide30" in title


def pg_point(x, y):
    from PySide6.QtCore import QPointF
    return QPointF(x, y)


def test_outlier_map_region_names_do_not_overlap_in_a_narrow_view(views_for, qtbot):
    state = make_state("usps-small", "pcp")   # its SD cut-off lies near the axis
    views = views_for(state, size=(520, 460))
    v = views.show_view("outlier-map")
    qtbot.wait(50)
    v.grab()
    shown = [t for t in v.region_labels.values() if t.isVisible()]
    assert len(shown) == 4
    rects = [t.sceneBoundingRect() for t in shown]
    for i, r in enumerate(rects):
        for o in rects[i + 1:]:
            assert not r.intersects(o), (r, o)
    vb = v.plot.getViewBox().sceneBoundingRect().adjusted(-2, -2, 2, 2)
    assert all(vb.contains(r) for r in rects)
    # Each name lies in its own region: the lower ones under the OD cut-off, the upper above it.
    od_y = v.plot.getViewBox().mapViewToScene(pg_point(0, v.cut_lines["od"].value())).y()
    for name, t in v.region_labels.items():
        r = t.sceneBoundingRect()
        assert (r.top() >= od_y - 1) if name in ("regular", "good leverage") else (r.bottom() <= od_y + 1), name


@pytest.mark.slow
def test_esfs_highlights_the_fitted_selection_on_a_plot_of_usable_width(qtbot, small_window):
    window = small_window
    ds = data("usps-small")
    res = fit("usps-small", "esfs")
    v = _show(qtbot, window, ds, [res], "ranking")
    kept = int(np.count_nonzero(res.estimator.support_))
    assert kept == ds.n_features // 2
    assert v.k_box.value() == kept
    assert "as the fit kept" in v.bar_plot.titleLabel.text
    assert v.spec_plot.getViewBox().sceneBoundingRect().width() >= 250


@pytest.mark.slow
def test_online_rpca_with_one_batch_draws_no_curve_over_a_wide_range(qtbot, small_window):
    window = small_window
    ds = data("escalator-24")
    res = get_method("online-rpca").run(ds, {"batch_size": 64})
    v = _show(qtbot, window, ds, [res], "decomposition")
    conv = v.convergence
    for plot in (conv.res_plot, conv.rank_plot):
        lo, hi = plot.getViewBox().viewRange()[0]
        assert 0 <= lo and hi <= 2, (lo, hi)
    assert "one batch: no convergence curve" in conv.res_plot.titleLabel.text
    for plot in (conv.res_plot, conv.rank_plot):   # no fractional batches on the axis
        ax = plot.getAxis("bottom")
        assert [t for _, t in ax._tickLevels[0]] == ["1"] and ax.labelText == "batch"
    assert len(conv.res_plot.getAxis("left")._tickLevels[0]) == 1   # one residual, one tick


def _legend_text_height(path, rect, scale):
    img = QImage(str(path)).convertToFormat(QImage.Format.Format_Grayscale8)
    a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine())[:, :img.width()]
    top, bottom = int(rect.top() * scale), int(np.ceil(rect.bottom() * scale))
    left, right = int(rect.left() * scale), int(np.ceil(rect.right() * scale))
    rows = np.flatnonzero((a[top:bottom, left:right] < 110).any(axis=1))
    return rows.max() - rows.min() + 1


@pytest.mark.slow
def test_exported_legend_text_scales_with_the_figure(views_for, tmp_path):
    import pyqtgraph as pg
    state = make_state("usps-small", "pca")
    views = views_for(state, size=(900, 600))
    v = views.show_view("scatter")
    (legend,) = [it for it in v.figure.scene().items() if isinstance(it, pg.LegendItem) and it.items]
    rect = legend.sceneBoundingRect()
    one = _legend_text_height(views.export_figure(tmp_path / "a.png", scale=1), rect, 1)
    two = _legend_text_height(views.export_figure(tmp_path / "b.png", scale=2), rect, 2)
    assert two >= 1.7 * one, (one, two)


@pytest.mark.slow
def test_export_of_a_view_never_shown_matches_the_shown_one(views_for, tmp_path, qtbot):
    state = make_state("usps-small", "pca", "pcp")
    views = views_for(state, size=(900, 600))
    views.show_view("scatter")
    never = QImage(str(views.export_figure(tmp_path / "never.png", view="outlier-map")))
    assert views.current_view_name() == "scatter"   # what the user sees did not change
    views.show_view("outlier-map")
    qtbot.wait(50)
    shown = QImage(str(views.export_figure(tmp_path / "shown.png", view="outlier-map")))
    assert (never.width(), never.height()) == (shown.width(), shown.height())
    a = np.frombuffer(never.convertToFormat(QImage.Format.Format_Grayscale8).constBits(), np.uint8)
    b = np.frombuffer(shown.convertToFormat(QImage.Format.Format_Grayscale8).constBits(), np.uint8)
    assert np.mean(a != b) < 0.01


# -- each view states its scope --------------------------------------------------------------

@pytest.mark.slow
def test_spe_t2_map_says_its_lines_are_for_the_plane_and_the_flags_for_the_full_space(qtbot, small_window):
    window = small_window
    ds = data("usps-small")
    v = _show(qtbot, window, ds, [fit("usps-small", "pca")], "contour")
    texts = [label.text for _, label in v.legend.items]
    assert any("on this plane" in t for t in texts)
    assert any(f"flagged in all {ds.n_features} dims" in t for t in texts)
    assert "limits on the plane shown" in v.status.text()


@pytest.mark.slow
def test_spe_t2_map_of_two_dimensional_data_claims_no_plane_scope(qtbot, small_window):
    window = small_window
    rng = np.random.default_rng(0)
    ds = Dataset(X=rng.standard_normal((100, 2)) @ np.array([[3.0, 0.0], [1.0, 0.5]]), name="flat")
    v = _show(qtbot, window, ds, [get_method("pca").run(ds, {"n_components": 1})], "contour")
    texts = [label.text for _, label in v.legend.items]
    assert not any("on this plane" in t for t in texts)


def _mixed_units():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((120, 2)) @ rng.standard_normal((2, 6))
    X = base * np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1000.0])   # one column in other units
    X[7, 2] += 6.0
    return Dataset(X=X, name="mixed")


@pytest.mark.slow
def test_l_plus_s_of_a_mixed_unit_table_is_shown_per_column_with_a_mask_relative_to_s(qtbot, small_window):
    window = small_window
    ds = _mixed_units()
    res = get_method("pcp").run(ds, {})
    v = _show(qtbot, window, ds, [res], "decomposition")
    shown = v.images["low_rank"].image
    # Every column of L uses the whole grey range: 0 at its minimum, 1 at its maximum, whatever
    # its unit; X is shown in the same units (its gross entry beyond them, not setting them).
    np.testing.assert_allclose(shown.min(axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(shown.max(axis=0), 1, atol=1e-9)
    L, X = np.asarray(res.arrays["low_rank"]), ds.X
    lo = L.min(0)
    span = L.max(0) - lo
    np.testing.assert_allclose(v.images["original"].image, (X - lo) / span)
    np.testing.assert_allclose(v.images["sparse"].image, np.asarray(res.arrays["sparse"]) / span)
    assert "column range" in v.panels["sparse"].titleLabel.text
    assert "column range" in v.s_bar.getAxis("right").labelText
    # The default mask is relative to S: it holds some entries, not none.
    t = v.threshold()
    S_shown = np.abs(v.images["sparse"].image)
    assert 0 < np.mean(S_shown > t) <= 0.11
    assert t <= S_shown.max()


# -- what the screenshots at 1280 x 800 showed ------------------------------------------------

@pytest.mark.slow
def test_comparison_method_names_do_not_run_together(qtbot, small_window):
    window = small_window
    from PySide6.QtGui import QFont, QFontMetrics
    ds = data("usps-small")
    v = _show(qtbot, window, ds, [fit("usps-small", m) for m in ("pca", "coherence-pursuit", "pcp")],
              "comparison")
    for plot in (v.error_plot, v.flag_plot):
        ax = plot.getAxis("bottom")
        fm = QFontMetrics(ax.style.get("tickFont") or QFont())
        vb = plot.getViewBox()
        px = vb.mapViewToScene(pg_point(1, 0)).x() - vb.mapViewToScene(pg_point(0, 0)).x()
        widths = [max(fm.horizontalAdvance(line) for line in t.split("\n")) for _, t in ax._tickLevels[0]]
        for a, b in zip(widths, widths[1:]):
            assert px >= (a + b) / 2 + 4, (px, widths)


@pytest.mark.slow
def test_picture_detail_names_method_and_data(qtbot, small_window):
    window = small_window
    ds = data("usps-small")
    v = _show(qtbot, window, ds, [fit("usps-small", "pcp")], "detail")
    title = v.panels["original"].titleLabel.text.replace("<br>", " ")
    assert "PCP" in title and ds.name in title


@pytest.mark.slow
def test_a_never_painted_view_is_laid_out_before_its_export_renders(views_for, tmp_path, monkeypatch):
    # An axis learns its labels' width when painted (30 px until then); a tab never shown must
    # not be rendered with that default, or its plot sits ~20 px right of the screen's.
    import pyqtgraph as pg
    from pyqtgraph.exporters import ImageExporter
    state = make_state("usps-small", "pca", "pcp")
    views = views_for(state, size=(900, 600))
    views.show_view("scatter")
    figure = views.view("outlier-map").figure
    (axis,) = [it for it in figure.scene().items()
               if isinstance(it, pg.AxisItem) and it.orientation == "left" and it.isVisible()]
    assert axis.textWidth == 30                       # never painted yet
    seen = []
    export = ImageExporter.export

    def spy(self, *args, **kwargs):
        seen.append((axis.textWidth, axis.width()))
        return export(self, *args, **kwargs)
    monkeypatch.setattr(ImageExporter, "export", spy)
    views.export_figure(tmp_path / "never.png", view="outlier-map")
    ((width_seen, axis_width),) = seen
    assert width_seen < 15                             # "0" .. "7": the labels' own width
    assert axis.width() == axis_width                  # the render changed nothing
