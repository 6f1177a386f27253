"""Problem generators and loaders for bench_pcp.py (reads /work/shared/data; run by hand only)."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

DATA = Path("/work/shared/data")


def table1(n, rank, frac, seed=0):
    """Candès et al. 2011 Table I: L0 = X Y^T with N(0, 1/n) entries, +-1 errors on a uniform support."""
    rng = np.random.default_rng(seed)
    L0 = rng.normal(0, np.sqrt(1 / n), (n, rank)) @ rng.normal(0, np.sqrt(1 / n), (n, rank)).T
    k = int(round(frac * n * n))
    S0 = np.zeros(n * n)
    S0[rng.choice(n * n, k, replace=False)] = rng.choice([-1.0, 1.0], k)
    return L0, S0.reshape(n, n)


def mnist(count=3000):
    """First ``count`` MNIST training images as rows, scaled to [0, 1]."""
    with gzip.open(DATA / "mnist" / "train-images-idx3-ubyte.gz", "rb") as fh:
        raw = fh.read()
    magic, n, h, w = np.frombuffer(raw[:16], dtype=">u4")
    assert magic == 2051
    imgs = np.frombuffer(raw, dtype=np.uint8, offset=16, count=count * h * w)
    return imgs.reshape(count, h * w).astype(np.float64) / 255.0


def escalator():
    """Escalator video as samples-as-rows: 200 frames x 20800 pixels, scaled to [0, 1]."""
    from scipy.io import loadmat
    X = loadmat(str(DATA / "video" / "escalator_data.mat"))["X"]
    return np.ascontiguousarray(X.T, dtype=np.float64) / 255.0
