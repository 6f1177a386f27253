"""Data sets too large to load: a table on disk or a video, read block by block.

:class:`LazyDataset` stands where a :class:`~robustcore.datasets.Dataset` stands for the methods
that can work out of core (the registry's ``lazy`` adapters): it has the shape, names,
provenance and image layout, but no ``X`` in memory. :func:`open_lazy` opens one from a path.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..datasets._dataset import Provenance
from ..datasets._errors import LoadError, shown
from ..datasets._limits import OUT_OF_CORE_SUFFIXES, numbered
from ._frames import FrameSource

__all__ = ["LazyDataset", "open_lazy", "LAZY_SUFFIXES", "TABLE_OPTIONS", "POLICY_OPTIONS"]

#: Options of a table opened out of core (recorded in its provenance and in sessions).
TABLE_OPTIONS = ("dataset", "chunk_rows", "missing_chunks")
#: Options of the bounded-resource policy: accepted for every source, never recorded.
POLICY_OPTIONS = ("max_features", "max_bytes")


class LazyDataset:
    """A data set whose rows stay on disk.

    ``source`` is a :class:`~robustcore.bigdata.LazyTable` (``kind == "table"``) or a
    :class:`~robustcore.bigdata.FrameSource` (``kind == "frames"``). ``X`` is not available:
    methods that need the data in memory say so, and ``dense()`` loads it when it fits.
    """

    is_lazy = True
    is_sparse = False
    labels = None
    class_names = None
    outliers = None
    frame_order = None
    description = ""

    def __init__(self, source, name: str, provenance: Provenance):
        self.source = source
        self.kind = "frames" if isinstance(source, FrameSource) else "table"
        self.name = name
        self.provenance = provenance
        # Made on demand, as the in-memory loaders do: a store declaring 2**24 columns holds no
        # 2**24 strings here.
        self.feature_names = numbered("p" if self.kind == "frames" else "x", self.n_features)
        self.sample_ids = None
        # What the source could not take in as it was (a video that ends early), as Dataset.warnings.
        self.warnings = [source.note] if getattr(source, "note", None) else []

    @property
    def n_samples(self) -> int:
        return int(self.source.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.source.shape[1])

    @property
    def image_shape(self):
        return self.source.display_shape if self.kind == "frames" else None

    @property
    def is_image(self) -> bool:
        return self.image_shape is not None

    @property
    def nbytes(self) -> int:
        return int(self.source.nbytes)

    @property
    def X(self):
        raise ValueError(f"'{self.name}' is opened out of core ({self.n_samples} x {self.n_features}); "
                         f"this method needs the data in memory. Use a method that runs out of core, "
                         f"or load a part of the data (loader options such as max_samples, start/stop/step)")

    def dense(self, max_bytes: int | None = None):
        """The whole data as a float64 array, when it takes at most ``max_bytes`` (default 4 GiB)."""
        from ..datasets._loader import DEFAULT_MAX_BYTES, check_memory
        check_memory(self.nbytes, DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes),
                     f"loading all of '{self.name}' into memory", "use a method that runs out of core")
        if self.kind == "frames":
            return self.source.read()
        from ._dask import compute
        import numpy as np
        return np.asarray(compute(self.source.array)[0], dtype=np.float64)

    def fingerprint(self) -> str:
        p = self.provenance
        if p.sha256:
            return p.sha256
        return self.source.fingerprint()

    @property
    def content_digest(self) -> str | None:
        """The digest of the whole content once a pass has read it (a video: once opened);
        see :func:`robustcore.bigdata.content_digest`."""
        return getattr(self.source, "content_digest", None)

    def summary(self) -> dict:
        out = {"name": self.name, "samples": self.n_samples, "features": self.n_features,
               "out of core": True}
        out.update(self.source.describe())
        out["source"] = self.provenance.path or self.provenance.loader
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def close(self) -> None:
        if hasattr(self.source, "close"):
            self.source.close()


def _video_suffixes():
    from ..datasets._video import VIDEO_SUFFIXES
    return VIDEO_SUFFIXES


def _table_suffixes():
    from ._tables import TABLE_SUFFIXES
    return TABLE_SUFFIXES


LAZY_SUFFIXES = OUT_OF_CORE_SUFFIXES


def open_lazy(path, **options) -> LazyDataset:
    """Open a table (HDF5, Zarr, .npy) or a video without loading it.

    Options: for tables those of :data:`TABLE_OPTIONS` (``dataset``: the array inside an HDF5
    file or Zarr group; ``chunk_rows``; ``missing_chunks``: "error" or "fill"); for videos those
    of the video loader (``color``, ``start``, ``stop``, ``step``, ``scale``). Every source also
    takes the policy's ``max_features`` and ``max_bytes`` (default: the in-memory loaders'
    feature limit, and the out-of-core memory budget of :func:`robustcore.bigdata.settings`),
    which are not recorded. Raises :class:`~robustcore.datasets.LoadError`.
    """
    from ..datasets._limits import regular_file
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise LoadError(f"path must be a file or folder path; got {shown(path)}") from None
    if not os.path.lexists(p):
        raise LoadError(f"no such file or folder: {p}")
    p = regular_file(p, allow_dir=True)
    policy = {k: options.pop(k) for k in POLICY_OPTIONS if k in options}
    suffix = p.suffix.lower()
    if suffix in _video_suffixes():
        from ..datasets._video import VideoLoader, open_video
        loader = VideoLoader()
        opts = loader.validate(options)
        for k in POLICY_OPTIONS:
            opts.pop(k, None)
        frames = open_video(p, **opts, **policy)
        prov = Provenance(loader="video", options=opts, path=str(p.resolve()), size=p.stat().st_size,
                          details={k: v for k, v in frames.details().items()
                                   if k not in ("timestamps", "frame_indices")})
        return LazyDataset(frames, p.stem, prov)
    if suffix in _table_suffixes() or p.is_dir():
        from ._tables import open_table
        unknown = set(options) - set(TABLE_OPTIONS)
        if unknown:
            raise LoadError(f"unknown option {shown(sorted(unknown)[0])} for an out-of-core table; its options "
                            f"are: {', '.join(TABLE_OPTIONS + POLICY_OPTIONS)}")
        chunk = options.get("chunk_rows")
        try:
            chunk = int(chunk) if chunk is not None else None
        except (TypeError, ValueError, OverflowError):
            raise LoadError(f"chunk_rows must be a whole number of rows; got {shown(chunk)}") from None
        table = open_table(p, dataset=options.get("dataset"), chunk_rows=chunk,
                           missing_chunks=options.get("missing_chunks") or "error", **policy)
        prov = Provenance(loader=table.format, options={k: v for k, v in options.items() if v is not None},
                          path=str(p.resolve()), size=table.disk_bytes)
        return LazyDataset(table, p.stem, prov)
    raise LoadError(f"{p.name}: out-of-core data are HDF5 (.h5, .hdf5), Zarr (.zarr), .npy tables or "
                    f"videos ({', '.join(_video_suffixes())})")
