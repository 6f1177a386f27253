"""Progress and cancellation protocol shared by every long fit (plain Python, no Qt).

A fit takes ``progress=None`` or a callable ``progress(fraction, message)``:

* ``fraction`` is a float in [0, 1] (monotone within one fit), ``message`` a short status text;
* the callable cancels the fit by raising :class:`Cancelled` or by returning ``False``.

A cancelled fit raises :class:`Cancelled` out of ``fit`` and leaves the estimator unfitted.
The callable is invoked from the thread running the fit; throttling for display is the caller's
business (the GUI throttles), so estimators may call it once per iteration.

The callable may also carry optional hooks as attributes, found with :meth:`Reporter.hook`. One
exists today: ``frames(start, stop, sink)``, which a streaming fit (OnlineRPCA) calls when frames
``start:stop`` of its per-frame results are final and can be read from ``sink`` (a FrameSink), so
a viewer can show them while the fit goes on.
"""
from __future__ import annotations

from collections.abc import Callable

__all__ = ["Cancelled", "Reporter", "ProgressCallback"]

ProgressCallback = Callable[[float, str], bool | None]


class Cancelled(Exception):
    """Raised when the progress callback asks a fit to stop."""


class Reporter:
    """Wraps an optional callback; ``report`` raises :class:`Cancelled` if asked to stop.

    ``span(lo, hi)`` returns a child reporter that maps its own [0, 1] into [lo, hi] of the parent,
    so a method built from steps reports one monotone fraction.
    """

    __slots__ = ("_cb", "_lo", "_hi")

    def __init__(self, callback: ProgressCallback | None, lo: float = 0.0, hi: float = 1.0):
        if callback is not None and not callable(callback):
            from ._params import param_error
            raise param_error("progress", "a callable progress(fraction, message) or None", callback)
        self._cb = callback
        self._lo = lo
        self._hi = hi

    @classmethod
    def of(cls, progress) -> Reporter:
        """``progress`` as a Reporter: itself when it is one (its span kept), else a new one."""
        return progress if isinstance(progress, Reporter) else cls(progress)

    def report(self, fraction: float, message: str = "") -> None:
        if self._cb is None:
            return
        f = self._lo + (self._hi - self._lo) * min(max(float(fraction), 0.0), 1.0)
        if self._cb(f, message) is False:
            raise Cancelled(message or "cancelled")

    __call__ = report

    def hook(self, name: str):
        """The caller's optional hook ``name`` (an attribute of the progress callable; see the
        module doc), or None."""
        cb = self._cb
        return cb.hook(name) if isinstance(cb, Reporter) else getattr(cb, name, None)

    def span(self, lo: float, hi: float) -> Reporter:
        width = self._hi - self._lo
        return Reporter(self._cb, self._lo + width * lo, self._lo + width * hi)
