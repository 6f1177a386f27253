"""The two collections of the outlier protocol (benchmarks/results_outliers.md, "Protocol").

``development()`` -- the 15 adbench_dev tables, where defaults and the flag rule are chosen.
``evaluation(seed)`` -- the held-out tasks, where they are only judged: ODDS cardio and shuttle,
a8a in both directions, USPS and MNIST one digit against the rest. Each task is
``(name, family, collection, X, y)`` with y = 1 for a known outlier. Read from
``../shared/data`` (RSS_SHARED_DATA), never shipped.
"""
from __future__ import annotations

import glob
import gzip
import os
import re

import numpy as np

SHARED = os.environ.get("RSS_SHARED_DATA", "/work/shared/data")
# Outliers drawn for the derived tasks: 10 % of the task.
OUT_FRAC = 0.1
SEEDS = (0, 1, 2)


def development():
    """[(name, family, "dev", X, y)] for the 15 adbench_dev tables, as given."""
    out = []
    for path in sorted(glob.glob(f"{SHARED}/adbench_dev/*.npz"),
                       key=lambda p: int(os.path.basename(p).split("_")[0])):
        z = np.load(path, allow_pickle=False)
        name = re.sub(r"^\d+_", "", os.path.basename(path)[:-4])
        out.append((name, name, "tables", np.asarray(z["X"], float), np.asarray(z["y"]).ravel().astype(int)))
    return out


def _one_vs_rest(X, y, label, seed, max_in):
    """Up to ``max_in`` samples of ``label`` as inliers plus OUT_FRAC outliers from the rest."""
    rng = np.random.default_rng(seed)
    inl = np.flatnonzero(y == label)
    if inl.size > max_in:
        inl = rng.choice(inl, max_in, replace=False)
    n_out = int(round(OUT_FRAC * inl.size / (1 - OUT_FRAC)))
    outl = rng.choice(np.flatnonzero(y != label), n_out, replace=False)
    idx = rng.permutation(np.concatenate([inl, outl]))
    return X[idx], np.isin(idx, outl).astype(int)


def _odds(name):
    import scipy.io as sio
    m = sio.loadmat(f"{SHARED}/odds/{name}.mat")
    return np.asarray(m["X"], float), np.asarray(m["y"]).ravel().astype(int)


_CACHE: dict = {}


def _digits():
    if "digits" not in _CACHE:
        import h5py
        with h5py.File(f"{SHARED}/usps/usps_esl.h5", "r") as h:
            U = np.vstack([h["train"]["data"][:], h["test"]["data"][:]]).astype(float)
            uy = np.concatenate([h["train"]["target"][:], h["test"]["target"][:]]).astype(int)
        with gzip.open(f"{SHARED}/mnist/t10k-images-idx3-ubyte.gz") as f:
            M = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(float)
        with gzip.open(f"{SHARED}/mnist/t10k-labels-idx1-ubyte.gz") as f:
            my = np.frombuffer(f.read(), np.uint8, offset=8).astype(int)
        from sklearn.datasets import load_svmlight_file
        A, ay = load_svmlight_file(f"{SHARED}/libsvm_binary/a8a", n_features=123)
        _CACHE["digits"] = (U, uy, M, my, A.toarray(), ay.astype(int))
    return _CACHE["digits"]


def evaluation(seed):
    """[(name, family, collection, X, y)] for the held-out tasks under ``seed``."""
    U, uy, M, my, A, ay = _digits()
    out = [("cardio", "cardio", "tables", *_odds("cardio")),
           ("shuttle", "shuttle", "tables", *_odds("shuttle")),
           ("a8a-neg", "a8a", "tables", *_one_vs_rest(A, ay, -1, 1000 + seed, 5000)),
           ("a8a-pos", "a8a", "tables", *_one_vs_rest(A, ay, 1, 2000 + seed, 5000))]
    for d in range(10):
        out.append((f"usps-{d}", "usps", "images", *_one_vs_rest(U, uy, d, 3000 + 10 * seed + d, 1000)))
    for d in range(10):
        out.append((f"mnist-{d}", "mnist", "images", *_one_vs_rest(M, my, d, 4000 + 10 * seed + d, 1000)))
    return out
