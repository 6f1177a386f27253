"""The view switcher: which views show, one selection across views, and figure export (PNG at
a scale whose text and markers scale with it, SVG that parses and holds the plotted elements)."""
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QImage

from app.views import VIEW_NAMES, render_view

from .conftest import data, make_state

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def usps_views(views_for):
    state = make_state("usps-1-vs-8", "pca", "coherence-pursuit")
    return state, views_for(state)


def test_views_shown_match_the_results(usps_views):
    state, views = usps_views
    assert set(views.view_names()) == set(VIEW_NAMES)
    assert views.available_views() == ["scatter", "detail", "contour", "outlier-map", "comparison", "evaluation"]
    with pytest.raises(ValueError, match="nothing to show"):
        views.show_view("ranking")
    with pytest.raises(ValueError, match="view must be one of"):
        views.view("histogram")
    views.show_view("contour")
    assert views.current_view_name() == "contour"


@pytest.mark.slow
def test_selection_in_one_view_appears_in_the_others(usps_views):
    state, views = usps_views
    scatter = views.show_view("scatter")
    scatter.method_box.set_key("coherence-pursuit")
    x, y = scatter.cloud.points()
    scatter.cloud.select_rect(x.max() - 1.0, y.min() - 1, x.max() + 1, y.max() + 1)
    sel = state.selection.copy()
    assert sel.size >= 1
    detail = views.show_view("detail")
    assert detail.current_sample == sel[0]
    contour = views.show_view("contour")
    sx, _ = contour.clouds["spe"].sel_item.getData()
    assert sx.size == sel.size
    comp = views.show_view("comparison")
    picked = {comp.table_samples()[i.row()] for i in comp.table.selectionModel().selectedRows()}
    assert picked == set(sel.tolist()) & set(comp.table_samples())
    # ... and back: a table click changes what the scatter rings.
    comp.table.selectRow(0)
    target = comp.table_samples()[0]
    np.testing.assert_array_equal(state.selection, [target])
    sx, _ = scatter.cloud.sel_item.getData()
    assert sx.size == 1 and sx[0] == pytest.approx(x[target])


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1, 3])
def test_png_export_decodes_at_the_asked_size(usps_views, tmp_path, scale):
    state, views = usps_views
    v = views.show_view("scatter")
    path = views.export_figure(tmp_path / "scatter.png", scale=scale)
    img = QImage(str(path))
    assert not img.isNull()
    assert img.width() == round(v.figure.width() * scale)
    assert abs(img.height() - round(v.figure.height() * scale)) <= 1
    assert QImage(str(path)).pixelColor(2, 2).name() == "#ffffff"  # white background


@pytest.mark.slow
def test_png_text_and_markers_scale(usps_views, tmp_path):
    state, views = usps_views
    views.show_view("scatter")
    dark = []
    for scale in (1, 2):
        p = views.export_figure(tmp_path / f"s{scale}.png", scale=scale)
        img = QImage(str(p)).convertToFormat(QImage.Format.Format_RGB32)
        a = np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
        # Ink (non-white pixels) grows with the area: about scale² when everything scales.
        dark.append(np.count_nonzero(a[..., :3].sum(axis=2) < 600))
    # (Were text and markers left at screen size, only lengths would grow: a ratio near 1-2.)
    assert 2.5 < dark[1] / dark[0] < 5.0


def test_svg_export_parses_and_holds_the_points(usps_views, tmp_path):
    state, views = usps_views
    views.show_view("scatter")
    path = views.export_figure(tmp_path / "scatter.svg")
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    # The first thing drawn is a white rectangle over the whole page.
    skip = {SVG + t for t in ("title", "desc", "defs", "style", "metadata")}
    first = next(el for el in root if el.tag not in skip)
    assert first.tag == SVG + "rect" and first.get("fill") == "#ffffff" and first.get("width") == "100%"
    texts = " ".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    assert "component 1" in texts and "usps-1-vs-8" in texts
    # A circle per sample (one path per colour holds all of that colour's circles).
    circles = sum(len(re.findall(r"M[-\d.]+,[-\d.]+a", p.get("d", ""))) for p in root.iter(SVG + "path"))
    assert circles >= data("usps-1-vs-8").n_samples


def test_export_refuses_bad_scale_and_format(usps_views, tmp_path):
    state, views = usps_views
    views.show_view("scatter")
    with pytest.raises(ValueError, match=r"scale must be a number in \[1, 4\]"):
        views.export_figure(tmp_path / "x.png", scale=5)
    with pytest.raises(ValueError, match="must end in .png or .svg"):
        views.export_figure(tmp_path / "x.jpg")
    (tmp_path / "keep.png").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        views.export_figure(tmp_path / "keep.png", overwrite=False)
    assert (tmp_path / "keep.png").read_bytes() == b"mine"


@pytest.mark.slow
@pytest.mark.parametrize("name,dataset,fits", [
    ("scatter", "usps-small", ["pcp"]),
    ("detail", "usps-small", ["pcp"]),
    ("comparison", "usps-small", ["pca", "coherence-pursuit", "pcp"]),
    ("decomposition", "iris", ["pcp"]),
    ("contour", "gaussian-2d", [("residual", {"n_components": 1})]),
    ("ranking", "clusters-3d", ["esfs"]),
    ("learning-curve", "iris", ["scw"]),
])
def test_every_view_renders_offscreen_to_png_and_svg(qtbot, tmp_path, name, dataset, fits):
    state = make_state(dataset, *fits)
    png = render_view(name, state, tmp_path / f"{name}.png", scale=2, size=(560, 360))
    img = QImage(str(png))
    assert not img.isNull() and img.width() == 1120
    # Something was drawn: a good share of the page is not background.
    gray = img.convertToFormat(QImage.Format.Format_Grayscale8)
    a = np.frombuffer(gray.constBits(), np.uint8).reshape(gray.height(), gray.bytesPerLine())
    assert np.mean(a < 200) > 0.01
    svg = render_view(name, state, tmp_path / f"{name}.svg", size=(560, 360))
    root = ET.parse(svg).getroot()
    shapes = len(list(root.iter(SVG + "path"))) + len(list(root.iter(SVG + "polyline"))) + \
        len(list(root.iter(SVG + "image")))
    assert shapes > 5
    assert any("".join(t.itertext()).strip() for t in root.iter(SVG + "text"))


@pytest.mark.slow
def test_figures_record_what_produced_them(usps_views, tmp_path):
    import json

    state, views = usps_views
    v = views.show_view("scatter")
    v.method_box.set_key("coherence-pursuit")
    png = views.export_figure(tmp_path / "a.png", scale=1)
    meta = json.loads(QImage(str(png)).text("Comment"))
    assert meta["method"] == "coherence-pursuit" and meta["view"] == "scatter"
    assert meta["data"]["sha256"] == state.dataset.provenance.sha256
    svg = views.export_figure(tmp_path / "a.svg")
    root = ET.parse(svg).getroot()
    (el,) = [e for e in root.iter(SVG + "metadata") if e.get("id") == "robust-studio-provenance"]
    assert json.loads(el.text)["params"] == state.result("coherence-pursuit").params


def test_asking_which_views_exist_imports_none_of_them(monkeypatch):
    """Every Open asked which of the method's views could be built ahead (``name in classes``),
    and the mapping's membership test imported each view's module, the scatter's bringing
    scikit-learn, on the GUI thread. Membership is answered from the catalogue alone."""
    from app.views import result_views

    def no_import(name):
        raise AssertionError(f"imported the module of view {name!r}")

    monkeypatch.setattr(result_views, "_view_class", no_import)
    classes = result_views._ViewClasses()
    assert all(name in classes for name in VIEW_NAMES)
    assert "no-such-view" not in classes
    with pytest.raises(AssertionError, match="scatter"):
        classes["scatter"]
