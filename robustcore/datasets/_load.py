"""Choosing the loader for a path (by extension, checked against the content) and the public
entry points ``load``, ``estimate_memory`` and ``formats``."""
from __future__ import annotations

from pathlib import Path

from .._progress import Cancelled
from ._dataset import Dataset
from ._delimited import DelimitedLoader
from ._errors import LoadError, shown
from ._idx import IdxLoader
from ._images import IMAGE_SUFFIXES, ImageFolderLoader, TiffStackLoader
from ._libsvm import LibsvmLoader
from ._limits import regular_file
from ._loader import COMPRESSED, Loader, read_head
from ._matlab import MatLoader
from ._numpy import NumpyLoader
from ._video import VIDEO_SUFFIXES, VideoLoader

__all__ = ["LOADERS", "load", "estimate_memory", "formats", "detect_format"]

#: name -> loader, in the order the Open dialog lists them.
LOADERS: dict[str, Loader] = {ld.name: ld for ld in (
    DelimitedLoader(), NumpyLoader(), LibsvmLoader(), IdxLoader(), MatLoader(), TiffStackLoader(),
    ImageFolderLoader(), VideoLoader())}

# Content sniffing order: binary signatures first; LIBSVM before CSV since both are text.
_SNIFF_ORDER = ("npy", "mat", "tiff", "video", "images", "idx", "libsvm", "csv")
_BINARY = {"npy", "mat", "tiff", "images", "idx", "video"}

_BY_SUFFIX = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".dat": "csv", ".npy": "npy", ".npz": "npy",
              ".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm", ".mat": "mat",
              ".tif": "tiff", ".tiff": "tiff", ".idx": "idx", ".idx1": "idx", ".idx3": "idx"}
_BY_SUFFIX.update({s: "images" for s in IMAGE_SUFFIXES if s not in (".tif", ".tiff")})
_BY_SUFFIX.update({s: "video" for s in VIDEO_SUFFIXES})


def formats() -> list[tuple[str, list[str]]]:
    """(label, glob patterns) per format, for a file dialog's filter. A folder of images is opened
    by passing the folder's path to :func:`load`."""
    return [(ld.label, list(ld.patterns)) for ld in LOADERS.values()]


def _inner_name(p: Path) -> str:
    name = p.name.lower()
    for suf in COMPRESSED:
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


def _by_extension(p: Path) -> str | None:
    name = _inner_name(p)
    if name.endswith("-ubyte") or "-idx" in name and "ubyte" in name:
        return "idx"
    return _BY_SUFFIX.get(Path(name).suffix)


def _by_content(head: bytes, p: Path) -> str | None:
    return next((n for n in _SNIFF_ORDER if LOADERS[n].sniff(head, p)), None)


def detect_format(path) -> str:
    """The loader name :func:`load` would use for ``path`` (raises LoadError when it cannot tell)."""
    p = regular_file(path, allow_dir=True)
    if p.is_dir():
        return "images"
    if p.stat().st_size == 0:
        raise LoadError(f"{p} is empty (0 bytes); nothing to load")
    ext = _by_extension(p)
    head = read_head(p)
    if not head:
        comp = p.suffix.lower()
        if comp in COMPRESSED:
            raise LoadError(f"{p.name} is not valid {comp.lstrip('.')} data (truncated or corrupted), or is empty "
                            f"once decompressed; copy the file again")
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        raise LoadError(f"{p.name} is an HDF5 file, which this program does not read (h5py is not a "
                        f"dependency); export the arrays to .npz (numpy.savez) or .mat (-v7)")
    content = _by_content(head, p)
    if ext is not None:
        if LOADERS[ext].sniff(head, p):
            if ext == "csv" and content == "libsvm" and _inner_name(p).endswith((".txt", ".dat")):
                return "libsvm"
            return ext
        if content is not None and content != ext and (content in _BINARY or ext in _BINARY):
            raise LoadError(f"{p.name} has the extension of a {LOADERS[ext].label} file but its content looks "
                            f"like {LOADERS[content].label}; rename the file to match its content or pass "
                            f"format={content!r}")
        if ext in _BINARY and content is None and not head.startswith(b"PK"):
            what = "text" if LOADERS["csv"].sniff(head, p) else "unrecognised binary data"
            raise LoadError(f"{p.name} has the extension of a {LOADERS[ext].label} file but holds {what}; "
                            f"check that it is the right file, or pass format=NAME to choose the loader")
        return ext
    if content is not None:
        return content
    names = ", ".join(LOADERS)
    raise LoadError(f"cannot tell the format of {p.name}: neither its extension nor its content is one of "
                    f"the supported formats; pass format=NAME (one of {names})")


def _loader_for(path, fmt: str | None) -> Loader:
    if fmt is None:
        return LOADERS[detect_format(path)]
    if fmt not in LOADERS:
        raise LoadError(f"format must be one of {', '.join(LOADERS)}; got {shown(fmt)}")
    return LOADERS[fmt]


def _guard(fn, path, *args, **kwargs):
    """Any failure leaves as LoadError: a user opening a file gets a message, never a traceback."""
    try:
        return fn(path, *args, **kwargs)
    except LoadError:
        raise
    except MemoryError:
        raise LoadError(f"ran out of memory loading {path}; pass a smaller max_bytes to be warned earlier, "
                        f"or load a subset") from None
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001 -- the contract is "LoadError or a Dataset", always
        raise LoadError(f"could not load {path}: unexpected {type(exc).__name__}: {exc} (please report "
                        f"this file's problem as a bug)") from exc


def load(path, format: str | None = None, **options) -> Dataset:
    """Load a data file (or a folder of images) into a :class:`Dataset`.

    Parameters
    ----------
    path : str or os.PathLike
        A file, or a folder of images. ``.gz``, ``.bz2`` and ``.xz`` text/IDX files are read
        compressed.
    format : str, optional
        Loader name (a key of :data:`LOADERS`); by default chosen from the extension and checked
        against the content (an unknown extension is resolved by content alone).
    **options
        The chosen loader's options (``LOADERS[name].options``), e.g. ``label_column="species"``
        for CSV; every loader takes ``max_bytes`` (default 4 GiB), the memory limit above which it
        refuses to load, and ``max_features`` (default 2**24); see
        :mod:`robustcore.datasets._limits` for the whole bounded-resource policy.

    Returns
    -------
    Dataset
        ``X`` is (n, d) float64, or CSR for LIBSVM/sparse MAT data; ``provenance`` holds the
        absolute path, size, sha256, loader name and the effective options.

    Raises
    ------
    LoadError
        For every problem with the file or the options; the message says what and how to fix it.
    """
    return _guard(lambda p: _loader_for(p, format).load(p, **options), path)


def estimate_memory(path, format: str | None = None, **options) -> int:
    """Bytes the load of ``path`` is expected to need at its peak (``X`` itself for binary
    formats; parsing buffers included for text formats), read from headers where possible."""
    return _guard(lambda p: _loader_for(p, format).estimate_memory(p, **options), path)


