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
``demo(name)`` / ``demos()`` give the bundled data sets. ``video`` reads MP4/MOV/AVI/MKV through
PyAV; ``open_video(path)`` opens one lazily, decoding a batch of frames at a time.
"""
from ._dataset import Dataset, Provenance, file_sha256
from ._demos import demo, demos, resources_dir
from ._errors import LoadError
from ._limits import (DEFAULT_MAX_BYTES, DEFAULT_MAX_FEATURES, bare_name, inside, open_regular, parse_json,
                      read_stream, regular_file, side_file)
from ._load import LOADERS, detect_format, estimate_memory, formats, load
from ._loader import Loader
from ._npz import read_npz
from ._video import open_video

__all__ = ["Dataset", "Provenance", "file_sha256", "LoadError", "demo", "demos", "resources_dir",
           "LOADERS", "Loader", "load", "estimate_memory", "formats", "detect_format", "DEFAULT_MAX_BYTES",
           "DEFAULT_MAX_FEATURES", "open_regular", "regular_file", "read_stream", "parse_json", "bare_name",
           "inside", "side_file", "read_npz", "open_video"]
