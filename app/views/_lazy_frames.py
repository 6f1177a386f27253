"""Stacks the L + S view reads a frame at a time: the frames of a video opened out of core, and
results kept in a Zarr store (S of a long video). Nothing here holds a whole stack in memory."""
from __future__ import annotations

import numpy as np

__all__ = ["FrameRows", "lazy_stacks", "PROBE_FRAMES"]

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
