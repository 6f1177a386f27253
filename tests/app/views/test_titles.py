"""A plot's title fits the room it is centred in: the view box's column, not the axes beside it."""
from PySide6.QtGui import QFont, QFontMetricsF

from app.views import _style as st


def test_a_title_wider_than_its_view_box_wraps_even_where_the_whole_plot_is_wide_enough(qtbot):
    fig = st.figure_widget()
    qtbot.addWidget(fig)
    plot = fig.addPlot()
    st.style_plot(plot, title="samples flagged", left="count")
    font = QFont(plot.titleLabel.item.font())
    font.setPointSizeF(10.0)
    one_line = QFontMetricsF(font).horizontalAdvance("samples flagged")
    axis = plot.getAxis("left")
    fig.resize(int(one_line + axis.width() / 2) + 30, 300)   # wide enough for it with the axis, not without
    fig.show()
    qtbot.waitUntil(lambda: plot.width() > 0)
    qtbot.wait(50)
    room = plot.width() - axis.width() - 6
    assert plot.width() - 6 >= one_line > room   # the case: the old rule saw room for one line
    assert plot._rss_title_shown == "samples<br>flagged"
    fig.resize(int(one_line + axis.width()) + 60, 300)   # room again: one line
    qtbot.wait(50)
    assert plot._rss_title_shown == "samples flagged"
