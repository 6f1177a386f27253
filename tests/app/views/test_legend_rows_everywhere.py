"""Every view's legend labels are level with their symbols (pyqtgraph centres a symbol in its
row but leaves the label at the top of its cell): BaseView.fit_layout levels them for every
view, in the window and in exports, not only where a misaligned row was first seen."""
import pytest

from ._text_rects import misaligned_legend_rows
from .conftest import make_state

VIEWS = ("scatter", "outlier-map", "contour", "detail", "decomposition", "ranking", "evaluation", "comparison")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(1280, 800), (640, 520)])
def test_every_views_legend_rows_are_level(views_for, qtbot, tmp_path, size):
    state = make_state("usps-small", ("pca", {"n_components": 3}), ("coherence-pursuit", {"n_components": 4}),
                       "pcp", "residual")
    views = views_for(state, size=size)
    seen = 0
    for name in VIEWS:
        v = views.view(name)
        if v.missing(state) is not None:
            continue
        views.show_view(name)
        if hasattr(v, "finish_drawing"):
            v.finish_drawing()
        qtbot.wait(50)
        legends = [leg for leg, _ in v._legends if leg.items]
        seen += bool(legends)
        assert misaligned_legend_rows(legends, f"{name} at {size}") == []
        views.export_figure(tmp_path / f"{name}.png", view=name)
        assert misaligned_legend_rows(legends, f"{name} exported at {size}") == []
    assert seen >= 5
