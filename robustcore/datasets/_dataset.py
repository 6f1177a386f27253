"""The one in-memory data set type that loaders produce and every method and view consumes."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, ClassVar
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ._kind import Kind
from ._limits import DEFAULT_MAX_BYTES, check_memory, numbered, open_regular

__all__ = ["Dataset", "Provenance", "file_sha256"]


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """sha256 of a regular file (devices and FIFOs are refused with a LoadError, never read)."""
    h = hashlib.sha256()
    with open_regular(path) as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


@dataclass(frozen=True)
class Provenance:
    """Where a data set came from, enough to find and verify it again.

    ``demo`` is the demo name for bundled data (then ``path`` may be None); ``loader`` the loader's
    name (e.g. ``"csv"``) and ``options`` the loader options that were used. ``sha256`` and
    ``size`` are of the file on disk (or, for a folder of images, of the sorted file list and
    contents). ``details`` holds what the file itself told about the data and is not a loader
    option (a video's frame rate and timestamps).
    """

    loader: str
    options: dict = field(default_factory=dict)
    path: str | None = None
    size: int | None = None
    sha256: str | None = None
    demo: str | None = None
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"loader": self.loader, "options": dict(self.options), "path": self.path,
                "size": self.size, "sha256": self.sha256, "demo": self.demo, "details": dict(self.details)}

    @classmethod
    def from_dict(cls, d: dict) -> Provenance:
        return cls(loader=d["loader"], options=dict(d.get("options") or {}), path=d.get("path"),
                   size=d.get("size"), sha256=d.get("sha256"), demo=d.get("demo"),
                   details=dict(d.get("details") or {}))


@dataclass
class Dataset:
    """A table of samples (rows) by features (columns), with what the views need to draw it.

    Attributes
    ----------
    X : (n, d) float64 ndarray, or a scipy.sparse CSR matrix for sparse formats (LIBSVM).
    labels : (n,) array of any dtype, or None. ``class_names`` lists the distinct labels in a
        stable order (what legends show).
    outliers : (n,) bool ground truth "is an outlier", when the data set has one (demos do).
    outliers_from : where ``outliers`` came from when a loader recognised them, e.g.
        ``"y: 1 = outlier"`` (a 0/1 labels variable) or ``"label = 1"`` (the ``outlier_label``
        option); None for demos and data made in memory.
    feature_names, sample_ids : d names and n ids (strings). Left out, they are made on demand
        (``x0, x1, ...`` and ``0, 1, ...``), so a very wide data set holds no string per column.
    image_shape : (height, width) when each row is a row-major image, else None.
    frame_order : (n,) int, the time order of frames for video, else None.
    warnings : what the loader could not take in as it was (pages of another size, a labels
        array of the wrong length...): shown in the Data panel and by the command line.

    A :class:`~robustcore.datasets.DatasetLike` with its rows in memory (``is_lazy`` False).
    """

    is_lazy: ClassVar[bool] = False

    X: Any
    name: str = "data"
    labels: np.ndarray | None = None
    class_names: list | None = None
    outliers: np.ndarray | None = None
    feature_names: list[str] | None = None
    sample_ids: list[str] | None = None
    image_shape: tuple[int, int] | None = None
    frame_order: np.ndarray | None = None
    description: str = ""
    provenance: Provenance = field(default_factory=lambda: Provenance(loader="memory"))
    warnings: list = field(default_factory=list)
    outliers_from: str | None = None

    def __post_init__(self):
        if sp.issparse(self.X):
            self.X = sp.csr_matrix(self.X, dtype=np.float64)
        else:
            self.X = np.asarray(self.X, dtype=np.float64)
            if self.X.ndim != 2:
                raise ValueError(f"Dataset X must be 2-D (samples x features); got shape {self.X.shape}")
        n, d = self.X.shape
        if self.feature_names is None:
            self.feature_names = numbered("x", d)
        elif len(self.feature_names) != d:
            raise ValueError(f"Dataset has {d} features but {len(self.feature_names)} feature names")
        if self.sample_ids is None:
            self.sample_ids = numbered("", n)
        elif len(self.sample_ids) != n:
            raise ValueError(f"Dataset has {n} samples but {len(self.sample_ids)} sample ids")
        if self.labels is not None:
            self.labels = np.asarray(self.labels)
            if self.labels.shape != (n,):
                raise ValueError(f"Dataset labels must have shape ({n},); got {self.labels.shape}")
            if self.class_names is None:
                self.class_names = sorted(np.unique(self.labels).tolist(), key=lambda v: (str(type(v)), v))
        if self.outliers is not None:
            self.outliers = np.asarray(self.outliers, dtype=bool)
            if self.outliers.shape != (n,):
                raise ValueError(f"Dataset outliers must have shape ({n},); got {self.outliers.shape}")
        if self.image_shape is not None:
            h, w = (int(v) for v in self.image_shape)
            if h * w != d:
                raise ValueError(f"image_shape {h}x{w} does not match {d} features per sample")
            self.image_shape = (h, w)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def is_image(self) -> bool:
        return self.image_shape is not None

    @property
    def kind(self) -> Kind:
        return "frames" if self.is_image else "table"

    def dense(self, max_bytes: int | None = None) -> np.ndarray:
        """X as a dense array.

        A sparse ``X`` is densified only if the result fits in ``max_bytes`` (default: the
        loaders' limit, 4 GiB); otherwise :class:`~robustcore.datasets.LoadError` (a ValueError)
        names the size and the limit.
        """
        if not sp.issparse(self.X):
            return self.X
        n, d = self.X.shape
        check_memory(n * d * 8, DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes),
                     f"a dense copy of the {n} x {d} sparse data set '{self.name}'",
                     "use a method that accepts sparse data")
        return self.X.toarray()

    def summary(self) -> dict:
        """What the dataset panel and logs show."""
        out = {"name": self.name, "samples": self.n_samples, "features": self.n_features,
               "sparse": self.is_sparse}
        if self.labels is not None:
            out["classes"] = len(self.class_names or [])
        if self.outliers is not None:
            out["known outliers"] = int(self.outliers.sum())
            if self.outliers_from:
                out["known outliers from"] = self.outliers_from
        if self.image_shape is not None:
            out["image shape"] = f"{self.image_shape[0]} x {self.image_shape[1]}"
        p = self.provenance
        out["source"] = p.demo and f"demo '{p.demo}'" or p.path or p.loader
        if p.sha256:
            out["sha256"] = p.sha256[:12] + "…"
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def fingerprint(self) -> str:
        """Identity of the data for tagging results (file hash when known, else content hash)."""
        p = self.provenance
        if p.sha256:
            return p.sha256
        h = hashlib.sha256()
        if sp.issparse(self.X):
            for a in (self.X.data, self.X.indices, self.X.indptr):
                h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(np.ascontiguousarray(self.X).tobytes())
        h.update(str(self.X.shape).encode())
        return h.hexdigest()

    def select_features(self, idx: Sequence[int]) -> Dataset:
        idx = list(idx)
        X = self.X[:, idx]
        return Dataset(X=X, name=self.name, labels=self.labels, class_names=self.class_names,
                       outliers=self.outliers, feature_names=[self.feature_names[i] for i in idx],
                       sample_ids=self.sample_ids, description=self.description,
                       provenance=self.provenance, warnings=list(self.warnings),
                       outliers_from=self.outliers_from)
