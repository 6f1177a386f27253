"""Grayscale image stacks: a folder of image files (Pillow) or a multi-frame TIFF (tifffile).

Why two libraries: Pillow is the standard, well-maintained Python imaging library and reads every
common single-image format (PNG, JPEG, BMP, GIF, TIFF pages); tifffile (by C. Gohlke, maintained
for scientific imaging) reads multi-page, 16-bit, float and BigTIFF stacks with their axis
metadata, which Pillow handles only page by page and not for every bit depth. Both are imported
only when an image is loaded.

Every frame becomes one row, flattened row-major, with ``image_shape = (height, width)``; colour
is converted to luminance 0.299 R + 0.587 G + 0.114 B (ITU-R BT.601) in float64, without rounding.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import os
import re
from pathlib import Path

import numpy as np

from .._params import Param
from ._dataset import Dataset, Provenance
from ._errors import LoadError
from ._limits import LIMIT_OPTIONS, Cost, inside, numbered, regular_file
from ._loader import Loader, _jsonable, folder_sha256

__all__ = ["ImageFolderLoader", "TiffStackLoader", "IMAGE_SUFFIXES"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".pgm", ".ppm", ".pbm", ".webp")
_LUMA = np.array([0.299, 0.587, 0.114])


def _require(module: str, package: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LoadError(f"reading this file needs the {package} package, which is not installed; "
                        f"install it with: pip install {package.lower()}") from None


def _natural_key(p: Path):
    """frame2 before frame10."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)]


def _to_gray(a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype.kind not in "biuf":
        raise LoadError(f"{name}: pixel type {a.dtype} is not supported")
    a = a.astype(np.float64)
    if a.ndim == 3 and a.shape[-1] in (3, 4):
        a = a[..., :3] @ _LUMA
    elif a.ndim == 3 and a.shape[-1] == 2:  # gray + alpha
        a = a[..., 0]
    if a.ndim != 2:
        raise LoadError(f"{name}: an image of shape {a.shape} is not a 2-D grayscale or colour image")
    return a


def _pil_gray(path: Path, size: tuple[int, int] | None = None, first: str = "",
              notes: list | None = None) -> np.ndarray:
    """The image as float64 gray; with ``size`` (height, width), an image of another size is
    refused from its header, before its pixels are decoded. An image file holding several
    frames (animated GIF, multi-page TIFF) gives its first, and a note says so."""
    Image = _require("PIL.Image", "Pillow")
    UnidentifiedImageError = _require("PIL", "Pillow").UnidentifiedImageError
    try:
        with Image.open(path) as im:
            if size is not None and (im.size[1], im.size[0]) != size:
                raise LoadError(f"images differ in size: {path.name} is {im.size[1]}x{im.size[0]} (height x width) "
                                f"but {first} is {size[0]}x{size[1]}; all images of a stack must have the same size")
            frames = getattr(im, "n_frames", 1)
            if frames > 1 and notes is not None:
                notes.append(f"{path.name} holds {frames} frames; only the first was loaded (open a multi-page "
                             f"TIFF with the TIFF loader to get every page)")
            im.seek(0)
            mode = im.mode
            if mode in ("1", "L", "I", "F") or mode.startswith("I;"):
                a = np.asarray(im)
            elif mode in ("LA", "La"):
                a = np.asarray(im.convert("LA"))[..., 0]
            else:
                a = np.asarray(im.convert("RGB"))
    except LoadError:
        raise
    except UnidentifiedImageError:
        raise LoadError(f"{path.name} is not an image Pillow can read; remove it from the folder or convert "
                        f"it to PNG") from None
    except Image.DecompressionBombError as exc:
        raise LoadError(f"{path.name} is too large to decode safely ({exc})") from None
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError, IndexError, TypeError) as exc:
        raise LoadError(f"{path.name} could not be decoded ({type(exc).__name__}: {exc}); it may be "
                        f"truncated or damaged") from None
    return _to_gray(a, path.name)


def _pil_size(path: Path) -> tuple[int, int]:
    Image = _require("PIL.Image", "Pillow")
    try:
        with Image.open(path) as im:
            w, h = im.size
    except Image.DecompressionBombError as exc:
        raise LoadError(f"{path.name} is too large to decode safely ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - Pillow raises many types for unreadable files
        raise LoadError(f"{path.name} is not a readable image ({type(exc).__name__}: {exc})") from None
    return h, w


class ImageFolderLoader(Loader):
    """A folder of same-size images, one per sample, in natural name order (frame2 before frame10).

    If the folder holds no images but sub-folders that do (one per class), the sub-folder names
    become the labels. A single image file loads as one sample.
    """

    name = "images"
    label = "Image folder"
    patterns = ("*.png", "*.jpg", "*.jpeg", "*.bmp", "*.gif", "*.pgm", "*.ppm", "*.webp")
    options = (
        Param("max_samples", int, None, "load only the first this many images", low=1,
              allow_none=True, none_label="all"),
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith((b"\x89PNG", b"\xff\xd8\xff", b"BM", b"GIF8", b"RIFF", b"P2", b"P5", b"P6"))

    def _check_path(self, path) -> Path:
        p = regular_file(path, allow_dir=True)
        if p.is_file() and p.stat().st_size == 0:
            raise LoadError(f"{p} is empty (0 bytes); nothing to load")
        return p.resolve()

    @staticmethod
    def _files(p: Path) -> tuple[list[Path], list[str] | None]:
        if p.is_file():
            return [p], None
        def confined(f: Path) -> Path:
            # By location, as a Zarr store's chunks are: a link is read only when it leads to a
            # file inside the folder.
            if not inside(f, p):
                raise LoadError(f"{f} is a link to {os.path.realpath(f)}, outside the folder {p}; only images "
                                f"inside the folder are read (copy the image in instead of linking it)")
            return f

        def images(d: Path) -> list[Path]:
            return sorted((confined(f) for f in d.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES
                           and not f.name.startswith(".") and f.is_file()), key=_natural_key)
        files = images(p)
        if files:
            return files, None
        files, labels = [], []
        for sub in sorted((confined(d) for d in p.iterdir() if not d.name.startswith(".") and d.is_dir()),
                          key=_natural_key):
            found = images(sub)
            files += found
            labels += [sub.name] * len(found)
        if not files:
            raise LoadError(f"the folder {p} holds no images ({', '.join(IMAGE_SUFFIXES)}), neither directly "
                            f"nor in class sub-folders")
        return files, labels

    def _prepare(self, path: Path, opts: dict):
        files, labels = self._files(path)
        if opts["max_samples"] is not None:
            files = files[: opts["max_samples"]]
            labels = labels[: opts["max_samples"]] if labels else labels
        return files, labels

    def _estimate(self, path: Path, opts: dict, ctx) -> Cost:
        files, _ = ctx
        h, w = _pil_size(files[0])
        return Cost(len(files) * h * w * 8, samples=len(files), features=h * w)

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        files, labels = ctx
        notes: list[str] = []
        first = _pil_gray(files[0], notes=notes)
        h, w = first.shape
        X = np.empty((len(files), h * w))
        X[0] = first.ravel()
        for k, f in enumerate(files[1:], 1):
            X[k] = _pil_gray(f, (h, w), files[0].name, notes).ravel()
        root = path if path.is_dir() else path.parent
        ids = [str(f.relative_to(root)) for f in files]
        return Dataset(X=X, labels=np.array(labels) if labels else None, image_shape=(h, w),
                       frame_order=np.arange(len(files)), sample_ids=ids, feature_names=numbered("p", h * w),
                       warnings=notes[:20] + ([f"... and {len(notes) - 20} more such files"]
                                              if len(notes) > 20 else []))

    def load(self, path, **options) -> Dataset:
        ds = super().load(path, **options)
        if Path(path).is_dir():
            ds.name = Path(path).resolve().name
        return ds

    def _provenance(self, p: Path, opts: dict) -> Provenance:
        if p.is_file():
            return super()._provenance(p, opts)
        files, _ = self._files(p)
        digest, size = folder_sha256(files, p)
        return Provenance(loader=self.name, options=_jsonable(opts), path=str(p), size=size, sha256=digest)


@contextlib.contextmanager
def _quiet_tifffile():
    """tifffile logs its complaints about damaged files; they become one LoadError here instead."""
    log = logging.getLogger("tifffile")
    old = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(old)


# Smallest image file directory: entry count (2), one 12-byte entry, next offset (4).
_IFD_BYTES = 18


class TiffStackLoader(Loader):
    """A (multi-page) TIFF: every 2-D plane is one frame, in file order."""

    name = "tiff"
    label = "TIFF stack"
    patterns = ("*.tif", "*.tiff")
    options = (
        Param("max_samples", int, None, "load only the first this many frames", low=1,
              allow_none=True, none_label="all"),
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")

    @staticmethod
    def _all_series(path: Path) -> list[tuple[tuple, str, np.dtype]]:
        """(shape, axes, dtype) of every image series in the file, in file order."""
        tifffile = _require("tifffile", "tifffile")
        # An image file directory takes at least 18 bytes, so a chain of more pages than that
        # allows loops back on itself (found by the fuzz soak: 6 KB, 300,000 pages a second).
        most = path.stat().st_size // _IFD_BYTES + 1
        try:
            with _quiet_tifffile(), tifffile.TiffFile(path) as tf:
                for count, _ in enumerate(tf.pages, 1):
                    if count > most:
                        raise LoadError(f"{path.name} is damaged: its chain of pages runs past {most:,} pages, more "
                                        f"than a file of its size can hold (the chain loops); copy the file again")
                out = [(tuple(s.shape), s.axes, np.dtype(s.dtype)) for s in tf.series]
        except LoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - tifffile raises many types for damaged files
            raise LoadError(f"{path.name} is not a readable TIFF ({type(exc).__name__}: {exc}); it may be "
                            f"truncated or damaged") from None
        if not out:
            raise LoadError(f"{path.name} holds no image; nothing to load")
        return out

    @staticmethod
    def _frames_shape(shape, axes, name):
        if "Y" not in axes or "X" not in axes:
            raise LoadError(f"{name}: the TIFF's axes {axes!r} have no Y and X (image) axes")
        h, w = shape[axes.index("Y")], shape[axes.index("X")]
        n = int(np.prod([s for s, a in zip(shape, axes) if a not in "YXS"], dtype=np.int64))
        if min(n, h, w) <= 0:
            raise LoadError(f"{name}: the TIFF holds {n} frame(s) of {h}x{w} pixels; nothing to load")
        return n, h, w

    def _plan(self, path: Path):
        """The series whose frames match the first series' frame size, and the rest.

        A file written page by page may hold its frames as several series; all those of the
        first frame's size are loaded, in file order, and any other is named in a warning.
        """
        series = self._all_series(path)
        frame = None
        keep, skip = [], []
        for i, (shape, axes, dtype) in enumerate(series):
            try:
                n, h, w = self._frames_shape(shape, axes, path.name)
            except LoadError:
                if i == 0:
                    raise
                skip.append((shape, "no image axes"))
                continue
            kind = (h, w, shape[axes.index("S")] if "S" in axes else None)
            frame = frame or kind
            if kind == frame:
                keep.append((i, shape, axes, dtype, n))
            else:
                skip.append((shape, f"{h}x{w}"))
        return keep, skip

    def _estimate(self, path: Path, opts: dict, ctx) -> Cost:
        keep, _ = self._plan(path)
        _, shape, axes, _, _ = keep[0]
        _, h, w = self._frames_shape(shape, axes, path.name)
        n = sum(k[4] for k in keep)
        m = n if opts["max_samples"] is None else min(n, opts["max_samples"])
        raw = sum(np.prod(k[1], dtype=np.float64) * k[3].itemsize for k in keep)
        return Cost(int(raw) + m * h * w * 8, samples=m, features=h * w)

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        tifffile = _require("tifffile", "tifffile")
        keep, skip = self._plan(path)
        n_all = sum(k[4] for k in keep)
        m = n_all if opts["max_samples"] is None else min(n_all, opts["max_samples"])
        X = None
        row = 0
        try:
            with _quiet_tifffile(), tifffile.TiffFile(path) as tf:
                for i, shape, axes, _, n in keep:
                    if row >= m:
                        break
                    arr = tf.series[i].asarray()
                    if tuple(arr.shape) != shape:
                        raise LoadError(f"{path.name}: read shape {arr.shape} but the header announced {shape}")
                    # Frames first, then Y, X, then colour samples.
                    order = [j for j, a in enumerate(axes) if a not in "YXS"] + [axes.index("Y"), axes.index("X")]
                    if "S" in axes:
                        order.append(axes.index("S"))
                    _, h, w = self._frames_shape(shape, axes, path.name)
                    arr = np.transpose(arr, order).reshape((n, h, w)
                                                           + ((shape[axes.index("S")],) if "S" in axes else ()))
                    if X is None:
                        X = np.empty((m, h * w))
                    for k in range(min(n, m - row)):
                        X[row] = _to_gray(arr[k], path.name).ravel()
                        row += 1
        except LoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - tifffile raises many types for damaged files
            raise LoadError(f"{path.name} could not be decoded ({type(exc).__name__}: {exc}); it may be "
                            f"truncated or damaged") from None
        if not np.all(np.isfinite(X)):
            i, j = np.argwhere(~np.isfinite(X))[0]
            raise LoadError(f"{path.name}: frame {i} holds a non-finite pixel (index {j})")
        warnings = []
        if skip:
            rest = "; ".join(f"shape {'x'.join(map(str, shape))} ({why})" for shape, why in skip[:5])
            more = f" and {len(skip) - 5} more" if len(skip) > 5 else ""
            warnings.append(f"{path.name} holds pages of different sizes: the {n_all} frame(s) of {h}x{w} pixels were "
                            f"loaded; not loaded: {len(skip)} series of another size: {rest}{more} (every frame of "
                            f"a data set must have the same size: save those pages to a file of their own)")
        return Dataset(X=X, image_shape=(h, w), frame_order=np.arange(m), sample_ids=numbered("frame ", m),
                       feature_names=numbered("p", h * w), warnings=warnings)
