"""Stacks the L + S view reads a frame at a time: the frames of a video opened out of core,
results kept in a Zarr store (S of a long video), and the frames a streaming run has finished
so far (:class:`LiveFrames`). Nothing here holds a whole stack on disk in memory."""
from __future__ import annotations

import bisect
from pathlib import Path

import numpy as np

__all__ = ["FrameRows", "lazy_stacks", "PROBE_FRAMES", "LiveFrames", "FrameGone"]

#: Frames read to set the colour scales of a stack that is not in memory (evenly spaced).
PROBE_FRAMES = 32


class FrameRows:
    """``rows[i]``: frame i as a flat float array, read when asked for."""

    def __init__(self, read_one, n: int):
        self._read, self.n = read_one, int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i) -> np.ndarray:
        return np.asarray(self._read(int(i)), dtype=float).reshape(-1)


def lazy_stacks(dataset, result):
    """(X, L, S, probe): the three stacks as :class:`FrameRows` and the frame numbers whose values
    set the colour scales."""
    n = dataset.n_samples
    X = FrameRows(dataset.source.frame, n)
    L = FrameRows(result.arrays["low_rank"].__getitem__, n)
    S = FrameRows(result.arrays["sparse"].__getitem__, n)
    probe = np.unique(np.linspace(0, n - 1, min(n, PROBE_FRAMES)).astype(np.int64))
    return X, L, S, probe


class FrameGone(RuntimeError):
    """A frame of a run in progress can no longer be read (the run was cancelled and its store
    deleted)."""


class LiveFrames:
    """The L and S rows a streaming run has finished so far: rows ``0:n_done`` of ``n_frames``.

    Fed with :class:`app.fit_process.FramesSoFar` messages (:meth:`update`). Rows are read from
    the Zarr store being written when there is one, else kept here as they arrive: the blocks
    of rows the messages carried, as they are (no copy; a run whose results stay in memory has
    results that fit in it, and each message carries only the new rows).
    """

    FIELDS = ("low_rank", "sparse")

    def __init__(self, n_frames: int, n_features: int):
        self.n_frames, self.n_features = int(n_frames), int(n_features)
        self.n_done = 0
        self.store: Path | None = None
        self._final: Path | None = None
        self._rows: dict = {}          # field -> zarr array of the store being written
        self._starts: list[int] = []   # in memory: first row of each block ...
        self._blocks: list[dict] = []  # ... and the block (field -> rows)

    def update(self, frames) -> None:
        if (frames.n_frames, frames.n_features) != (self.n_frames, self.n_features):
            raise ValueError(f"frames of a {frames.n_frames} x {frames.n_features} run sent to the view of a "
                             f"{self.n_frames} x {self.n_features} one")
        if frames.store is not None:
            if self.store is None:
                self._final = Path(frames.final_store) if frames.final_store else None
                # A message read late may name the store being written after the run moved it
                # to its final place (or deleted it, when cancelled).
                for path in (Path(frames.store), self._final):
                    if path is None:
                        continue
                    try:
                        self._open(path)
                        break
                    except FileNotFoundError:
                        continue
                else:
                    raise FrameGone("the results of this run are gone (the run was cancelled)")
        else:
            if frames.start != self.n_done:   # messages carry consecutive rows, in order
                raise ValueError(f"rows {frames.start}:{frames.stop} arrived after rows 0:{self.n_done}")
            self._starts.append(int(frames.start))
            self._blocks.append({f: frames.arrays[f] for f in self.FIELDS})
        self.n_done = max(self.n_done, int(frames.stop))

    def read(self, field: str, i: int) -> np.ndarray:
        """Row ``i`` of ``field``; only finished rows can be read."""
        if not 0 <= i < self.n_done:
            raise IndexError(f"frame {i} is not processed yet ({self.n_done} of {self.n_frames} are)")
        if self.store is None:
            b = bisect.bisect_right(self._starts, i) - 1
            return np.asarray(self._blocks[b][field][i - self._starts[b]])
        for _ in range(2):
            row = np.asarray(self._rows[field][i])
            # Zarr reads a missing chunk as zeros. The store is moved to its final place when
            # the run finishes and deleted when it is cancelled, never re-created: if it is
            # still there after the read, the read saw it whole.
            if self.store.is_dir():
                return row
            if self._final is None or self.store == self._final or not self._final.is_dir():
                break
            self._open(self._final)   # finished a moment ago: the same rows, in their final place
        raise FrameGone(f"the results of frame {i} are gone (the run was cancelled)")

    def _open(self, path: Path) -> None:
        import zarr
        group = zarr.open_group(str(path), mode="r")
        try:
            rows = {f: group[f] for f in self.FIELDS}
        except KeyError:
            # The folder was moved to its final place between opening it and reading its
            # arrays (seen under load): the caller tries the final place.
            raise FileNotFoundError(path) from None
        self.store, self._rows = path, rows

    def rows(self, field: str) -> FrameRows:
        return FrameRows(lambda i: self.read(field, i), self.n_frames)
