"""Frame sources: a stack of frames read a batch at a time, never all at once unless asked.

A frame source is what a streaming method consumes and what a viewer pages through. Every source
has the same small surface (:class:`FrameSource`):

* ``n_frames``, ``frame_shape`` (height, width), ``channels`` (1, or 3 for colour kept per
  channel), ``n_features`` = height * width * channels;
* ``read(start, stop)`` -> float64 array (stop - start, n_features), one row per frame;
* ``iter_batches(batch_size, progress=...)`` -> (first frame index, rows) pairs, in order;
* ``value_range`` (low, high) of the pixel values when the format knows it (8-bit video:
  (0, 255)), else None; ``timestamps`` (seconds, one per frame) and ``fps`` when known;
* ``display_shape``: the (height, width) to draw a row as an image. Colour frames are laid out
  PLANAR (all red values, then green, then blue), so a colour row draws as the three channel
  images stacked vertically and every method treats it as an ordinary vector.

Sources hold open files: use them in a ``with`` block or call ``close()``.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator

import numpy as np

from .._progress import Reporter

__all__ = ["FrameSource", "ArrayFrames", "as_frame_source"]


_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _read_lock(source) -> threading.RLock:
    """The lock of one source's reads (kept beside it, not in it: a source is pickled)."""
    with _LOCKS_GUARD:
        lock = _LOCKS.get(source)
        if lock is None:
            lock = _LOCKS[source] = threading.RLock()
        return lock


class FrameSource:
    """Base class of frame sources (see the module doc). Subclasses implement ``_read``."""

    n_frames: int = 0
    frame_shape: tuple[int, int] = (0, 0)
    channels: int = 1
    value_range: tuple[float, float] | None = None
    timestamps: np.ndarray | None = None
    fps: float | None = None
    name: str = "frames"

    @property
    def n_features(self) -> int:
        h, w = self.frame_shape
        return int(h * w * self.channels)

    @property
    def display_shape(self) -> tuple[int, int]:
        h, w = self.frame_shape
        return int(h * self.channels), int(w)

    @property
    def shape(self) -> tuple[int, int]:
        """(n_frames, n_features): the table the frames make, one row per frame."""
        return self.n_frames, self.n_features

    @property
    def nbytes(self) -> int:
        """Bytes the whole stack takes in memory as float64 (what ``read()`` of everything needs)."""
        return self.n_frames * self.n_features * 8

    def __len__(self) -> int:
        return self.n_frames

    def _check_range(self, start, stop) -> tuple[int, int]:
        n = self.n_frames
        start = 0 if start is None else int(start)
        stop = n if stop is None else int(stop)
        if not 0 <= start <= stop <= n:
            raise IndexError(f"frames {start}:{stop} are outside this source's {n} frames (0:{n})")
        return start, stop

    def read(self, start: int | None = None, stop: int | None = None) -> np.ndarray:
        """Frames ``start`` (inclusive) to ``stop`` (exclusive) as float64 rows (stop - start, n_features)."""
        start, stop = self._check_range(start, stop)
        if start == stop:
            return np.empty((0, self.n_features))
        # One read at a time: a video's decoder is one generator, which two threads (the window's
        # L + S view on the GUI thread, its sample detail on a worker) broke by reading at once.
        with _read_lock(self):
            return self._read(start, stop)

    def frame(self, i: int) -> np.ndarray:
        """One frame as a (n_features,) row."""
        return self.read(i, i + 1)[0]

    def _read(self, start: int, stop: int) -> np.ndarray:
        raise NotImplementedError

    def iter_batches(self, batch_size: int, start: int | None = None, stop: int | None = None,
                     progress=None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_index, rows)`` for consecutive batches of at most ``batch_size`` frames.

        ``progress(fraction, message)`` (or a Reporter) is called after each batch is read; it
        cancels by returning False or raising :class:`~robustcore.Cancelled`.
        """
        start, stop = self._check_range(start, stop)
        b = int(batch_size)
        if b < 1:
            raise ValueError(f"batch_size must be an integer >= 1; got {batch_size!r}")
        rep = progress if isinstance(progress, Reporter) else Reporter(progress)
        total = max(stop - start, 1)
        for s in range(start, stop, b):
            e = min(s + b, stop)
            rows = self._read(s, e)
            rep((e - start) / total, f"read frames {s}-{e - 1} of {self.n_frames}")
            yield s, rows

    def describe(self) -> dict:
        """What a data panel shows about the stack (sizes, rate), as display strings and numbers."""
        from ..datasets._limits import format_bytes
        h, w = self.frame_shape
        out = {"frames": self.n_frames, "frame size": f"{w} x {h} (width x height)",
               "channels": "luminance" if self.channels == 1 else f"{self.channels} (planar)",
               "in memory as float64": format_bytes(self.nbytes)}
        if self.fps:
            out["frame rate"] = f"{self.fps:.6g} fps"
        if self.timestamps is not None and len(self.timestamps):
            out["time span"] = f"{self.timestamps[0]:.3f} s to {self.timestamps[-1]:.3f} s"
        return out

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ArrayFrames(FrameSource):
    """Frames already in memory (or in any array that slices by rows: a numpy memmap, a Zarr or
    HDF5 array): rows are frames.

    Parameters
    ----------
    X : array (n_frames, n_features)
    frame_shape : (height, width), optional
        Default: (1, n_features), i.e. no image layout.
    channels : int
        1, or 3 for planar colour rows.
    value_range : (low, high) or None
        None computes it from the data when X is a numpy array (one pass), and leaves it unknown
        otherwise.
    """

    def __init__(self, X, frame_shape=None, channels: int = 1, value_range=None, timestamps=None,
                 fps=None, name: str = "frames"):
        if not hasattr(X, "shape") or len(X.shape) != 2:
            X = np.asarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise ValueError(f"frames must be a 2-D array (n_frames, n_features); got shape {X.shape}")
        n, d = (int(v) for v in X.shape)
        channels = int(channels)
        if frame_shape is None:
            if d % channels:
                raise ValueError(f"{d} features cannot be split into {channels} channels")
            frame_shape = (1, d // channels)
        h, w = (int(v) for v in frame_shape)
        if h * w * channels != d:
            raise ValueError(f"frame_shape {h}x{w} with {channels} channel(s) needs {h * w * channels} "
                             f"features per frame, but the frames have {d}")
        self.X = X
        self.n_frames = n
        self.frame_shape = (h, w)
        self.channels = channels
        self.name = name
        self.fps = fps
        self.timestamps = None if timestamps is None else np.asarray(timestamps, dtype=np.float64)
        if value_range is None and isinstance(X, np.ndarray) and X.size:
            value_range = (float(np.min(X)), float(np.max(X)))
        self.value_range = None if value_range is None else (float(value_range[0]), float(value_range[1]))

    def _read(self, start, stop):
        return np.asarray(self.X[start:stop], dtype=np.float64)


def as_frame_source(data, frame_shape=None) -> FrameSource:
    """A :class:`FrameSource` for ``data``: a frame source as it is, a Dataset (its image shape
    as the frame shape), or any 2-D array (rows are frames)."""
    if isinstance(data, FrameSource):
        return data
    if hasattr(data, "X") and hasattr(data, "image_shape"):
        X = data.dense() if hasattr(data, "dense") else data.X
        shape = frame_shape or data.image_shape
        # A video's pixel range is its format's (0-255), not what its frames happen to span.
        details = getattr(getattr(data, "provenance", None), "details", None) or {}
        return ArrayFrames(X, frame_shape=shape, name=getattr(data, "name", "frames"),
                           value_range=details.get("value_range"))
    return ArrayFrames(data, frame_shape=frame_shape)
