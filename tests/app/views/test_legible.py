"""Every view reads well in the real window at 1280 × 800 and at 960 × 540, which is what a
1920 × 1080 screen at 200 % scaling gives (Qt scales fonts and widgets together, so the layout
in logical pixels is the same): no control shows a cut-off text, no title is wider than its
plot, no plot or picture collapses below a useful size, nothing of the figure is cut off.

docs/views/make_screenshots.py takes the pictures of the same states for a look by eye.
"""
import pytest
from PySide6.QtWidgets import QComboBox, QLabel, QStyle, QStyleOptionComboBox, QToolButton

from app.main_window import MainWindow
from app.settings import Settings

from .conftest import data, fit

MIN_PLOT = (120, 90)     # a plot smaller than this (pixels of its data area) shows nothing useful
MIN_PICTURE = 90         # the shorter side of an image panel

CASES = {
    # view: (data set, fits)
    "scatter": ("usps-small", ["pca", "coherence-pursuit", "pcp", "residual"]),
    "detail": ("usps-small", ["pcp"]),
    "contour": ("usps-small", ["residual"]),
    "comparison": ("usps-small", ["pca", "coherence-pursuit", "pcp"]),
    "decomposition": ("escalator-24", ["pcp"]),
    "ranking": ("clusters-3d", ["esfs"]),
    "learning-curve": ("iris", ["scw"]),
    "outlier-map": ("usps-small", ["coherence-pursuit"]),
    "evaluation": ("usps-small", ["pca", "coherence-pursuit", "pcp"]),
}


def _combo_text_fits(box: QComboBox) -> bool:
    opt = QStyleOptionComboBox()
    box.initStyleOption(opt)
    field = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                       QStyle.SubControl.SC_ComboBoxEditField, box)
    return box.fontMetrics().horizontalAdvance(box.currentText()) <= field.width() + 1


def legibility_problems(view) -> list[str]:
    """What a user could not read in ``view`` as it is laid out now."""
    out = []
    right = view.width()
    widgets = [w for kind in (QComboBox, QLabel, QToolButton) for w in view.findChildren(kind)]
    for w in widgets:
        if not w.isVisibleTo(view) or view.figure.isAncestorOf(w) or w is view.status:
            continue
        geo = w.geometry().translated(w.mapTo(view, w.rect().topLeft()) - w.pos())
        name = f"{type(w).__name__} {w.currentText() if isinstance(w, QComboBox) else w.text()!r}"
        if geo.right() > right + 1:
            out.append(f"{name} runs off the view ({geo.right()} > {right})")
        if isinstance(w, QComboBox) and not _combo_text_fits(w):
            out.append(f"{name} is cut off ({w.width()} px wide)")
        elif isinstance(w, QLabel) and not w.wordWrap() and w.text().strip() and \
                w.fontMetrics().horizontalAdvance(w.text()) > w.width() + 1:
            out.append(f"{name} is cut off")
        elif isinstance(w, QToolButton) and w.width() < w.sizeHint().width() - 1:
            out.append(f"{name} is squeezed")
    fig = view.figure
    fig_w, vp_w = fig.ci.geometry().width(), fig.viewport().width()
    if fig_w > vp_w + 2:
        out.append(f"the figure is {fig_w:.0f} px wide in a {vp_w} px view: its right part is cut off")
    import pyqtgraph as pg
    for item in fig.scene().items():
        if not isinstance(item, pg.PlotItem) or not item.isVisible() or isinstance(item, pg.ColorBarItem):
            continue
        vb = item.getViewBox().sceneBoundingRect()
        title = item.titleLabel.item.boundingRect().width() if item.titleLabel.text else 0
        what = f"plot {item.titleLabel.text!r}"
        if item.titleLabel.text and title > item.sceneBoundingRect().width() + 2:
            out.append(f"{what}: title {title:.0f} px wide over a {item.sceneBoundingRect().width():.0f} px plot")
        images = [it for it in item.items if isinstance(it, pg.ImageItem) and it.image is not None]
        if images and item.getViewBox().state["aspectLocked"]:
            r = images[0].mapRectToScene(images[0].boundingRect())
            if min(r.width(), r.height()) < MIN_PICTURE:
                out.append(f"{what}: picture only {r.width():.0f} x {r.height():.0f} px")
        elif vb.width() < MIN_PLOT[0] or vb.height() < MIN_PLOT[1]:
            out.append(f"{what}: data area only {vb.width():.0f} x {vb.height():.0f} px")
        if vb.right() > fig.viewport().width() + 2 or vb.bottom() > fig.viewport().height() + 2:
            out.append(f"{what} lies partly outside the view")
        for side in ("left", "bottom"):
            ax = item.getAxis(side)
            if not ax.isVisible() or not ax.label.isVisible() or not ax.label.toPlainText().strip():
                continue
            along = vb.height() if side == "left" else vb.width()
            text = ax.label.boundingRect().width()
            if text > along + 2:
                out.append(f"{what}: {side} axis label {ax.label.toPlainText()!r} is {text:.0f} px along a "
                           f"{along:.0f} px axis (cut off)")
    for legend in (it for it in fig.scene().items() if isinstance(it, pg.LegendItem) and it.isVisible()):
        r = legend.sceneBoundingRect()
        if legend.items and (r.right() > fig.viewport().width() + 2 or r.bottom() > fig.viewport().height() + 2):
            out.append(f"a legend ({legend.items[0][1].text!r}, …) is cut off")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1280, 800), (960, 540)], ids=["1280x800", "200pct-of-1920x1080"])
def test_every_view_is_legible_in_the_window(qtbot, tmp_path, size):
    window = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    found = []
    for name, (dataset, fits) in CASES.items():
        window.set_dataset(data(dataset))
        for method in fits:
            window.state.add_result(fit(dataset, method))
            window.method_panel.set_method(method)
        view = window.views.show_view(name)
        qtbot.wait(80)  # layouts settle
        view.grab()     # and paint once: view boxes apply their ranges when painted
        found += [f"{name}: {p}" for p in legibility_problems(view)]
    window.close()
    assert not found, f"at {size[0]} x {size[1]}:\n  " + "\n  ".join(found)
