"""Data in: the Dataset type, one loader per file format, and the bundled demos.

``load(path, **options)`` picks the loader from the file's extension, checked against its
content; ``LOADERS[name].options`` declares each loader's options as :class:`~robustcore._params.Param`
(the window builds its forms from them). Every problem is a :class:`LoadError` (a ``ValueError``)
whose message says what is wrong and how to fix it.

Loaders (``LOADERS`` keys): ``csv`` (CSV/TSV/whitespace text, optionally .gz/.bz2/.xz), ``npy``
(.npy/.npz, never unpickled), ``libsvm`` (sparse CSR), ``idx`` (MNIST-style, labels found beside
the images), ``mat`` (MATLAB v5/v7; v7.3 is refused with advice), ``tiff`` (multi-page TIFF via
tifffile) and ``images`` (a folder of images, or one image, via Pillow). Every loader takes
``max_bytes`` and ``max_features`` and refuses, naming the size and the limit, before loading
more than that. What any input may cost (memory, features, decompression, nesting, which paths
may be read) is written down once, in :mod:`robustcore.datasets._limits`; its helpers for
untrusted files (``open_regular``, ``parse_json``, ``side_file``...) are exported here.
Every data set, in memory or opened out of core (:class:`robustcore.bigdata.LazyDataset`), is a
:class:`DatasetLike`: ``is_lazy``, ``kind`` ("table" or "frames"), ``fingerprint()``, ``provenance``.
``demo(name)`` / ``demos()`` give the bundled data sets. ``video`` reads MP4/MOV/AVI/MKV through
PyAV; ``open_video(path)`` opens one lazily, decoding a batch of frames at a time.
"""
import importlib

from ._errors import LoadError
from ._kind import KINDS, DatasetLike, Kind, is_lazy_dataset
from ._limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FEATURES,
    DEFAULT_MEMORY_BUDGET,
    bare_name,
    inside,
    open_regular,
    parse_json,
    read_stream,
    regular_file,
    side_file,
)
from ._npz import read_npz

# The loaders' table (and the video loader with it) is imported on first use: the video reader
# is a frame source of robustcore.bigdata, whose readers use the errors and limits above, and a
# module of either package must be importable without the other's package running first. The
# Dataset type too (it imports scipy.sparse, a second at a window's start): the registry reads
# the data type's declaration (._kind) and the limits when it is imported, nothing more.
_LAZY = {"Dataset": "._dataset", "Provenance": "._dataset", "file_sha256": "._dataset", "demo": "._demos",
         "demos": "._demos", "resources_dir": "._demos", "Loader": "._loader", "LOADERS": "._load",
         "detect_format": "._load", "estimate_memory": "._load", "formats": "._load", "load": "._load",
         "open_video": "._video"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Dataset", "DatasetLike", "Kind", "KINDS", "is_lazy_dataset", "Provenance", "file_sha256", "LoadError",
           "demo", "demos", "resources_dir", "LOADERS", "Loader", "load", "estimate_memory", "formats",
           "detect_format", "DEFAULT_MAX_BYTES", "DEFAULT_MEMORY_BUDGET", "DEFAULT_MAX_FEATURES", "open_regular",
           "regular_file", "read_stream", "parse_json", "bare_name", "inside", "side_file", "read_npz", "open_video"]
