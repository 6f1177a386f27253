"""The numbers the sample detail view draws for one sample, without Qt: which sample (the
selected one, or the flagged one the result scores highest), its values, its reconstruction (L
of robust PCA), its S part, its residual, its per-feature contributions, where the outlier map
puts it, and the words of its status line.

The same function serves data in memory and data opened out of core. Out of core, the sample is
one row read from the file and its per-row results one row read from their stores: a chunk read
each, so the view runs this on a worker (:class:`app.views.detail.DetailView`). Only choosing the
sample when nothing is selected reads every row's flag and score, a block at a time."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robustcore._progress import Cancelled

from . import _derived as der
from ._common import describe_sample

__all__ = ["SampleNumbers", "sample_numbers", "BLOCK_ROWS"]

#: Rows of flags and scores read at a time when choosing the sample to show (2 MB of scores).
BLOCK_ROWS = 1 << 18


@dataclass
class SampleNumbers:
    i: int
    why: str                     # why this sample: "2 of 5 selected", "nothing selected: ..."
    parts: dict                  # original, reconstruction, part (S or None), residual: (d,) each
    contributions: np.ndarray | None   # e_j² per feature (tables; None for pictures)
    description: str             # describe_sample's words and the outlier map's place


def _default_sample(res, cancelled) -> tuple[int, str]:
    """The flagged sample with the highest score (SPE when the result has it), else the highest
    score, else sample 0. Flags and scores are read a block at a time (stored ones too); the
    first of equal scores wins, as ``np.argmax`` does."""
    flags = res.flags.get("outlier")
    score = "spe" if "spe" in res.sample_scores else res.primary_score
    s = res.sample_scores[score] if score else None
    n = len(flags) if flags is not None else (len(s) if s is not None else 0)
    best_flagged = best_any = None   # (score, index)
    for a in range(0, n, BLOCK_ROWS):
        if cancelled():
            raise Cancelled()
        b = min(a + BLOCK_ROWS, n)
        fb = np.asarray(flags[a:b], dtype=bool) if flags is not None else None
        sb = np.asarray(s[a:b], dtype=float) if s is not None else None
        if fb is not None and fb.any():
            cand = np.flatnonzero(fb)
            k = int(cand[np.argmax(sb[cand])]) if sb is not None else int(cand[0])
            v = sb[k] if sb is not None else -np.inf
            if best_flagged is None or (sb is not None and v > best_flagged[0]):
                best_flagged = (v, a + k)
        if sb is not None and sb.size:
            k = int(np.argmax(sb))
            if best_any is None or sb[k] > best_any[0]:
                best_any = (sb[k], a + k)
    if best_flagged is not None:
        return best_flagged[1], "nothing selected: showing the flagged sample with the highest " + (score or "score")
    if best_any is not None:
        return best_any[1], f"nothing selected: showing the highest {score}"
    return 0, "nothing selected: showing sample 0"


def sample_numbers(res, ds, selection, pos: int, cancelled=lambda: False) -> SampleNumbers:
    """The numbers of the sample at ``pos`` in ``selection`` (or the default sample when nothing
    is selected). ``cancelled()`` True stops the search for the default sample."""
    if len(selection):
        i, why = int(selection[pos]), f"{pos + 1} of {len(selection)} selected"
    else:
        i, why = _default_sample(res, cancelled)
    x = der.dense_rows(ds, [i])[0]   # only the row shown: of sparse data, or from the file
    recon = der.reconstruction(res, ds, [i])[0]
    is_pcp = "sparse" in res.arrays
    s_part = der.rows_of(res.arrays["sparse"], [i])[0] if is_pcp else None
    resid = x - recon - (s_part if is_pcp else 0.0)
    contrib = None if ds.is_image else der.contributions(res, ds, i)
    place = der.map_place(res, i)   # the region the outlier map puts it in (ROBPCA's diagnostic)
    # one row of each score and of the flags: stored ones are not read whole
    words = describe_sample(ds, i, res, res.flags.get("outlier"))
    return SampleNumbers(i, why, {"original": x, "reconstruction": recon, "part": s_part, "residual": resid},
                         contrib, words + (f" · {place}" if place else ""))
