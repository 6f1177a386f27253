"""HDF5 datasets read within the bounded-resource policy (h5py finds the data; decoding is ours).

HDF5 lets a dataset live outside its file: external storage (raw bytes in any file, e.g.
``/etc/passwd``), external links (a dataset of another HDF5 file) and virtual datasets (a view
of other files). None of these is read: the file is opened only after ``stat`` says it is a
regular file, every link on the way to the dataset is checked before it is followed, and a
dataset whose storage is external or virtual is refused, naming what it points to.

HDF5's own filters inflate a chunk as far as its stream goes (a deflate bomb takes gigabytes).
So chunks are read raw (``read_direct_chunk``, after their stored size is checked) and decoded
here to exactly the chunk's declared size: deflate (zlib), shuffle and fletcher32 are
understood; any other filter (szip, lzf, scale-offset, plugins) is refused with the way to
rewrite the file. A chunk that was never written is an error naming it, not the fill value.
Contiguous datasets are read as bytes at their offset in the file, after checking that the file
holds all of them.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..datasets._errors import LoadError, listing, shown
from ..datasets._limits import format_bytes, open_regular, regular_file
from ._bounds import check_chunk
from ._codecs import decode

__all__ = ["H5Reader", "open_h5", "fletcher32"]

_DEFLATE, _SHUFFLE, _FLETCHER = 1, 2, 3
_FILTER_NAMES = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
                 32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32015: "zstd"}
_REWRITE = ("rewrite it with gzip compression, which can be bounded (h5py: f.create_dataset(name, data=X, "
            "compression='gzip'))")
_MAX_LINKS = 16
_COMPACT, _CONTIGUOUS, _CHUNKED, _VIRTUAL = 0, 1, 2, 3


def _h5py():
    try:
        import h5py
    except ImportError:
        raise LoadError("reading HDF5 needs h5py, which is not installed; install the extra: "
                        "pip install -e \".[big]\"") from None
    return h5py


def fletcher32(data) -> int:
    """HDF5's Fletcher-32 checksum of ``data`` (big-endian 16-bit words, sums folded mod 65535).

    The sums never fold to 0 unless they are 0, so each is ``1 + (S - 1) mod 65535`` of its
    unfolded value S (or 0): computed in closed form, without HDF5's loop.
    """
    b = np.frombuffer(bytes(data), np.uint8)
    if b.size % 2:
        b = np.concatenate([b, np.zeros(1, np.uint8)])
    w = (b[0::2].astype(np.uint64) << np.uint64(8)) | b[1::2].astype(np.uint64)
    n = w.size
    if n == 0 or not w.any():
        return 0
    weights = (np.arange(n, 0, -1, dtype=np.uint64)) % np.uint64(65535)
    s1 = int(w.sum(dtype=np.uint64) % np.uint64(65535))
    s2 = int((w * weights).sum(dtype=np.uint64) % np.uint64(65535))
    s1 = 65535 if s1 == 0 else s1
    s2 = 65535 if s2 == 0 else s2
    return (s2 << 16) | s1


def _resolve(f, name: str, label: str, budget: list | None = None) -> str:
    """The hard-link path of ``name`` in ``f``; every link on the way is checked before it is
    followed: external links are refused, soft links resolved, at most ``_MAX_LINKS`` of them in
    all (HDF5's own limit, H5L_NUM_LINKS: a limit on depth alone lets links that name each other
    twice over take exponential time)."""
    h5py = _h5py()
    budget = [_MAX_LINKS] if budget is None else budget
    cur = ""
    for part in (p for p in name.split("/") if p and p != "."):
        path = f"{cur}/{part}"
        link = f.get(path, getlink=True)
        if link is None:
            raise KeyError(path)
        if isinstance(link, h5py.ExternalLink):
            raise LoadError(f"{label}: {shown(path)} is an external link to {shown(link.filename)}:{shown(link.path)}; "
                            f"only data inside the file is read. Copy the data into the file")
        if isinstance(link, h5py.SoftLink):
            budget[0] -= 1
            if budget[0] < 0:
                raise LoadError(f"{label}: reaching it follows more than {_MAX_LINKS} soft links (a loop, or links "
                                f"naming links); name the dataset by its own path")
            target = link.path if link.path.startswith("/") else f"{cur}/{link.path}"
            path = _resolve(f, target, label, budget)
        cur = path
    return cur or "/"


class H5Reader:
    """Rows of one 2-D HDF5 dataset (picklable: the path, the dataset's name and numbers).

    The file is opened per read, after ``stat`` checks it is still a regular file.
    """

    def __init__(self, path: str, name: str, ds):
        self.path, self.name = path, name
        self.label = f"{os.path.basename(path)}:{name}"
        self.shape = tuple(int(v) for v in ds.shape)
        self.dtype = np.dtype(ds.dtype)
        pl = ds.id.get_create_plist()
        self.layout = pl.get_layout()
        if ds.is_virtual or self.layout == _VIRTUAL:
            sources = listing(sorted({f"{s.file_name}:{s.dset_name}" for s in ds.virtual_sources()}))
            raise LoadError(f"{self.label} is a virtual dataset (a view of {sources}); only data inside the file "
                            f"is read. Copy the data into a real dataset")
        if pl.get_external_count():
            files = listing([pl.get_external(i)[0].decode("utf-8", "replace")
                             for i in range(pl.get_external_count())])
            raise LoadError(f"{self.label} keeps its values in other files (HDF5 external storage: {files}); "
                            f"only data inside the file is read. Copy the data into the file")
        if self.dtype.kind not in "biuf" or self.dtype.fields is not None or self.dtype.subdtype is not None:
            raise LoadError(f"{self.label} holds {self.dtype}; a table must hold numbers (bool, int, uint, float)")
        self.filters = [pl.get_filter(i)[:3] for i in range(pl.get_nfilters())]
        self.chunks = tuple(int(v) for v in ds.chunks) if self.layout == _CHUNKED else None
        # Whether the first and the last chunk were written (looked up now: the file is open).
        self.absent = []
        if self.chunks and all(self.shape):
            last = tuple((s - 1) // c * c for s, c in zip(self.shape, self.chunks))
            self.absent = [o for o in dict.fromkeys(((0,) * len(last), last))
                           if ds.id.get_chunk_info_by_coord(o).byte_offset is None]
        self.offset = ds.id.get_offset() if self.layout == _CONTIGUOUS else None
        self.storage = int(ds.id.get_storage_size())
        self.missing = "error"     # or "fill": unwritten chunks read as the fill value
        try:
            self.fill = np.asarray(ds.fillvalue).astype(self.dtype, casting="same_kind").reshape(())[()]
        except (TypeError, ValueError, OverflowError):
            raise LoadError(f"{self.label}: its fill value {shown(ds.fillvalue)} is not a {self.dtype} value; the "
                            f"file is damaged") from None
        self._check_filters()
        self.chunk_bytes = (math.prod(self.chunks) * self.dtype.itemsize if self.chunks
                            else math.prod(self.shape) * self.dtype.itemsize)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _check_filters(self):
        for code, _flags, _cd in self.filters:
            if code not in (_DEFLATE, _SHUFFLE, _FLETCHER):
                name = _FILTER_NAMES.get(code, f"filter {code}")
                raise LoadError(f"{self.label} is encoded with HDF5's {name} filter, which cannot be bounded; "
                                + _REWRITE)
        if sum(code == _DEFLATE for code, _, _ in self.filters) > 1:
            raise LoadError(f"{self.label} is deflated twice; " + _REWRITE)

    def check(self, budget: int) -> None:
        """Refuse before reading when one decoded chunk would take more than ``budget`` bytes, and
        a contiguous dataset that the file does not hold whole (truncated) or that was never written."""
        if self.layout == _CHUNKED:
            check_chunk(self.chunk_bytes, budget, f"one chunk {self.chunks} of {self.label}",
                        "rewrite the file with smaller chunks")
            if self.missing == "error" and self.absent:
                raise self._never_written(self.absent[0])
        elif self.layout == _CONTIGUOUS:
            need = math.prod(self.shape) * self.dtype.itemsize
            if need and self.offset is None:
                raise LoadError(f"{self.label} was never written (HDF5 allocated no storage for it); it holds no data")
            size = os.stat(self.path).st_size
            if need and self.offset + need > size:
                raise LoadError(f"{self.label} is truncated: its {format_bytes(need)} of values end at byte "
                                f"{self.offset + need:,}, the file has {size:,} bytes; copy the file again")

    # -- reading ----------------------------------------------------------------------------
    def read(self, start: int, stop: int) -> np.ndarray:
        n, d = self.shape
        if stop <= start:
            return np.empty((0, d), self.dtype)
        if self.layout == _CONTIGUOUS:
            return self._read_contiguous(start, stop)
        try:
            return self._read_chunked(start, stop)
        except LoadError:
            raise
        except _H5_ERRORS as exc:
            raise _unreadable(self.label, exc) from None

    def _read_chunked(self, start: int, stop: int) -> np.ndarray:
        n, d = self.shape
        h5py = _h5py()
        regular_file(self.path, self.label)
        with h5py.File(self.path, "r") as f:
            ds = f[self.name]
            if self.layout == _COMPACT:
                return np.asarray(ds[start:stop], self.dtype)
            out = np.empty((stop - start, d), self.dtype)
            cr, cc = self.chunks
            for i in range(start // cr, (stop - 1) // cr + 1):
                r0, r1 = max(start, i * cr), min(stop, (i + 1) * cr)
                for j in range(-(-d // cc)):
                    c0, c1 = j * cc, min(d, (j + 1) * cc)
                    chunk = self._chunk(ds, (i * cr, c0))
                    out[r0 - start:r1 - start, c0:c1] = chunk[r0 - i * cr:r1 - i * cr, :c1 - c0]
            return out

    def _read_contiguous(self, start: int, stop: int) -> np.ndarray:
        d = self.shape[1]
        out = np.empty((stop - start, d), self.dtype)
        row = d * self.dtype.itemsize
        with open_regular(self.path, self.label) as fh:
            fh.seek(self.offset + start * row)
            got = fh.readinto(memoryview(out).cast("B"))
        if got != out.nbytes:
            raise LoadError(f"{self.label} is truncated: rows {start}-{stop - 1} end past the end of the file; "
                            f"copy the file again")
        return out

    def _chunk(self, ds, origin: tuple) -> np.ndarray:
        what = f"the chunk at row {origin[0]:,}, column {origin[1]:,} of {self.label}"
        info = ds.id.get_chunk_info_by_coord(origin)
        if info.byte_offset is None:
            if self.missing == "fill":
                return np.full(self.chunks, self.fill, self.dtype)
            raise self._never_written(origin)
        if info.size > 2 * self.chunk_bytes + (1 << 16):
            raise LoadError(f"{what} takes {format_bytes(info.size)} on disk for {format_bytes(self.chunk_bytes)} "
                            f"of values; the file is damaged or hostile")
        mask, data = ds.id.read_direct_chunk(origin)
        return np.frombuffer(self._unfilter(data, mask, what), self.dtype).reshape(self.chunks)

    def _never_written(self, origin: tuple) -> LoadError:
        return LoadError(f"the chunk at row {origin[0]:,}, column {origin[1]:,} of {self.label} was never written "
                         f"(missing); the file is incomplete, or was written leaving chunks to the fill value. Copy "
                         f"or rewrite the file, or open it with missing_chunks='fill'")

    def _unfilter(self, data, mask: int, what: str):
        # Sizes entering each filter when the chunk was written (deflate's output size is unknown,
        # but there is at most one deflate, and only size-known filters come before it).
        sizes = [self.chunk_bytes]
        for k, (code, _, _) in enumerate(self.filters):
            applied = not (mask >> k) & 1
            sizes.append(sizes[-1] + (4 if code == _FLETCHER and applied else 0))
        for k in range(len(self.filters) - 1, -1, -1):
            if (mask >> k) & 1:
                continue
            code, _, cd = self.filters[k]
            if code == _FLETCHER:
                if len(data) < 4:
                    raise LoadError(f"{what} is shorter than its checksum; the file is damaged")
                body, stored = bytes(data[:-4]), int.from_bytes(bytes(data[-4:]), "little")
                sum_ = fletcher32(body)
                swapped = ((sum_ & 0x00ff00ff) << 8) | ((sum_ >> 8) & 0x00ff00ff)
                if stored not in (sum_, swapped):
                    raise LoadError(f"{what} fails its Fletcher-32 checksum; the file is damaged. Copy it again")
                data = body
            elif code == _DEFLATE:
                data = decode("zlib", data, sizes[k], what)
            else:  # shuffle: bytes grouped by position within each element (numcodecs: same size out)
                size = int(cd[0]) if cd else self.dtype.itemsize
                if size > 1 and len(data) >= size:
                    from numcodecs.shuffle import Shuffle
                    data = Shuffle(elementsize=size).decode(np.frombuffer(data, np.uint8))
        if len(data) != self.chunk_bytes:
            raise LoadError(f"{what} decodes to {len(data):,} bytes where {self.chunk_bytes:,} are declared; "
                            f"the file is damaged")
        return data


def open_h5(path, dataset: str | None, pick) -> H5Reader:
    """The reader of the 2-D dataset ``dataset`` (or the only one) of the HDF5 file ``path``.

    ``pick(found, what, where)`` chooses among several datasets when none is named.
    """
    h5py = _h5py()
    p = regular_file(path)
    try:
        with h5py.File(p, "r") as f:
            found = {}
            f.visititems(lambda name, obj: found.__setitem__(name, (obj.shape, obj.dtype, obj.chunks))
                         if isinstance(obj, h5py.Dataset) else None)
            name = dataset if dataset is not None else pick(found, "dataset", p.name)
            try:
                real = _resolve(f, name, f"{p.name}:{shown(name)}")
                ds = f[real]
            except KeyError:
                raise LoadError(f"{p.name} has no dataset {shown(name)}; it has: {listing(found)}") from None
            if not isinstance(ds, h5py.Dataset):
                raise LoadError(f"{p.name}:{shown(name)} is a group, not a dataset; it has: {listing(found)}")
            if len(ds.shape or ()) != 2:
                raise LoadError(f"{p.name}:{shown(name)} has shape {ds.shape}; "
                                "a table must be 2-D (samples x features)")
            return H5Reader(str(p), real.lstrip("/"), ds)
    except LoadError:
        raise
    except _H5_ERRORS as exc:
        raise _unreadable(p.name, exc) from None


# What h5py raises for a damaged file, wherever it notices (opening, visiting, reading).
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError, OverflowError)


def _unreadable(name: str, exc) -> LoadError:
    return LoadError(f"{name} is not a readable HDF5 file, or is damaged ({shown(str(exc), 200)}); copy it again")
