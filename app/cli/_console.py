"""What the command line prints: results on stdout, notes, warnings and progress on stderr."""
from __future__ import annotations

import sys
import time

from robustcore.result import summary_lines

__all__ = ["Console"]


class Console:
    """``say`` goes to stdout (silenced by --quiet), ``note`` to stderr (silenced by --quiet),
    ``warn`` to stderr always: something was not taken in as it was, or not checked."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self._last = 0.0
        self._tty = sys.stderr.isatty()

    def say(self, text: str = "") -> None:
        if not self.quiet:
            print(text)

    def note(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr)

    @staticmethod
    def warn(text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)

    def dataset(self, ds) -> None:
        """What was loaded, and whatever the loader could not take in as it was."""
        if getattr(ds, "outliers", None) is not None:
            source = f" (from {ds.outliers_from})" if ds.outliers_from else ""
            self.note(f"data: {ds.n_samples} x {ds.n_features}, {int(ds.outliers.sum())} known outliers{source}")
        for w in getattr(ds, "warnings", ()):
            self.warn(w)

    def result(self, res) -> None:
        """A run's summary (rendered from its fields) on stdout, its warnings on stderr."""
        self.say(f"{res.method}: done in {res.elapsed:.2f} s")
        for line in summary_lines(res):
            if line.lstrip().startswith("warning: "):
                self.warn(f"{res.method}: {line.split('warning: ', 1)[1]}")
            else:
                self.say(line)

    def progress(self, label: str):
        if self.quiet or not self._tty:
            return None

        def cb(fraction, message):
            now = time.monotonic()
            if now - self._last > 0.1 or fraction >= 1.0:
                self._last = now
                sys.stderr.write(f"\r{label}: {100 * fraction:3.0f}% {message[:50]:<50}")
                sys.stderr.flush()
        return cb

    def end_progress(self) -> None:
        if not self.quiet and self._tty:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()
