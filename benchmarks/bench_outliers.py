"""Outlier detection with DEFAULTS ONLY on real tables with known outliers, next to the tools a user
would otherwise reach for (scikit-learn's IsolationForest and LocalOutlierFactor).

    python benchmarks/bench_outliers.py            # every table, markdown tables on stdout
    python benchmarks/bench_outliers.py --quick    # one table per family

Tables (built from ../shared/data, never shipped): ODDS cardio and shuttle (X plus a 0/1 y);
USPS (official test split) and MNIST (t10k) one digit against the rest, 10 % outliers drawn at
random from the other digits; a8a (Adult) with the -1 class as inliers and 10 % of +1; iris with
two species as inliers and 10 samples of the third as outliers. The tabular ones come again with
every column in random units (x 10^U(-2, 2)), the situation of a table with mixed units, which
scale-sensitive methods must survive. Every robustcore estimator is used as a script user would:
``Estimator().fit(X)``, then ``-score_samples(X)`` (scikit-learn's convention: higher = more
normal) is evaluated with robustcore.evaluation.
"""
from __future__ import annotations

import argparse
import collections
import csv
import gzip
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._bench import conditions  # noqa: E402
from robustcore.evaluation import outlier_metrics  # noqa: E402

SHARED = os.environ.get("RSS_SHARED_DATA", "/work/shared/data")


# -- tables ---------------------------------------------------------------------------------------

def _odds(name):
    import scipy.io as sio
    m = sio.loadmat(f"{SHARED}/odds/{name}.mat")
    return np.asarray(m["X"], float), np.asarray(m["y"]).ravel().astype(int)


def _one_vs_rest(X, y, digit, frac, seed, max_in=None):
    rng = np.random.default_rng(seed)
    inl = np.flatnonzero(y == digit)
    if max_in and inl.size > max_in:
        inl = rng.choice(inl, max_in, replace=False)
    out = rng.choice(np.flatnonzero(y != digit), int(round(frac * inl.size / (1 - frac))), replace=False)
    idx = rng.permutation(np.concatenate([inl, out]))
    return X[idx], np.isin(idx, out).astype(int)


def tables(quick=False, frac=0.1):
    from sklearn.datasets import load_svmlight_file
    out = {"cardio": _odds("cardio"), "shuttle": _odds("shuttle")}
    X, y = load_svmlight_file(f"{SHARED}/usps/usps.t.bz2", n_features=256)
    X, y = X.toarray(), y.astype(int) - 1
    for d in ([2] if quick else range(10)):
        out[f"usps-{d}"] = _one_vs_rest(X, y, d, frac, 100 + d)
    with gzip.open(f"{SHARED}/mnist/t10k-images-idx3-ubyte.gz") as f:
        M = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(float)
    with gzip.open(f"{SHARED}/mnist/t10k-labels-idx1-ubyte.gz") as f:
        ML = np.frombuffer(f.read(), np.uint8, offset=8).astype(int)
    for d in ([5] if quick else range(10)):
        out[f"mnist-{d}"] = _one_vs_rest(M, ML, d, frac, 200 + d)
    A, ay = load_svmlight_file(f"{SHARED}/libsvm_binary/a8a", n_features=123)
    out["a8a"] = _one_vs_rest(A.toarray(), (ay < 0).astype(int), 1, frac, 300, max_in=5000)
    rows = list(csv.reader(open(f"{SHARED}/iris/iris.csv")))[1:]
    I = np.array([[float(v) for v in r[:4]] for r in rows])
    species = np.array([r[4] for r in rows])
    for k, s in enumerate(np.unique(species)):
        rng = np.random.default_rng(400 + k)
        inl = np.flatnonzero(species != s)
        outl = rng.choice(np.flatnonzero(species == s), 10, replace=False)
        idx = rng.permutation(np.concatenate([inl, outl]))
        out[f"iris-{s}"] = (I[idx], np.isin(idx, outl).astype(int))
    units = np.random.default_rng(7)
    for name in ("cardio", "shuttle", "a8a", "iris-setosa", "iris-versicolor", "iris-virginica"):
        X, y = out[name]
        out[name + "~units"] = (X * 10 ** units.uniform(-2, 2, X.shape[1]), y)
    return out


def family(name):
    base = name.split("~")[0].split("-")[0]
    return base + (" (units)" if "~" in name else "")


# -- detectors ------------------------------------------------------------------------------------

def detectors():
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor

    import robustcore as rc

    def sk_iforest(X):
        return -IsolationForest(random_state=0).fit(X).score_samples(X)

    def sk_lof(X):
        return -LocalOutlierFactor().fit(X).negative_outlier_factor_

    def ours(cls):
        def run(X):
            return -cls().fit(X).score_samples(X)
        return run

    return {"IsolationForest": sk_iforest, "LocalOutlierFactor": sk_lof,
            "PCA": ours(rc.PCA), "CoherencePursuit": ours(rc.CoherencePursuit),
            "ResidualScorer": ours(rc.ResidualScorer), "PCP": ours(rc.PCP)}


# -- report ---------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one table per family")
    args = ap.parse_args(argv)
    print(conditions())
    T = tables(args.quick)
    dets = detectors()
    res = {}
    seconds = collections.defaultdict(float)
    for name, (X, y) in T.items():
        res[name] = {}
        for dname, run in dets.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = run(X)
            seconds[dname] += time.perf_counter() - t0
            res[name][dname] = outlier_metrics(y, s)
        print(f"  {name}: " + ", ".join(f"{d} {res[name][d]['roc_auc']:.3f}" for d in dets),
              file=sys.stderr, flush=True)
    names = list(dets)
    print(f"\n{len(T)} tables, {sum(1 for t in T if '~' in t)} of them tabular data in random units.\n")
    print("ROC-AUC per table (known outliers / samples):\n")
    print("| table | outliers | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for t, row in res.items():
        k, n = row[names[0]]["k"], row[names[0]]["n_samples"]
        best = max(row[d]["roc_auc"] for d in names)
        cells = [(f"**{row[d]['roc_auc']:.3f}**" if row[d]["roc_auc"] == best else f"{row[d]['roc_auc']:.3f}")
                 for d in names]
        print(f"| {t} | {k} / {n} | " + " | ".join(cells) + " |")
    fams = collections.OrderedDict()
    for t in res:
        fams.setdefault(family(t), []).append(t)
    print("\nSummary (mean over tables; family mean = mean of the per-family means, so the 10 "
          "digit tables of a family count once):\n")
    print("| detector | mean ROC-AUC | family mean | mean AP | mean precision@k | mean rank | below 0.5 where IsolationForest is above | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    ranks = {d: [] for d in names}
    for t, row in res.items():
        order = sorted(names, key=lambda d: -row[d]["roc_auc"])
        for d in names:
            ranks[d].append(1 + order.index(d))
    for d in names:
        auc = np.array([res[t][d]["roc_auc"] for t in res])
        fam = np.mean([np.mean([res[t][d]["roc_auc"] for t in ts]) for ts in fams.values()])
        ap_ = np.mean([res[t][d]["average_precision"] for t in res])
        pk = np.mean([res[t][d]["precision_at_k"] for t in res])
        below = [t for t in res if res[t][d]["roc_auc"] < 0.5 < res[t]["IsolationForest"]["roc_auc"]]
        print(f"| {d} | {auc.mean():.3f} | {fam:.3f} | {ap_:.3f} | {pk:.3f} | {np.mean(ranks[d]):.2f} | "
              f"{len(below)}{' (' + ', '.join(below) + ')' if below else ''} | {seconds[d]:.1f} |")
    print("\nPer family (mean ROC-AUC):\n")
    print("| family | tables | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for f, ts in fams.items():
        print(f"| {f} | {len(ts)} | " + " | ".join(f"{np.mean([res[t][d]['roc_auc'] for t in ts]):.3f}" for d in names) + " |")


if __name__ == "__main__":
    main()
