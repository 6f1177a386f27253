"""Colour maps and the default mask threshold shared by the L + S view and the exported
decomposition video (no Qt here, so the command line can write videos without a display).

The diverging map is Kovesi's CET-CBD1 (blue, grey, yellow: readable with the common colour-vision
deficiencies), sampled at nine points and interpolated linearly.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

_CBD1 = np.array([[58, 144, 254], [124, 166, 252], [168, 190, 249], [205, 214, 245], [237, 237, 236],
                  [226, 214, 185], [209, 189, 132], [189, 166, 79], [168, 144, 8]], dtype=float)
MASK_RGB = (213, 94, 0)   # foreground pixels: Okabe-Ito vermilion
MASK_QUANTILE = 0.9   # a fit without a mask of its own: the largest tenth of |S| (all of S when sparser)


def mask_threshold(S, result=None) -> float:
    """The default mask threshold (|S| above it is foreground), one for the L + S view, its
    figure and the video. A streaming fit (online RPCA) chose its own, which its summary
    reports and its stored masks used: that one. Otherwise it is relative to S itself, the 90th
    percentile of |S| (a tenth of the data's range lay above every |S| of some tables: an
    empty mask)."""
    stream = getattr(result, "stream", None)
    if stream is not None:
        return float(stream.mask_threshold)
    a = np.abs(np.asarray(S, dtype=float)).ravel()
    if a.size == 0:
        return 0.0
    if a.size > 1_000_000:   # a quantile of a sample is as good, and a video's S is large
        a = a[:: a.size // 1_000_000 + 1]
    return float(np.quantile(a, MASK_QUANTILE))


@lru_cache(maxsize=4)
def diverging_lut(n: int = 256) -> np.ndarray:
    """(n, 3) uint8 lookup table of the diverging map, negative to positive."""
    t = np.linspace(0.0, 1.0, n)
    knots = np.linspace(0.0, 1.0, len(_CBD1))
    lut = np.stack([np.interp(t, knots, _CBD1[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)
    lut.setflags(write=False)  # shared by every caller
    return lut


def to_gray(values, levels) -> np.ndarray:
    """uint8 grey levels of ``values`` between ``levels = (lo, hi)``."""
    lo, hi = levels
    span = hi - lo if hi > lo else 1.0
    return (np.clip((np.asarray(values, dtype=float) - lo) / span, 0.0, 1.0) * 255).round().astype(np.uint8)


def to_diverging(values, limit: float) -> np.ndarray:
    """(..., 3) uint8 colours of signed ``values`` in [-limit, limit] (0 is the middle grey)."""
    lut = diverging_lut()
    z = np.clip(np.asarray(values, dtype=float) / (limit if limit > 0 else 1.0), -1.0, 1.0)
    return lut[((z + 1.0) / 2.0 * (len(lut) - 1)).round().astype(np.int64)]


def mask_overlay(values, levels, mask) -> np.ndarray:
    """(..., 3) uint8: the frame in faded grey with the mask's pixels in a strong colour, so a
    mask of a few pixels reads as a shape on the picture instead of specks on white."""
    g = to_gray(values, levels).astype(float)
    faded = (96 + 0.55 * g).round().astype(np.uint8)
    rgb = np.repeat(faded[..., None], 3, axis=-1)
    rgb[np.asarray(mask, dtype=bool)] = MASK_RGB
    return rgb
