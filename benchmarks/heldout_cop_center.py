"""Coherence Pursuit's ``center`` on the held-out tasks the development study did not see:
``"none"`` (the default, the paper's linear subspace) beside ``"affine"`` (offset-invariant, its
lift and rank rule chosen on the development tables). Reported only; the default was decided
before this ran.

    OPENBLAS_NUM_THREADS=1 python benchmarks/heldout_cop_center.py [seed ...]

Prints, per collection (tables: cardio, shuttle, a8a +/-; images: USPS and MNIST one-vs-rest),
the mean ROC-AUC and average precision of ``-score_samples`` and the share of known inliers
``predict()`` flags (stated rate 1 %).
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._bench import conditions  # noqa: E402
from benchmarks._outlier_data import evaluation  # noqa: E402

CENTERS = ("none", "affine")


def main(seeds=(0,)) -> None:
    from sklearn.metrics import average_precision_score, roc_auc_score

    from robustcore import CoherencePursuit
    print("# Coherence Pursuit's centre on held-out tasks\n")
    print(conditions([f"held-out tasks of benchmarks/_outlier_data.evaluation, seeds {list(seeds)}"]) + "\n")
    rows: dict = {}
    for seed in seeds:
        for name, _family, collection, X, y in evaluation(seed):
            for center in CENTERS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = CoherencePursuit(center=center).fit(X)
                s = -m.score_samples(X)
                flagged = float(np.mean(m.predict(X)[y == 0] == -1))
                rows.setdefault((center, collection), []).append(
                    (roc_auc_score(y, s), average_precision_score(y, s), flagged))
            print(f"  seed {seed} {name}: done", file=sys.stderr, flush=True)
    print("| center | collection | tasks | mean ROC-AUC | mean AP | inliers flagged: median / max | tasks above 3 % |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for (center, coll), v in rows.items():
        a = np.array(v)
        print(f"| {center} | {coll} | {len(v)} | {a[:, 0].mean():.3f} | {a[:, 1].mean():.3f} | "
              f"{np.median(a[:, 2]):.2%} / {np.max(a[:, 2]):.2%} | {int(np.sum(a[:, 2] > 0.03))} |")


if __name__ == "__main__":
    main(tuple(int(s) for s in sys.argv[1:]) or (0,))
