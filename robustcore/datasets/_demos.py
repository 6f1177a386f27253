"""Bundled demo data sets, loadable by name.

Real data sets are compressed ``.npz`` files in the project's ``resources/`` folder (cut from the
original files by ``resources/make_demos.py``; origins, terms and citations in
``resources/README.md``). The two synthetic ones are generated here with a fixed seed, so they
need no file and are identical on every machine.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

import numpy as np

from ._dataset import Dataset, Provenance, file_sha256
from ._errors import LoadError

__all__ = ["demo", "demos", "resources_dir"]

# A checkout keeps resources/ next to the package; an installed copy may point elsewhere.
_ENV_VAR = "ROBUST_STUDIO_RESOURCES"


def resources_dir() -> Path:
    """The folder holding the demo files (``$ROBUST_STUDIO_RESOURCES`` overrides the default)."""
    env = os.environ.get(_ENV_VAR)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "resources"


@dataclass(frozen=True)
class _Demo:
    name: str
    description: str
    build: Callable[[str], Dataset]


def _read(name: str) -> tuple[dict, Path]:
    path = resources_dir() / f"{name}.npz"
    if not path.is_file():
        raise LoadError(f"demo {name!r} needs the file {path}, which is missing; reinstall the package "
                        f"or set {_ENV_VAR} to the folder holding the demo files")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise LoadError(f"demo file {path} is damaged ({exc}); reinstall the package") from None
    return arrays, path


def _provenance(name: str, path: Path | None) -> Provenance:
    if path is None:
        return Provenance(loader="generated", options={}, demo=name)
    return Provenance(loader="demo", options={}, path=str(path), size=path.stat().st_size,
                      sha256=file_sha256(path), demo=name)


def _pixels(d: int) -> list[str]:
    return [f"p{j}" for j in range(d)]


def _usps(name: str) -> Dataset:
    a, path = _read(name)
    labels = a["labels"].astype(str)
    return Dataset(X=a["X"], name=name, labels=labels, class_names=["1", "8"], outliers=labels == "8",
                   feature_names=_pixels(256), sample_ids=a["sample_ids"].astype(str).tolist(),
                   image_shape=(16, 16), provenance=_provenance(name, path),
                   description=DESCRIPTIONS[name] + " Pixel values in [-1, 1]; all 264 ones are "
                   "inliers, the first 50 eights of the file (15.9%) are the ground-truth outliers.")


def _mnist(name: str) -> Dataset:
    a, path = _read(name)
    return Dataset(X=a["X"], name=name, labels=a["labels"].astype(np.int64),
                   class_names=list(range(10)), feature_names=_pixels(784), image_shape=(28, 28),
                   sample_ids=[f"train:{i}" for i in range(a["X"].shape[0])],
                   provenance=_provenance(name, path),
                   description=DESCRIPTIONS[name] + " Pixel values 0-255.")


def _escalator(name: str) -> Dataset:
    a, path = _read(name)
    h, w = (int(v) for v in a["image_shape"])
    n = a["X"].shape[0]
    return Dataset(X=a["X"], name=name, feature_names=_pixels(h * w), image_shape=(h, w),
                   frame_order=np.arange(n), sample_ids=[f"frame {k}" for k in range(n)],
                   provenance=_provenance(name, path),
                   description=DESCRIPTIONS[name] + " Gray levels 0-255, one frame per row.")


def _iris(name: str) -> Dataset:
    a, path = _read(name)
    return Dataset(X=a["X"], name=name, labels=a["labels"].astype(str),
                   class_names=["setosa", "versicolor", "virginica"],
                   feature_names=a["feature_names"].astype(str).tolist(),
                   provenance=_provenance(name, path), description=DESCRIPTIONS[name])


def _cardio(name: str) -> Dataset:
    a, path = _read(name)
    y = a["y"].astype(np.int64)
    labels = np.where(y == 1, "outlier", "inlier")
    return Dataset(X=a["X"], name=name, labels=labels, class_names=["inlier", "outlier"],
                   outliers=y == 1, feature_names=[f"f{j}" for j in range(a["X"].shape[1])],
                   provenance=_provenance(name, path),
                   description=DESCRIPTIONS[name] + " 176 of 1831 records (9.6%) are outliers; the "
                   "21 features are standardised.")


# Fixed seeds: a generated demo must be the same data on every machine and every run.
_CLUSTERS_SEED = 20170806
_GAUSSIAN_SEED = 20121201


def _clusters(name: str) -> Dataset:
    rng = np.random.default_rng(_CLUSTERS_SEED)
    centres = np.array([[2.0, -1.0, 0.0], [-2.0, 1.0, 0.0]])
    X = np.vstack([c + rng.standard_normal((100, 3)) for c in centres])
    labels = np.repeat(np.array([0, 1]), 100)
    return Dataset(X=X, name=name, labels=labels, class_names=[0, 1], feature_names=["x", "y", "z"],
                   provenance=_provenance(name, None),
                   description=DESCRIPTIONS[name] + f" Generated with seed {_CLUSTERS_SEED}.")


def _gaussian(name: str) -> Dataset:
    rng = np.random.default_rng(_GAUSSIAN_SEED)
    mean = np.array([3.0, 10.0])
    cov = np.array([[8.0, 4.0], [4.0, 7.0]])
    X = mean + rng.standard_normal((1000, 2)) @ np.linalg.cholesky(cov).T
    return Dataset(X=X, name=name, feature_names=["x1", "x2"], provenance=_provenance(name, None),
                   description=DESCRIPTIONS[name] + f" Generated with seed {_GAUSSIAN_SEED}.")


DESCRIPTIONS = {
    "usps-1-vs-8": "USPS handwritten 1s (16x16) with 8s mixed in as outliers: robust subspace recovery.",
    "mnist-3000": "The first 3000 MNIST training digits (28x28): PCP low-rank + sparse on images.",
    "escalator": "200 frames of an escalator video (130x160): PCP background/foreground separation.",
    "iris": "Fisher's iris flowers, 150 x 4, three species: classification and scatter plots.",
    "cardio": "Cardiotocography records with labelled outliers (ODDS), 1831 x 21: anomaly scoring.",
    "clusters-3d": "Two Gaussian clusters in 3-D, 100 points each: eigenvalue-sensitive feature selection.",
    "gaussian-2d": "A correlated 2-D Gaussian, 1000 points: reconstruction-error contours.",
}

_BUILDERS = {
    "usps-1-vs-8": _usps, "mnist-3000": _mnist, "escalator": _escalator, "iris": _iris,
    "cardio": _cardio, "clusters-3d": _clusters, "gaussian-2d": _gaussian,
}


def demos() -> dict[str, str]:
    """Names of the bundled demos (in menu order) mapped to a one-line description."""
    return dict(DESCRIPTIONS)


def demo(name: str) -> Dataset:
    """Load a bundled demo by name (see :func:`demos`).

    Returns a :class:`Dataset` whose ``provenance.demo`` is ``name``; for file-backed demos the
    provenance also holds the resource file's path, size and sha256.

    Raises
    ------
    LoadError
        For an unknown name (the message lists the valid ones) or a missing/damaged resource file.
    """
    build = _BUILDERS.get(name) if isinstance(name, str) else None
    if build is None:
        raise LoadError(f"unknown demo {name!r}; the demos are: {', '.join(DESCRIPTIONS)}")
    return build(name)
