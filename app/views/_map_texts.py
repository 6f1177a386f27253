"""What the SPE / T² map (:mod:`.contour`) writes: its legend and its status line, for the
rule chosen and for the other two. The plots' aspect is locked, so a legend or a status of
another height under another rule changed the plots' height and moved the user's framing: both
are kept as tall as the tallest of the three rules' at the view's width. A mixin of
ContourView, which gives it the legend, the rule chooser, the result drawn and its flags."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from . import _derived as der
from . import _style as st
from ._binned import FLAG_POINTS
from ._common import fmt, title_of

RULE_FLAGS = {"spe": "outside_spe", "t2": "outside_t2", "either": "outlier"}
RULE_NAMES = {"spe": "SPE", "t2": "T²", "either": "SPE or T²"}
# The samples within the limits and the flagged ones (drawn as points).
INSIDE, OUTSIDE = "#1F4E79", "#D55E00"

# What of the flagged samples a binned map draws as points (the rest are a density of their own
# colour), in the legend (an exported figure has no status line) and the status.
_POINTS_RULE = f"all flagged up to {FLAG_POINTS:,} in view, else the highest"


class MapTexts:
    """Mixin of :class:`.contour.ContourView`: its legend and status (module doc)."""

    def fit_layout(self) -> None:
        """The legend is laid out as for each rule and kept as tall as the tallest: the plots'
        aspect is locked, so a legend of another height under another rule changed their height
        and moved the user's framing (a rule's longer text took a second row)."""
        leg = self.legend
        rules = [] if leg is None or not leg.items or self.drawn is None else [
            r for r in RULE_FLAGS if r != self.rule_box.key()] + [self.rule_box.key()]   # the shown one last
        if leg is not None:
            leg.setMinimumHeight(0)
        tallest = 0.0
        for rule in rules or [None]:
            if rule is not None:
                for (_, label), text in zip(leg.items, self._legend_texts(rule)):
                    label.one_line = None
                    label.setText(text)
            super().fit_layout()
            if leg is not None:
                tallest = max(tallest, leg.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize).height())
        if rules:
            leg.setMinimumHeight(tallest)
        self._reserve_status()

    def _rule_text(self, rule: str | None = None) -> tuple[str, str]:
        """(what the flags of ``rule`` (default: the chosen one) mean, "in all d dims" or "") for
        the legend and the status."""
        rule = rule or self.rule_box.key()
        text = der.outlier_rule(self.drawn) if rule == "either" else f"{RULE_NAMES[rule]} above its limit"
        d = self.plane.shape[1] if self.plane is not None else 2
        # Beyond two dimensions the isolines are the limits on the plane drawn, while a sample's
        # flag is its SPE / T² in the whole space: a ringed point may sit inside both lines.
        return text, (f" in all {d} dims" if d > 2 else "")

    def _legend_texts(self, rule: str) -> list[str]:
        """The legend's texts under ``rule``: as many entries for every rule (see fit_layout).
        Binned, over FLAG_POINTS flagged samples are a density of their own colour with the
        highest as points: the legend names both, all an exported figure has to say it (a pink
        density of 19,781 flagged samples stood unnamed under one black point at 1,000,000 rows)."""
        n, k = self.current_flags.size, self._flagged(rule)
        rule_text, scope = self._rule_text(rule)
        binned = self._binned_xy is not None
        texts = [f"within limits ({n - k:,}{', binned' if binned else ''})",
                 "flagged" + scope + f": {rule_text} ({k:,}{', binned' if binned and k > FLAG_POINTS else ''})"]
        if self._layered:
            texts.append(f"drawn as points: {_POINTS_RULE}")
        return texts + ["limit on this plane" if scope else "this map's limit", "other map's limit", "component 1"]

    def _fill_legend(self) -> None:
        """The legend. Binned, the samples within the limits are a density of their colour, the
        flagged ones another of their own (when there are too many to draw each) and the
        cloud's flag points: the same entries before and after the picture comes, and as many
        for every rule, so the legend's height, and with it the plots' framing, do not change
        then (see fit_layout)."""
        k = self._flagged(self.rule_box.key())
        binned = self._binned_xy is not None
        # Whether some rule flags too many to draw each: then the points drawn get an entry (as
        # under every rule: see above), else every flagged sample is a point.
        self._layered = binned and max(self._flagged(r) for r in RULE_FLAGS) > FLAG_POINTS
        self.legend.clear()
        flag_points = self.clouds["spe"].flag_item
        flagged = (pg.ScatterPlotItem(size=7, brush=st.brush(st.FLAG_LAYER_COLOR), pen=None) if k > FLAG_POINTS
                   else flag_points)
        self._legend_items = [pg.ScatterPlotItem(size=7, brush=st.brush(INSIDE, 190), pen=None),
                              *((flagged, flag_points) if self._layered else (flag_points,) if binned
                                else (pg.ScatterPlotItem(size=7, brush=st.brush(OUTSIDE, 230), pen=None),)),
                              pg.PlotDataItem(pen=st.pen(st.LIMIT_COLOR, 2.2)),
                              pg.PlotDataItem(pen=st.pen(st.LIMIT_COLOR, 1.4, Qt.PenStyle.DashLine)),
                              pg.PlotDataItem(pen=st.pen("#333333", 1.2, Qt.PenStyle.DotLine))]
        for it, t in zip(self._legend_items, self._legend_texts(self.rule_box.key())):
            self.legend.addItem(it, t)
        self.fit_layout()

    def _flagged(self, rule: str) -> int:
        """How many samples ``rule`` flags in the result drawn: counted once per result and rule
        (the legend and the status ask 20 times a drawing, 0.5 ms each at 2,000,000 rows)."""
        counted = getattr(self, "_counted", None)
        if counted is None or counted[0] is not self.drawn:
            counted = self._counted = (self.drawn, {})
        if rule not in counted[1]:
            counted[1][rule] = int(np.count_nonzero(np.asarray(self.drawn.flags[RULE_FLAGS[rule]], dtype=bool)))
        return counted[1][rule]

    def _status_text(self, rule: str) -> str:
        res, n, k = self.drawn, self.current_flags.size, self._flagged(rule)
        _, scope = self._rule_text(rule)
        d = self.plane.shape[1] if self.plane is not None else 2
        shown = (f" · {n:,} samples: drawn as their density; as points: {_POINTS_RULE}" if self._binned_xy is not None
                 else "")
        return (f"{title_of(res.method)}: SPE limit {fmt(self.limits['spe'])}, T² limit "
                f"{fmt(self.limits['t2'])} · {k:,} of {n:,} flagged by {RULE_NAMES[rule]} · "
                f"SPE is constant along the components: far-out points there are caught only by T²."
                + (f" The lines are the limits on the plane shown; each flag uses the sample's SPE / T² "
                   f"in all {d} dimensions, so a flagged point can lie inside both lines." if scope else "")
                + shown)

    def _update_status(self) -> None:
        self.set_status(self._status_text(self.rule_box.key()))
        self._reserve_status()

    def _reserve_status(self) -> None:
        """The status line as tall as the tallest of the three rules' at the view's width (its
        own lags in a resize): a status of another height under another rule changed the
        plots' height, whose locked aspect moved the user's framing ("flagged by SPE or T²"
        took a third line at 1280 x 800). Said before the picture comes and not changed by it."""
        if self.drawn is None or self.current_flags is None or not self.limits:
            return
        shown, tallest = self.status.text(), 0
        self.status.setMinimumHeight(0)   # (a label's height for a width is at least its least height)
        for rule in RULE_FLAGS:
            self.status.setText(self._status_text(rule))
            tallest = max(tallest, self.status.heightForWidth(self.width()))
        self.status.setText(shown)
        self.status.setMinimumHeight(tallest)
