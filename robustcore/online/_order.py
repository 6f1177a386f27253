"""What an online learner's stream of labels says: the class prior seen so far (used to break
exact score ties) and whether the labels arrive sorted by class (long runs of one label).

Labels are class indices 0..k-1 here (binary: 0 = classes_[0], 1 = classes_[1]).
"""
from __future__ import annotations

import numpy as np

__all__ = ["tie_broken_predictions", "label_changes", "looks_sorted", "sorted_labels_message",
           "SORTED_FACTOR", "SORTED_MIN_EXPECTED"]

# Labels "look sorted" when they change label fewer than 1/SORTED_FACTOR times as often as a random
# order of the same labels would, judged once a random order would show at least
# SORTED_MIN_EXPECTED changes. Iris as stored (50 + 50 + 50, sorted) has 2 changes where a random
# order has 100 on average; a shuffled stream stays close to its expectation (the standard
# deviation is below its square root).
SORTED_FACTOR = 4.0
SORTED_MIN_EXPECTED = 8.0


def tie_broken_predictions(scores: np.ndarray, start_counts: np.ndarray, idx: np.ndarray | None
                           ) -> np.ndarray:
    """Predicted class index of each row; an exact tie goes to the class seen most so far.

    Parameters
    ----------
    scores : (n,) binary scores (positive means class 1) or (n, k) per-class scores.
    start_counts : (k,) class counts seen before the first row (k = 2 for binary).
    idx : (n,) true class index of each row, revealed after its prediction (so row t's tie is
        broken by the counts of rows < t), or None to use ``start_counts`` for every row (a
        fitted model predicting new data).

    Among tied classes the one with the larger count wins, and then the lower index (which for
    two classes is scikit-learn's choice for a zero score, classes_[0]).
    """
    scores = np.asarray(scores, dtype=np.float64)
    binary = scores.ndim == 1
    S = np.column_stack([-scores, scores]) if binary else scores
    n, k = S.shape
    best = S.max(axis=1, initial=-np.inf) if n else np.zeros(0)
    pred = np.argmax(S, axis=1)
    tied = np.flatnonzero((S == best[:, None]).sum(axis=1) > 1)
    if tied.size == 0:
        return pred
    counts = np.empty((tied.size, k), dtype=np.float64)
    for c in range(k):
        before = np.full(tied.size, float(start_counts[c]))
        if idx is not None:
            seen = np.cumsum(idx == c)
            before += seen[tied] - (idx[tied] == c)
        counts[:, c] = before
    # only the tied classes compete: the others get -1
    counts[S[tied] != best[tied, None]] = -1.0
    pred[tied] = np.argmax(counts, axis=1)
    return pred


def label_changes(idx: np.ndarray, last: int | None) -> int:
    """How often consecutive labels differ in ``idx``, counting the step from ``last`` (the
    previous batch's final label, None at the start of a stream)."""
    changes = int(np.count_nonzero(idx[1:] != idx[:-1]))
    if last is not None and idx.size and idx[0] != last:
        changes += 1
    return changes


def looks_sorted(changes: int, counts: np.ndarray) -> bool:
    """True when ``changes`` label changes over a stream with class ``counts`` are far fewer than
    a random order gives: E[changes] = (n² - Σ n_c²) / n for a uniform random permutation."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum()
    if n < 2:
        return False
    expected = (n * n - float(np.sum(counts * counts))) / n
    return expected >= SORTED_MIN_EXPECTED and changes * SORTED_FACTOR < expected


def sorted_labels_message(changes: int, counts: np.ndarray, where: str) -> str:
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum()
    expected = (n * n - float(np.sum(counts * counts))) / n
    return (f"the labels {where} arrive in long runs of one class ({changes} label changes in "
            f"{int(n)} samples, where a random order would give about {expected:.0f}): the data "
            f"look sorted by class. An online learner then learns one class at a time and its "
            f"online mistake rate and final model depend on that order; shuffle the samples "
            f"first (fit does with shuffle=True, seeded by random_state)")
