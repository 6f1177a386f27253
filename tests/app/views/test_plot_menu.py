"""A selection plot's context menu is pyqtgraph's ViewBox menu, made when first asked for (not
with every plot a view builds)."""
import pyqtgraph as pg

from app.views._cloud import new_plot


def test_the_view_menu_is_made_on_first_request_and_works(qtbot):
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    plot = new_plot(w.ci, row=0, col=0)
    vb = plot.getViewBox()
    assert vb.menu is None and vb.menuEnabled()
    plot.plot([0, 10], [0, 5])
    vb.setRange(xRange=(2, 3), yRange=(1, 2), padding=0)
    menu = vb.getMenu(None)
    assert menu is vb.getMenu(None) and "View All" in [a.text() for a in vb.getContextMenus(None)]
    menu.viewAll.trigger()
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 <= 0 and x1 >= 10 and y0 <= 0 and y1 >= 5


def test_a_plot_without_a_menu_makes_none(qtbot):
    w = pg.GraphicsLayoutWidget()
    qtbot.addWidget(w)
    vb = new_plot(w.ci, row=0, col=0).getViewBox()
    vb.setMenuEnabled(False)
    assert vb.getMenu(None) is None and vb.getContextMenus(None) == []
