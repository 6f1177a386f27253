"""Building the result views ahead of need: after data, a method or Run is chosen, and when a
result arrives, the views a result could be drawn in are built and drawn one per idle turn, so
neither a result's arrival nor a tab's first click builds one (issue 33.2). A mixin of
:class:`.result_views.ResultViews`, which draws the result on screen first (``_pending``).
"""
from __future__ import annotations

import importlib
import sys

from robustcore.methods import METHODS

from ._turns import next_turn
from .catalog import VIEW_CLASSES

# How long after data, a method or Run the view a result would go to is built (see prepare).
PREPARE_DELAY_MS = 80


class PrepareAhead:
    """Mixin of :class:`.result_views.ResultViews`: ``prepare`` and its turns."""

    def _init_prepare(self) -> None:
        self._to_prepare = []   # views of the method whose first view _prepare builds
        self._preparing = False  # _prepare has a share to do on a coming turn
        self._prepare_timer = next_turn(self, self._prepare)
        # Speculative work: after the turns that show the data or start the fit, and the paint.
        self._prepare_timer.setInterval(PREPARE_DELAY_MS)

    def prepare(self, names) -> None:
        """Build the views ``names`` a result could be drawn in, one per idle turn (:meth:`_prepare`),
        so neither a result's arrival nor a tab's first click builds one (issue 33.2). Called when
        data or a method is chosen, at Run and when a result arrives."""
        names = [n for n in names if n in self._classes]
        if self._build_views and names:
            self._to_prepare = names
            self._preparing = True
            self._prepare_timer.start()

    def _prepare_current(self, *_):
        m = METHODS.get(self.state.current_method)
        if m is not None and self.state.dataset is not None:
            self.prepare(m.views)

    def _prepare(self) -> None:
        """One idle turn's share of :meth:`prepare` (:func:`_prepare_share`); then the next
        share, PREPARE_DELAY_MS later."""
        self._preparing = _prepare_share(self)
        if self._preparing:
            self._prepare_timer.start()

    def _predraw(self) -> bool:
        """Draw one view built ahead that is not on screen and has a result it has not drawn
        (True: one was drawn). A tab's first click then only paints: drawing the SPE/T² map
        and painting it in the same turn was the longest stop after a result arrived."""
        if self._pending is not None:   # the view on screen is drawn first
            return False
        cur = self.currentWidget()
        for name in self._to_prepare:
            v = self._views.get(name)
            if v is not None and v is not cur and v.is_stale() and v.available():
                v.ensure_fresh(strict=False)
                return True
        return False


def _prepare_share(views: PrepareAhead) -> bool:
    """One share of :meth:`PrepareAhead.prepare`: import the module of the next view to build, or
    build that view, or do one of its own deferred construction steps (``BaseView.build_step``),
    or draw a view built ahead (:meth:`PrepareAhead._predraw`); False when there was none to do."""
    ds = views.state.dataset
    if ds is None or not views._build_views:
        return False
    from ..warm_up import window_warming
    for name in views._to_prepare:
        v = views._views.get(name)
        if v is not None:
            if v.build_step():
                return True
            continue
        module = f"app.views.{VIEW_CLASSES[name][0]}"
        if module not in sys.modules:
            # While the warm-up imports what it imports, this could wait on it (issue 33.4).
            if window_warming():
                return False
            importlib.import_module(module)
            return True
        if not views._classes[name].could_draw(views.state, views.state.current_method):
            continue
        v = views._create(name)
        views.setTabVisible(views.indexOf(v), v.available())
        views.tabBar().relayout()
        return True
    return views._predraw()
