"""Does refinement help Coherence Pursuit on real, noisy data?  Run by hand:

    python benchmarks/usps_refinement.py [path/to/usps.t.bz2]

USPS test split (LIBSVM usps.t.bz2, 2007 x 256): digit 1 (label 2, 264 samples) are the inliers,
digit 8 (label 9, 166 samples) the outliers. In each of several random splits, 100 of the 1s are
held out; the training set is the other 164 1s plus the 8s. For each rank r we compare the mean
held-out reconstruction error |x - mean - projection|² of the 1s under:

  oracle      PCA of the training 1s alone (the best one can do)
  CoP         Coherence Pursuit keeping the most coherent half of the training 1s (82 samples)
  CoP+refine  the same with refine=True (PCA of the un-normalised samples near the CoP subspace)
  CoP+norm    variant: the refined set, but the subspace from its NORMALISED rows at the median
  PCA all     PCA of the whole training set (1s and 8s)

and report how many 8s each selects and the share of the CoP-to-oracle gap that refinement closes.
Two contamination levels: all 166 8s (about 50 % outliers) and 40 8s (about 20 %).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from robustcore.subspace.coherence_pursuit import CoherencePursuit  # noqa: E402
from robustcore.subspace.pca import PCA  # noqa: E402

DEFAULT = "/work/shared/data/usps/usps.t.bz2"


def load(path):
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(path, n_features=256)
    return np.asarray(X.todense()), y.astype(int)


def heldout_error(mean, comps, H):
    Z = H - mean
    E = Z - (Z @ comps.T) @ comps
    return float(np.mean(np.einsum("ij,ij->i", E, E)))


def normalised_subspace(X, idx, centre, r):
    Z = X[idx] - centre
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    return np.linalg.svd(Z, full_matrices=False)[2][:r]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    X, y = load(path)
    ones, eights = X[y == 2], X[y == 9]
    print(f"USPS test split: {len(ones)} ones, {len(eights)} eights, d = {X.shape[1]}")
    ranks = (1, 2, 3, 5, 10)
    n_splits = 10
    for n8 in (len(eights), 40):
        print(f"\n### {n8} eights as outliers ({n8 / (n8 + len(ones) - 100):.0%} of the training set), "
              f"mean over {n_splits} splits")
        print("| r | oracle | CoP | CoP+refine | CoP+norm | PCA all | 8s in CoP | 8s in refine | 1s kept "
              "by refine (of 164) | gap closed |")
        print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in ranks:
            acc = {k: [] for k in ("oracle", "cop", "ref", "norm", "pca", "e_cop", "e_ref", "kept1", "closed")}
            for split in range(n_splits):
                rng = np.random.default_rng(split)
                perm = rng.permutation(len(ones))
                H, T1 = ones[perm[:100]], ones[perm[100:]]
                E8 = eights[rng.permutation(len(eights))[:n8]]
                Xtr = np.vstack([T1, E8])
                n1 = len(T1)
                is8 = np.arange(len(Xtr)) >= n1
                orc = PCA(n_components=r).fit(T1)
                cop = CoherencePursuit(n_components=r, n_inliers=n1 // 2).fit(Xtr)
                ref = CoherencePursuit(n_components=r, n_inliers=n1 // 2, refine=True).fit(Xtr)
                pca = PCA(n_components=r).fit(Xtr)
                centre = np.median(Xtr, axis=0)
                nc = normalised_subspace(Xtr, ref.inlier_indices_, centre, r)
                e_or = heldout_error(orc.mean_, orc.components_, H)
                e_cop = heldout_error(cop.mean_, cop.components_, H)
                e_ref = heldout_error(ref.mean_, ref.components_, H)
                acc["oracle"].append(e_or)
                acc["cop"].append(e_cop)
                acc["ref"].append(e_ref)
                acc["norm"].append(heldout_error(centre, nc, H))
                acc["pca"].append(heldout_error(pca.mean_, pca.components_, H))
                acc["e_cop"].append(is8[cop.selected_indices_].sum())
                acc["e_ref"].append(is8[ref.inlier_indices_].sum())
                acc["kept1"].append((~is8[ref.inlier_indices_]).sum())
                acc["closed"].append((e_cop - e_ref) / (e_cop - e_or) if e_cop > e_or else np.nan)
            m = {k: float(np.nanmean(v)) for k, v in acc.items()}
            print(f"| {r} | {m['oracle']:.2f} | {m['cop']:.2f} | {m['ref']:.2f} | {m['norm']:.2f} | "
                  f"{m['pca']:.2f} | {m['e_cop']:.1f} | {m['e_ref']:.1f} | {m['kept1']:.0f} | "
                  f"{m['closed']:.0%} |", flush=True)


if __name__ == "__main__":
    main()
