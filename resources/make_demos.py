"""Cut the bundled demo files in this folder from the shared data collection (run by hand).

    python resources/make_demos.py [--source /work/shared/data]

Each demo is one compressed ``.npz`` (``np.savez_compressed``, plain numeric or fixed-width
string arrays only, so it loads with ``allow_pickle=False``). The project never reads the source
collection at run time or in tests; only the files written here are committed. Names, shapes,
labels and descriptions of the demos live in ``robustcore/datasets/_demos.py``; origins, terms and
citations in ``README.md`` next to this script.
"""
from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import hashlib
from pathlib import Path

import numpy as np
import scipy.io as sio

HERE = Path(__file__).resolve().parent


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _save(name: str, **arrays) -> None:
    out = HERE / f"{name}.npz"
    np.savez_compressed(out, **arrays)
    # Reload without pickle to prove the file is safe to open the way the library opens it.
    with np.load(out, allow_pickle=False) as z:
        shapes = {k: z[k].shape for k in z.files}
    print(f"{out.name}: {out.stat().st_size} bytes, {shapes}")


def usps_1_vs_8(src: Path) -> None:
    """All 264 digit-1 images of the USPS test split plus the first 50 digit-8 images (16 % outliers),
    file order kept.

    With all 166 eights (39 %) the eights form a second coherent cluster and Coherence Pursuit's
    most-coherent half is no longer clean; at 50 it selects no eight, which is the regime the
    method is designed for (outliers not in a low-dimensional subspace of their own)."""
    rows, labels, ids = [], [], []
    with bz2.open(src / "usps" / "usps.t.bz2", "rt") as fh:
        for i, line in enumerate(fh):
            parts = line.split()
            digit = int(parts[0]) - 1  # LIBSVM labels are 1..10 for digits 0..9
            if digit not in (1, 8):
                continue
            x = np.zeros(256)
            for tok in parts[1:]:
                k, v = tok.split(":")
                x[int(k) - 1] = float(v)
            rows.append(x)
            labels.append(str(digit))
            ids.append(f"usps.t:{i}")
    X = np.array(rows)
    labels = np.array(labels)
    assert (labels == "1").sum() == 264 and (labels == "8").sum() == 166, "unexpected USPS counts"
    keep = (labels == "1") | (np.cumsum(labels == "8") <= 50)
    X, labels, ids = X[keep], labels[keep], list(np.array(ids)[keep])
    _save("usps-1-vs-8", X=X, labels=labels, sample_ids=np.array(ids))


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def mnist_3000(src: Path) -> None:
    images = _idx(src / "mnist" / "train-images-idx3-ubyte.gz")[:3000]
    labels = _idx(src / "mnist" / "train-labels-idx1-ubyte.gz")[:3000]
    _save("mnist-3000", X=images.reshape(3000, 784), labels=labels.astype(np.uint8))


def escalator(src: Path) -> None:
    m = sio.loadmat(src / "video" / "escalator_data.mat")
    cols = m["X"]  # 20800 x 200, one column-major 130 x 160 frame per column
    h, w = int(m["m"][0, 0]), int(m["n"][0, 0])
    frames = np.stack([cols[:, k].reshape(w, h).T.ravel() for k in range(cols.shape[1])])
    assert frames.shape == (200, h * w) and frames.dtype == np.uint8
    _save("escalator", X=frames, image_shape=np.array([h, w]))


def iris(src: Path) -> None:
    with open(src / "iris" / "iris.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    X = np.array([[float(v) for v in r[:4]] for r in body])
    species = np.array([r[4] for r in body])
    _save("iris", X=X, labels=species, feature_names=np.array(header[:4]))


def cardio(src: Path) -> None:
    m = sio.loadmat(src / "odds" / "cardio.mat")
    y = m["y"].ravel()
    assert set(np.unique(y)) <= {0.0, 1.0}
    _save("cardio", X=m["X"].astype(np.float64), y=y.astype(np.uint8))


def internetads_200(src: Path) -> None:
    """Test data, not a demo: 200 rows of ADBench's InternetAds (1555 binary features, 0.85 % of
    entries nonzero), drawn with numpy's default_rng(1). PCP with its defaults puts all of it
    into S (rank of L 0 after one iteration), the degenerate result of issue 23 on w8a."""
    z = np.load(src / "adbench_dev" / "17_InternetAds.npz", allow_pickle=False)
    X, y = z["X"], z["y"]
    assert set(np.unique(X)) <= {0.0, 1.0}
    idx = np.random.default_rng(1).choice(X.shape[0], 200, replace=False)
    _save("internetads-200", X=X[idx].astype(np.uint8), y=y[idx].astype(np.uint8), rows=idx.astype(np.int64))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=Path("/work/shared/data"))
    src = ap.parse_args().source
    for make in (usps_1_vs_8, mnist_3000, escalator, iris, cardio, internetads_200):
        make(src)
    total = sum(p.stat().st_size for p in HERE.iterdir() if p.is_file())
    print(f"resources/ total: {total} bytes")
    for p in sorted(HERE.glob("*.npz")):
        print(f"  {p.name} sha256 {_sha256(p)}")


if __name__ == "__main__":
    main()
