"""Central area: one tab per kind of result view, shown when the current results feed it; the
tabs wrap onto more rows instead of scrolling (:mod:`._wrap_tabs`), so all are in sight.

View names (also the command line's ``--figure VIEW`` names): scatter, detail, decomposition,
ranking, contour, outlier-map, learning-curve, comparison, evaluation. A "summary" tab lists the numbers of every run.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from PySide6.QtCore import QCoreApplication, QEvent, QTimer, Signal
from PySide6.QtWidgets import QPlainTextEdit, QTabWidget, QWidget

from robustcore.methods import METHODS, methods_for_view
from robustcore.result import summary_lines

from ..mapped_tables import release as release_mapped
from ._figure_export import FigureExport
from ._prepare_ahead import PrepareAhead
from ._turns import next_turn
from ._wrap_tabs import WrapTabBar
from .catalog import VIEW_NAMES
from .catalog import view_class as _view_class


class _ViewClasses(Mapping):
    """View name -> class, each imported the first time it is asked for: the scatter view's module
    imports robustcore.compare and through it scikit-learn (about 1 s on a cold start), which the
    window's first paint does not need (issue 25)."""

    def __getitem__(self, name):
        if name not in VIEW_NAMES:
            raise KeyError(name)
        return _view_class(name)

    def __contains__(self, name):
        # Mapping's own test looks the class up, and so imported the view's module: every Open
        # imported the scatter's (scikit-learn through robustcore.compare) on the GUI thread
        # while checking which views to build ahead.
        return name in VIEW_NAMES

    def __iter__(self):
        return iter(VIEW_NAMES)

    def __len__(self):
        return len(VIEW_NAMES)


def view_title(name: str) -> str:
    """The tab title of view ``name``."""
    return _view_class(name).title


# How long after the latest drawing the pages of a mapped table are given back.
RELEASE_AFTER_MS = 1000


class ResultViews(FigureExport, PrepareAhead, QTabWidget):
    """The result views of one :class:`~app.state.AppState`.

    ``view(name)`` gives a view, ``show_view(name)`` brings it to the front,
    ``export_figure(path, scale)`` writes the current (or named) view's figure as PNG or SVG
    (:class:`._figure_export.FigureExport`).

    A new result is drawn over the next turns of the event loop, not in the one it arrives in:
    the view to show is built in one turn, each part of it not built ahead yet in a turn of its
    own, and filled in the next (together they froze the window 55-85 ms; issues 25 and 33.2,
    benchmarks/bench_views.py gaps and arrival). ``viewsReady`` is emitted once
    the view on screen shows it, and :meth:`when_drawn` runs a callback then. Asking for a view
    (``view``, ``show_view``, ``export_figure``, ``current_view_name``) draws what is pending
    first, so code that reads a view right after a result sees the result. The views a result
    could go to are built ahead, in idle turns (:class:`._prepare_ahead.PrepareAhead`).
    """

    viewsReady = Signal()

    # Views that must watch results as they arrive exist from the start; the others are built
    # the first time they have something to show (a PlotItem costs milliseconds; 24 add up).
    EAGER = ("learning-curve",)
    # True: a view with something to show is built the first time its tab is chosen (a stand-in
    # holds its tab until then). False builds every such view at once, as before issue 25; the
    # benchmark (benchmarks/bench_views.py gaps) measures both.
    BUILD_ON_FIRST_SHOW = True

    def __init__(self, state, parent=None, build_views: bool = True):
        super().__init__(parent)
        self.state = state
        # False: views are built only when asked for by name (an offscreen render needs one).
        self._build_views = build_views
        # Names wrap onto more rows rather than hide behind scroll arrows.
        self.setTabBar(WrapTabBar(self))
        self.setDocumentMode(True)
        self.summary = QPlainTextEdit(readOnly=True)
        # What an empty window should say: where to start.
        self.summary.setPlaceholderText(
            "No results yet.\n\n1. Open a data file (Ctrl+O) or pick one from the Demos menu.\n"
            "2. Choose a method and its parameters in the Method panel.\n"
            "3. Press Run (Ctrl+R). The views for that method appear here as tabs.")
        self.addTab(self.summary, "Summary")
        self._classes = _ViewClasses()
        self._views = {}
        self._standins = {}   # name -> empty tab of a view not built yet (see _add_standin)
        # What is still to be drawn (see _draw_step): ("result", method) or ("show", view name).
        self._pending = None
        self._step_timer = next_turn(self, self._on_step)
        self._init_prepare()
        self._when_drawn = []  # callbacks waiting for the pending drawing
        # The pages of a mapped table (app.mapped_tables) the drawings read, given back once
        # the window has drawn for a while: not in the turns of a view's first showing, nor
        # while its workers still read the table.
        self._release_timer = QTimer(self, singleShot=True, interval=RELEASE_AFTER_MS)
        self._release_timer.timeout.connect(release_mapped)
        for name in self.EAGER:
            if name in self._classes:
                self._create(name)
        state.resultAdded.connect(self._on_result)
        state.resultsCleared.connect(self._on_cleared)
        # Bound methods, never lambdas that hold ``self``: PySide keeps a lambda connected to the
        # state for as long as the state lives, and with it these views, their clouds and their
        # data (every figure of a command line's run, every closed window's views).
        state.datasetChanged.connect(self._on_dataset)
        state.currentMethodChanged.connect(self._on_method)
        state.datasetChanged.connect(self._prepare_current)
        state.currentMethodChanged.connect(self._prepare_current)
        self.currentChanged.connect(self._on_tab)
        self._update_tabs()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.tabBar().relayout()

    def _tab_index_for(self, name) -> int:
        """Where view ``name``'s tab goes: tabs keep the order of VIEW_NAMES whatever order the
        views (or their stand-ins) are made in."""
        made = set(self._views) | set(self._standins)
        return 1 + sum(1 for n in VIEW_NAMES if n in made and VIEW_NAMES.index(n) < VIEW_NAMES.index(name))

    def _create(self, name):
        v = self._classes[name](self.state)
        self.blockSignals(True)
        standin = self._standins.pop(name, None)
        if standin is not None:
            # The real view takes the stand-in's place (and its place on screen, if it was shown).
            i, was_current = self.indexOf(standin), self.currentWidget() is standin
            self.insertTab(i, v, v.title)
            self.removeTab(self.indexOf(standin))
            standin.deleteLater()
            if was_current:
                self.setCurrentWidget(v)
        else:
            self.insertTab(self._tab_index_for(name), v, v.title)
        self._views[name] = v
        self.blockSignals(False)
        return v

    def _add_standin(self, name) -> None:
        """A tab for a view that has something to show but is not built yet: an empty widget,
        replaced by the view the first time the tab is chosen. Building all six views of a
        first result at once froze the window for 0.2-1.2 s; one is built per click instead."""
        w = QWidget()
        w.setObjectName(f"standin_{name}")
        self.blockSignals(True)
        self.insertTab(self._tab_index_for(name), w, self._classes[name].title)
        self.blockSignals(False)
        self._standins[name] = w

    # -- public -----------------------------------------------------------------------------
    def view_names(self) -> list[str]:
        return list(self._classes)

    def view(self, name: str):
        """The view called ``name`` (built on first use)."""
        if name not in self._classes:
            raise ValueError(f"view must be one of {', '.join(VIEW_NAMES)}; got {name!r}")
        self.flush()
        v = self._views.get(name)
        if v is None:
            v = self._create(name)
            self.setTabVisible(self.indexOf(v), v.available())
            self.tabBar().relayout()
        v.finish_building()
        return v

    def available_views(self) -> list[str]:
        return [n for n in self._classes
                if (self._views[n].available() if n in self._views
                    else self._fed(n) and self._classes[n].available_in(self.state))]

    def _fed(self, name) -> bool:
        """Whether a result that feeds view ``name`` is there: without one no view can draw, and its
        class need not be imported to say so (the empty window at start-up imports none)."""
        return any(self.state.result(m) is not None for m in methods_for_view(name))

    def show_view(self, name: str):
        v = self.view(name)
        why = v.missing(self.state)
        if why is not None:
            raise ValueError(f"the {name!r} view has nothing to show yet: {why}")
        v.ensure_fresh()
        self.setCurrentWidget(v)
        return v

    def current_view_name(self) -> str | None:
        self.flush()
        w = self.currentWidget()
        return next((n for n, v in self._views.items() if v is w), None)

    def show_live(self, name: str, key, title: str, frames) -> None:
        """Feed the frames a run in progress has finished to view ``name`` (one with
        ``show_live``); it comes to the front when nothing this window can draw is showing."""
        v = self.view(name)
        v.show_live(key, title, frames)
        self.setTabVisible(self.indexOf(v), v.available())
        self.tabBar().relayout()
        cur = self.current_view_name()
        if v.available() and (cur is None or not self._views[cur].available()):
            self.setCurrentWidget(v)

    def end_live(self, keep=None) -> None:
        """Views drawing a run in progress (other than run ``keep``) go back to stored results."""
        live = [v for v in self._views.values() if getattr(v, "live", False) and v.live_key != keep]
        for v in live:
            v.end_live()
        if live:
            self._update_tabs()
            self._refresh_current()

    # -- reacting to the state ------------------------------------------------------------
    def _refresh_current(self) -> None:
        cur = self.currentWidget()
        if cur in self._views.values():
            if self._build_in_turns(cur):
                return
            cur.ensure_fresh(strict=False)
            self._release_timer.start()   # pages of a mapped table the drawing read

    def _build_in_turns(self, v) -> bool:
        """Whether view ``v``, shown before it was built ahead, had a deferred part of its
        construction left: one is built now, the others and the drawing each in a coming turn
        (:meth:`_draw_step`). Finished and drawn in the turn its tab was chosen, the SPE / T² map
        held the GUI thread 75-85 ms at 2,000,000 rows (issue 33.2, bench_views.py arrival)."""
        if not v.build_step():
            return False
        if self._pending is None:
            self._pending = ("show", next(n for n, w in self._views.items() if w is v))
        self._queue_step()
        return True

    def _on_result(self, method: str) -> None:
        self._write_summary()
        for v in self._views.values():
            if method in v.methods:
                v.invalidate()
        self._update_tabs()
        self._pending = ("result", method)
        self._queue_step()
        if method in METHODS:   # the views not built yet, in the idle turns after the drawing
            self.prepare(METHODS[method].views)

    # -- drawing a new result over the next turns of the event loop ------------------------
    def _queue_step(self) -> None:
        self._step_timer.start()

    def _on_step(self) -> None:
        if self._draw_step():
            self._queue_step()

    def _target(self, pending) -> str | None:
        """The view to draw for ``pending``: ("show", name) that view; ("result", method) the
        view on screen if it can draw anything, else the first view the method feeds that can
        draw its result."""
        kind, what = pending
        if kind == "show":
            return what if what in self._views and self._views[what].available() else None
        cur = self.currentWidget()
        name = next((n for n, v in self._views.items() if v is cur), None)
        if name is not None and self._views[name].available():
            return name
        m = METHODS.get(what)
        if m is None:
            return None
        available = self.available_views()
        return next((n for n in m.views if n in available), None)

    def _draw_step(self) -> bool:
        """One turn's share of drawing the pending result; True while more is to come."""
        if self._pending is None:
            return False
        name = self._target(self._pending)
        if name is not None and name not in self._views:
            self._create(name)   # this turn; filled in the next one
            self._update_tabs()
            return True
        if name is not None and self._views[name].build_step():
            return True   # a part of the view not built ahead: one per turn, then the drawing
        self._pending = None
        if name is not None:
            v = self._views[name]
            self.setCurrentWidget(v)
            v.ensure_fresh(strict=False)
        waiting, self._when_drawn = self._when_drawn, []
        self._release_timer.start()   # pages of a mapped table the drawing read
        self.viewsReady.emit()
        for fn in waiting:
            fn()
        return False

    def flush(self) -> None:
        """Draw the pending result now (all steps in this turn)."""
        while self._pending is not None:
            self._draw_step()

    def drawing(self) -> bool:
        """Whether a result or a new view waits to be drawn on coming turns of the event loop."""
        return self._pending is not None

    def when_drawn(self, fn) -> None:
        """Call ``fn`` once the pending result is drawn (now when nothing is pending)."""
        if self._pending is None:
            fn()
        else:
            self._when_drawn.append(fn)

    def _on_cleared(self) -> None:
        self.summary.clear()
        for v in self._views.values():
            v.invalidate()
            if hasattr(v, "clear"):
                v.clear()
        self._update_tabs()

    def _on_dataset(self, _dataset) -> None:
        self._on_cleared()

    def _on_method(self, method: str) -> None:
        # Views that draw this method follow it (their chooser moves to it at the redraw).
        for v in self._views.values():
            if method in v.methods:
                v.invalidate()
        self._refresh_current()

    def _on_tab(self, _i) -> None:
        cur = self.currentWidget()
        name = next((n for n, w in self._standins.items() if w is cur), None)
        if name is not None:
            # First time shown: built now, in the stand-in's place, and drawn on the next turn.
            v = self._create(name)
            self.setTabVisible(self.indexOf(v), v.available())
            self.tabBar().relayout()
            if self._pending is None:
                self._pending = ("show", name)
            self._queue_step()
            return
        self._refresh_current()

    def _update_tabs(self) -> None:
        available = self.available_views()
        if self._build_views:
            for name in available:
                if name not in self._views and name not in self._standins:
                    if self.BUILD_ON_FIRST_SHOW:
                        self._add_standin(name)
                    else:
                        self._create(name)
        for name, w in self._standins.items():
            self.setTabVisible(self.indexOf(w), name in available)
        for v in self._views.values():
            self.setTabVisible(self.indexOf(v), v.available())
        self.setTabVisible(self.indexOf(self.summary), True)
        self.tabBar().relayout()

    def _write_summary(self) -> None:
        lines = []
        for res in self.state.results.values():
            lines.append(f"{res.method}  ({res.elapsed:.2f} s)")
            lines += summary_lines(res)
        self.summary.setPlainText("\n".join(lines))


def render_view(name: str, state, path, scale: float = 1.0, size=(1000, 700), overwrite: bool = True,
                provenance: bool = False) -> str:
    """Build view ``name`` offscreen for ``state`` and write its figure to ``path`` (.png or .svg),
    or to each of a list of paths (the view is drawn once for all of them); returns the last.

    For the command line (``--figure VIEW``): needs no window, creates the QApplication if none runs.
    """
    from .._qt import ensure_app
    from PySide6.QtCore import Qt

    app = ensure_app()
    views = ResultViews(state, build_views=False)
    views.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    views.tabBar().hide()   # one view, alone: the figure takes the whole width asked for
    views.resize(int(size[0]), int(size[1]))
    views.show()
    try:
        views.show_view(name)
        app.processEvents()
        # The command line stamps its own provenance into the file; do not write it twice.
        for p in ([path] if isinstance(path, (str, os.PathLike)) else list(path)):
            written = views.export_figure(os.fspath(p), scale=scale, view=name, overwrite=overwrite,
                                          provenance=provenance)
        return written
    finally:
        # Delete now rather than at interpreter exit: PySide6 6.12 with pyqtgraph may crash when
        # plot widgets outlive the QApplication during shutdown.
        views.close()
        views.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
