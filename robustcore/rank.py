"""How many components to keep when the user leaves the rank to the method.

One rule for every method (PCA, SPE/T² scoring, Coherence Pursuit): the elbow of the scree plot
on a log scale. On log eigenvalues, draw the straight line from the largest to the smallest
non-negligible one; the elbow is the eigenvalue lying farthest below that line, where the steep
signal part of the spectrum turns into its flat noise part, and the components BEFORE it are
kept (Cattell's scree test, made objective by the chord construction), refined to the sharpest
drop next to it (:func:`scree_elbow` says why).

Why this rule (benchmarks/results_outliers.md, chosen on the 15 development tables): for PCA no
rule studied beat it (mean ROC-AUC of the outlier score 0.727; broken stick 0.715, Kaiser 0.722,
90 % of the variance 0.720, one more component 0.721, half of min(n, d) 0.725). On planted
subspaces (rank r in noise) it finds r. For a LINEAR fit of uncentred data (Coherence Pursuit
without centring) the data's offset dominates the spectrum and the elbow stops right after it:
:func:`linear_rank` counts the offset and takes the elbow of the rest.

The rank is capped at half of min(n_samples, n_features): a model that keeps nearly every
direction leaves no residual for SPE to measure, the failure of the 90 % rule on standardised data.
"""
from __future__ import annotations

import numpy as np

__all__ = ["scree_elbow", "rank_cap", "linear_rank", "rank_rule"]

# Eigenvalues below this fraction of the largest are rounding (an exactly low-rank matrix).
_NEGLIGIBLE = 1e-10
# Exactly low-rank data whose other eigenvalues all lie within this factor of the largest
# (three decades) have no noise part.
_NOISE_FLOOR = 1e-3


def rank_cap(n_samples: int, n_features: int) -> int:
    """The largest rank an automatic rule may return: half of min(n, d), at least 1."""
    return max(1, min(int(n_samples), int(n_features)) // 2)


def scree_elbow(eigenvalues, max_rank: int | None = None) -> int:
    """Number of leading components before the elbow of the log scree plot.

    Parameters
    ----------
    eigenvalues : array (m,)
        Variances along the principal directions (any order; negatives are treated as 0).
    max_rank : int or None
        Upper bound of the answer (e.g. :func:`rank_cap`); None: half the number of eigenvalues.

    Returns
    -------
    int in [1, max_rank].

    The steps: drop eigenvalues at rounding level (below 1e-10 of the largest). If some were
    dropped, at most ``max_rank`` remain, and those lie within three decades of the largest, the
    data are exactly low-rank with no noise part, and every remaining direction is signal. (A
    table with a few collinear columns also has eigenvalues at rounding level, but keeps more
    than half of its directions, and is treated as any other.) Otherwise the elbow
    is the eigenvalue farthest below the chord of the log scree plot; when the noise
    eigenvalues are spread out (few samples per dimension, a Marchenko-Pastur spectrum) it
    lands a component or two late, so the answer is the sharpest drop (largest ratio of
    consecutive eigenvalues) among the elbow and the two components before it.
    """
    lam = np.sort(np.maximum(np.asarray(eigenvalues, dtype=np.float64).ravel(), 0.0))[::-1]
    cap = max(1, lam.size // 2 if max_rank is None else int(max_rank))
    if lam.size == 0 or not lam[0] > 0:
        return 1
    kept = lam[lam > _NEGLIGIBLE * lam[0]]
    if kept.size < lam.size and kept.size <= cap and kept[-1] > _NOISE_FLOOR * kept[0]:
        return int(kept.size)
    if kept.size < 3:
        return 1
    y = np.log(kept)
    x = np.arange(kept.size)
    below_chord = y[0] + (y[-1] - y[0]) * x / (kept.size - 1) - y
    # The elbow's index is also the number of components before it.
    k = max(int(np.argmax(below_chord)), 1)
    near = np.arange(max(1, k - 2), k + 1)
    k = int(near[np.argmax(kept[near - 1] / kept[near])])
    return int(min(k, cap))


def linear_rank(eigenvalues, max_rank: int | None = None) -> int:
    """Rank of a LINEAR subspace (through the origin, data not centred) fitting data that lie
    near an AFFINE one: one direction for the data's common offset, which dominates the
    uncentred spectrum, plus the elbow of the remaining eigenvalues (:func:`scree_elbow`).

    Why: with the offset's eigenvalue in the log scree plot, the elbow falls right after it and
    the rank comes out as 1, the offset alone: on planted affine subspaces of rank 1 and 2 in 20
    dimensions Coherence Pursuit (``center="none"``) kept 1 component; on 12 of the 15
    development tables too (benchmarks/results_outliers.md). Returns an int in [1, max_rank].
    """
    lam = np.sort(np.maximum(np.asarray(eigenvalues, dtype=np.float64).ravel(), 0.0))[::-1]
    cap = max(1, lam.size // 2 if max_rank is None else int(max_rank))
    # nothing but the offset (beyond rounding): the offset alone
    if cap == 1 or lam.size < 2 or not lam[1] > _NEGLIGIBLE * lam[0]:
        return 1
    return int(min(1 + scree_elbow(lam[1:], cap - 1), cap))


def rank_rule(center):
    """Coherence Pursuit's rank rule for its ``center``: without centring the subspace is linear
    and its first direction carries the inliers' common offset, so :func:`linear_rank` counts
    it apart; centred, the elbow of the scree plot (:func:`scree_elbow`)."""
    return linear_rank if center == "none" else scree_elbow
