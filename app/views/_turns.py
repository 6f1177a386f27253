"""Work split over turns of the event loop, each turn answering the user in between.

``QTimer.singleShot(0, fn)`` posts ``fn`` as an event, and Qt delivers posted events before
timers and window-system input that are already due: a chain of them (build a view, fill it,
draw a cloud's parts) ran back to back and the window did not answer until the chain ended
(issue 25, benchmarks/bench_views.py gaps). A zero-interval QTimer is a timer like the others:
the ones already due, and the input waiting, go first.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer


def next_turn(parent: QObject, fn) -> QTimer:
    """A single-shot timer that calls ``fn`` on a coming turn each time it is ``start()``-ed
    (starting it again while it waits calls ``fn`` once)."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(0)
    timer.timeout.connect(fn)
    return timer
