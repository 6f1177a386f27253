"""Scatter points in exported figures at a cost bounded by the picture (app.views._export_points):
an SVG writes the points worth drawing as vectors at the places the screen shows them, and a
cloud too dense for that as one embedded image; a PNG of a dense cloud shows its points."""
import base64
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pyqtgraph as pg
import pytest
from PIL import Image

from app.views import _export_points as P
from app.views._figure import png_bytes, svg_bytes


@pytest.fixture
def plot(qtbot):
    from app._qt import configure_pyqtgraph
    configure_pyqtgraph()
    w = pg.PlotWidget()
    qtbot.addWidget(w)
    w.resize(600, 400)
    w.show()
    qtbot.waitExposed(w)
    return w


def _svg(widget):
    return ET.fromstring(svg_bytes(widget))


def _tag(el):
    return el.tag.rsplit("}", 1)[-1]


def test_few_points_are_vectors_where_the_screen_draws_them(plot):
    rng = np.random.default_rng(0)
    x, y = rng.random(40), rng.random(40)
    item = pg.ScatterPlotItem(x=x, y=y, size=8, symbol="o", brush=pg.mkBrush("#D62728"), pen=None)
    plot.addItem(item)
    plot.setRange(xRange=(0, 1), yRange=(0, 1))
    root = _svg(plot)
    paths = [el for el in root.iter() if _tag(el) == "path" and el.get("fill") == "#d62728"]
    assert len(paths) == 1                  # one path for the 40 points of one style
    starts = re.findall(r"M([-\d.]+),([-\d.]+)a", paths[0].get("d"))
    assert len(starts) == 40
    centres = np.array([(float(a) + 4.0, float(b)) for a, b in starts])   # "M" is the circle's left end
    pts = [item.mapToScene(pg.Point(a, b)) for a, b in zip(x, y)]
    expected = np.array([(p.x(), p.y()) for p in pts])
    np.testing.assert_allclose(centres, expected, atol=0.01)
    assert not any(_tag(el) == "image" for el in root.iter())


@pytest.mark.slow
def test_a_dense_cloud_is_one_embedded_image_and_its_flagged_points_stay_vectors(plot):
    rng = np.random.default_rng(1)
    n = P.VECTOR_POINTS + 30_000
    cloud = pg.ScatterPlotItem(x=rng.standard_normal(n), y=rng.standard_normal(n), size=4, symbol="o",
                               brush=pg.mkBrush("#1F77B4"), pen=None)
    flagged = pg.ScatterPlotItem(x=[3.0, -3.0, 0.0], y=[3.0, -3.0, 3.5], size=9, symbol="s",
                                 brush=None, pen=pg.mkPen("#000000", width=1.5))
    plot.addItem(cloud)
    plot.addItem(flagged)
    plot.setRange(xRange=(-4, 4), yRange=(-4, 4))
    data = svg_bytes(plot)
    assert len(data) < 2_000_000            # not n vector dots
    root = ET.fromstring(data)
    images = [el for el in root.iter() if _tag(el) == "image"
              and "data:image/png;base64," in (el.get("{http://www.w3.org/1999/xlink}href") or "")]
    assert len(images) >= 1
    png = images[-1].get("{http://www.w3.org/1999/xlink}href").split(",", 1)[1]
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(png))).convert("RGBA"))
    # the cloud's points are in the image: blue, opaque where the standard normal is densest
    h, w = img.shape[:2]
    centre = img[h // 2 - 5:h // 2 + 5, w // 2 - 5:w // 2 + 5]
    assert centre[..., 3].min() > 200 and centre[..., 2].mean() > centre[..., 0].mean()
    squares = [el for el in root.iter() if _tag(el) == "path" and el.get("stroke") == "#000000"
               and el.get("fill") == "none"]
    assert len(squares) == 1 and squares[0].get("d").count("M") == 3


def test_a_png_of_a_dense_cloud_shows_its_points(plot):
    rng = np.random.default_rng(2)
    n = P.VECTOR_POINTS + 10_000
    x = np.r_[rng.random(n) * 0.4, 0.9]      # one far point alone at (0.9, 0.9)
    y = np.r_[rng.random(n) * 0.4, 0.9]
    plot.addItem(pg.ScatterPlotItem(x=x, y=y, size=6, symbol="o", brush=pg.mkBrush("#000000"), pen=None))
    plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
    img = np.asarray(Image.open(io.BytesIO(png_bytes(plot, scale=2.0))).convert("L"))
    vb = plot.getPlotItem().getViewBox()
    for px, py, dark in ((0.2, 0.2, True), (0.9, 0.9, True), (0.7, 0.2, False)):
        p = vb.mapViewToScene(pg.Point(px, py))
        r, c = int(round(p.y() * 2)), int(round(p.x() * 2))
        patch = img[r - 2:r + 3, c - 2:c + 3]
        assert (patch.min() < 80) == dark, (px, py, patch.min())


def test_an_export_asks_the_view_to_draw_now_what_it_would_draw_later(qtbot):
    """A command line has no event loop: the view holding the figure finishes its picture
    synchronously (``draw_now``) before the export paints it."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    class LateView(QWidget):
        def __init__(self):
            super().__init__()
            self.figure = pg.GraphicsLayoutWidget()
            QVBoxLayout(self).addWidget(self.figure)
            self.plot = self.figure.addPlot()
            self.plot.setRange(xRange=(0, 1), yRange=(0, 1))
            self.calls = 0

        def draw_now(self):   # what an off-thread aggregation would have delivered later
            self.calls += 1
            if self.calls == 1:
                self.plot.addItem(pg.ScatterPlotItem(x=[0.5], y=[0.5], size=10, symbol="o",
                                                     brush=pg.mkBrush("#2CA02C"), pen=None))

    v = LateView()
    qtbot.addWidget(v)
    v.resize(400, 300)
    v.show()
    root = _svg(v.figure)
    assert v.calls >= 1
    greens = [el for el in root.iter() if _tag(el) == "path" and el.get("fill") == "#2ca02c"]
    assert len(greens) == 1 and greens[0].get("d").count("M") == 1


def test_overlapping_markers_are_filled_where_they_overlap(plot):
    """Qt's groups around the points say fill-rule "evenodd", under which two overlapping dots
    of one path left their overlap empty (seen in the outlier map of a million rows)."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    item = pg.ScatterPlotItem(x=[0.5, 0.52], y=[0.5, 0.5], size=40, symbol="o", brush=pg.mkBrush("#000000"),
                              pen=None)
    plot.addItem(item)
    plot.setRange(xRange=(0, 1), yRange=(0, 1))
    renderer = QSvgRenderer(QByteArray(svg_bytes(plot)))
    size = renderer.defaultSize()
    img = QImage(size, QImage.Format.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    renderer.render(p)
    p.end()
    mid = item.mapToScene(pg.Point(0.51, 0.5))
    assert QColor(img.pixel(int(mid.x()), int(mid.y()))).lightness() < 60
