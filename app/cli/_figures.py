"""Figures of the command line: views drawn offscreen into PNG and SVG files, each stamped with
what produced it. Which views exist is :mod:`app.views.catalog`'s one table; whether a view can
draw a run is the view's own :meth:`~app.views.base.BaseView.missing` (as in the window). A
figure that cannot be drawn is skipped, saying which and why: the results are written all the
same (a run of an hour is not thrown away for want of a picture)."""
from __future__ import annotations

import json
import os
import sys

from ._parse import UsageError

__all__ = ["SHARED_VIEWS", "figure_stem", "check_figures", "render"]

# Views that draw every result at once are written once, without a method prefix.
SHARED_VIEWS = ("comparison",)


def figure_stem(method: str, view: str) -> str:
    return view if view in SHARED_VIEWS else f"{method}-{view}"


def views_of(method: str) -> tuple:
    from robustcore.methods import get_method
    return get_method(method).views


def check_figures(figures: list[str], methods: list, dataset=None) -> None:
    """Before anything runs: each figure's view is drawn by a method of this run, and views that
    compare methods have enough of them (the registry says what each view needs); with the
    ``dataset`` opened, a view that cannot draw data read out of core is refused before the fits."""
    from robustcore.methods import methods_for_view, view_requirement
    names = [m.name for m in methods]
    if dataset is not None and dataset.is_lazy and figures:
        from app.views.catalog import view_class
        state = None
        for v in figures:
            if view_class(v).out_of_core is not None:   # the view's own words, as the window says them
                state = state or _state({}, dataset)
                drawn = next(m.name for m in methods if v in m.views)
                raise UsageError(f"--figure {v} cannot be drawn for {drawn}: {view_class(v).missing(state)}; "
                                 "nothing was written")
    for v in figures:
        if not any(v in m.views for m in methods):
            drawn = "; ".join(f"{m.name}: {', '.join(m.views)}" for m in methods)
            raise UsageError(f"--figure {v}: no method in this run draws that view ({drawn})")
        why = view_requirement(v, names)
        if why is not None:
            more = [m for m in methods_for_view(v) if m not in names]
            raise UsageError(f"--figure {v}: {why}; add " + " or ".join(f"--method {m}" for m in more)
                             + "; nothing was written")


def _state(results: dict, dataset, session=None):
    """An AppState holding ``dataset`` and, as ``session`` says, ``results``."""
    offscreen_if_headless()
    from app._qt import ensure_app
    from app.session import apply_to_state
    from app.state import AppState
    ensure_app()
    state = AppState()
    if session is None:
        state.set_dataset(dataset)
    else:
        apply_to_state(session, state, dataset, results)
    return state


def drawn_methods(view: str, results: dict) -> list[str]:
    drawn = [m for m in results if view in views_of(m)]
    return drawn[:1] if view in SHARED_VIEWS else drawn


def offscreen_if_headless() -> None:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or
                                                  os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def render(results: dict, dataset, session, out: str, figures: list[str], size, scale: float,
           force: bool) -> tuple[list[str], list[str]]:
    """Draw the requested views offscreen: a PNG and an SVG per method that has the view (one
    pair for views that show every result, such as the comparison). Returns (paths written,
    one line per figure not drawn saying which and why): a figure the view's own check refuses
    (as the window asks it: a contour map needs control limits, which a full-rank subspace does
    not have; some views cannot draw data read out of core), or whose drawing failed, is skipped
    and the others are still drawn."""
    if not figures:
        return [], []
    from app._qt import collected_on_this_thread
    with collected_on_this_thread():
        return _render(results, dataset, session, out, figures, size, scale, force)


def _render(results, dataset, session, out, figures, size, scale, force) -> tuple[list[str], list[str]]:
    from app.views import render_view
    from app.views.catalog import view_class
    state = _state(results, dataset, session)
    written, skipped = [], []
    for view in figures:
        for method in drawn_methods(view, results):
            why = view_class(view).missing(state, method)
            if why is not None:
                skipped.append(f"--figure {view} was not drawn for {method}: {why}")
                continue
            state.set_current_method(method)
            paths = [os.path.join(out, f"{figure_stem(method, view)}.{ext}") for ext in ("png", "svg")]
            for path in paths:
                if os.path.exists(path) and not force:
                    raise UsageError(f"{path} already exists; pass --force to overwrite")
            try:
                render_view(view, state, paths, scale=scale, size=size)
            except (ValueError, OSError, MemoryError) as exc:
                skipped.append(f"--figure {view} was not drawn for {method}: {exc}")
                continue
            for path in paths:
                stamp_figure(path, results[method], dataset, view)
                written.append(path)
    return written, skipped


def stamp_figure(path: str, result, dataset, view: str) -> None:
    """Write what produced a figure into the file: a PNG text chunk, an SVG <metadata> element."""
    import struct
    import zlib
    from xml.sax.saxutils import escape

    from app.export import atomic_write_bytes, provenance_header
    header = dict(provenance_header(result, dataset), view=view)
    text = json.dumps(header, sort_keys=True)  # ASCII: valid in a PNG tEXt chunk
    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith(".png"):
        end = data.rfind(b"IEND")
        if end < 4:
            return
        body = b"tEXt" + b"Comment\0" + text.encode("ascii")
        chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
        data = data[:end - 4] + chunk + data[end - 4:]
    else:
        svg = data.decode("utf-8")
        start = svg.find("<svg")
        close = svg.find(">", start)
        if start < 0 or close < 0:
            return
        meta = f'\n<metadata id="robust-studio-provenance">{escape(text)}</metadata>'
        data = (svg[:close + 1] + meta + svg[close + 1:]).encode("utf-8")
    atomic_write_bytes(path, data, overwrite=True)
