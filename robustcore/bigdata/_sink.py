"""Where per-frame results go: memory when they are small, a Zarr store when they are not.

A streaming fit writes its outputs (low-rank L, sparse S, foreground mask) a batch of frames at
a time; a viewer reads them back a frame at a time, also while the fit is still running
(``n_written`` says how many leading frames are complete). A Zarr store is written under
``PATH.partial`` and renamed to ``PATH`` by ``close()``, so a store at ``PATH`` is always
complete; ``abort()`` (a cancelled fit) removes the partial store.

Writes to a store happen on a writer thread, at most two batches behind the caller, so that
compressing and writing one batch overlaps computing the next (on the benchmark video the
writes took a quarter of the time when they were waited for). A producer that can fill the
rows in place asks ``buffers(start, stop)`` for them and hands them back with ``commit``: in
memory those are the result arrays' own rows (no copy at all), for a store a few batch-sized
buffers that the writer thread hands back once written (no new memory per batch).

How a store is compressed (measured on the benchmark video, benchmarks/results_bigdata.md): a
float field with LZ4 after a byte shuffle (Blosc), which compresses smooth images such as a
low-rank background better than zstd (0.73 of the raw size against 0.87) and twice as fast;
bool fields and fields that are mostly zeros (a sparse part) with zstd at level 1 (the ratio of
Zarr's default level in half the time).
Chunks are written even when they hold only the fill value: the check costs a pass over every
chunk and most chunks are not empty.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import threading
from pathlib import Path

import numpy as np

# Results larger than this (uncompressed) go to a Zarr store unless told otherwise: the budget.
from ..datasets._limits import DEFAULT_MEMORY_BUDGET as DEFAULT_RESULT_MEMORY

__all__ = ["FrameSink", "open_frame_store", "DEFAULT_RESULT_MEMORY"]

_PARTIAL = ".partial"
# Frames per Zarr chunk: one frame read from a viewer decompresses one chunk; fewer, larger
# chunks cost less per frame to write (Zarr spends a few milliseconds of CPU per chunk).
_CHUNK_FRAMES = 16
# Fields whose values are mostly zeros (compressed with zstd, like bool fields).
_SPARSE_FIELDS = ("sparse", "mask")


def _zarr():
    try:
        import zarr
    except ImportError:
        raise ImportError("storing results on disk needs zarr, which is not installed; install it with: "
                          "pip install zarr   (or the project's extra: pip install -e \".[big]\")") from None
    return zarr


class FrameSink:
    """Per-frame arrays ``fields`` (name -> dtype), each (n_frames, n_features).

    Parameters
    ----------
    n_frames, n_features : int
    fields : dict name -> numpy dtype
    path : str or Path or None
        None keeps the arrays in memory; a path writes a Zarr store there (atomically, see the
        module doc). An existing store at ``path`` is an error unless ``overwrite``.
    frame_shape : (height, width) or None
        How a row draws as an image (recorded in the store).
    attrs : dict
        JSON-able facts recorded with the store (method, parameters, thresholds).
    """

    def __init__(self, n_frames: int, n_features: int, fields: dict, path=None, frame_shape=None,
                 attrs=None, overwrite: bool = False, chunk_frames: int = _CHUNK_FRAMES):
        self.n_frames, self.n_features = int(n_frames), int(n_features)
        self.fields = {k: np.dtype(v) for k, v in fields.items()}
        self.frame_shape = None if frame_shape is None else tuple(int(v) for v in frame_shape)
        self.attrs = dict(attrs or {})
        self._done = np.zeros(self.n_frames, dtype=bool)
        self.n_written = 0
        self.closed = False
        if path is None:
            self.path = None
            self._arrays = {k: np.zeros((self.n_frames, self.n_features), dt) for k, dt in self.fields.items()}
            return
        zarr = _zarr()
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} already exists; choose another path or pass overwrite=True")
        self._partial = self.path.with_name(self.path.name + _PARTIAL)
        if self._partial.exists():
            shutil.rmtree(self._partial)
        group = zarr.open_group(str(self._partial), mode="w")
        self._queue = queue.Queue(maxsize=2)
        self._error = None
        self._writer = threading.Thread(target=self._drain, name="FrameSink writer", daemon=True)
        self._writer.start()
        self._free = queue.SimpleQueue()   # batch buffers the writer has finished with
        cf = max(1, min(int(chunk_frames), self.n_frames))
        self._arrays = {k: _create_array(group, k, (self.n_frames, self.n_features), dt, cf)
                        for k, dt in self.fields.items()}
        self._group = group
        self._write_attrs()

    # -- facts ------------------------------------------------------------------------------
    @property
    def in_memory(self) -> bool:
        return self.path is None

    @property
    def live_path(self) -> Path | None:
        """Where the store can be read now: ``PATH.partial`` while it is written, ``PATH`` once
        closed; None in memory. Frames below ``n_written`` are complete there."""
        if self.path is None:
            return None
        return self.path if self.closed else self._partial

    @property
    def nbytes(self) -> int:
        """Uncompressed bytes of all fields."""
        return sum(self.n_frames * self.n_features * dt.itemsize for dt in self.fields.values())

    @staticmethod
    def estimate_bytes(n_frames: int, n_features: int, fields: dict) -> int:
        return sum(int(n_frames) * int(n_features) * np.dtype(dt).itemsize for dt in fields.values())

    def _write_attrs(self) -> None:
        meta = {"n_frames": self.n_frames, "n_features": self.n_features, "frame_shape": self.frame_shape,
                "fields": {k: dt.str for k, dt in self.fields.items()}, "n_written": self.n_written,
                "attrs": self.attrs}
        self._group.attrs["robust_studio"] = json.loads(json.dumps(meta, default=_jsonable))

    # -- writing ----------------------------------------------------------------------------
    def write(self, start: int, **arrays) -> None:
        """Rows ``start`` .. ``start + len`` of each named field (all fields of one batch at once)."""
        if self.closed:
            raise ValueError("this FrameSink is closed; open a new one to write")
        unknown = set(arrays) - set(self.fields)
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}; this sink holds {sorted(self.fields)}")
        lengths = {np.shape(a)[0] for a in arrays.values()}
        if len(lengths) != 1:
            raise ValueError("all fields of one write must have the same number of rows")
        b = lengths.pop()
        if start < 0 or start + b > self.n_frames:
            raise IndexError(f"rows {start}:{start + b} are outside the sink's {self.n_frames} frames")
        batch = {}
        for k, a in arrays.items():
            a = np.asarray(a)
            if a.shape != (b, self.n_features):
                raise ValueError(f"field {k!r} must have shape ({b}, {self.n_features}); got {a.shape}")
            batch[k] = a.astype(self.fields[k], copy=self.path is not None)
        if self.path is None:
            self._store(start, b, batch)
            return
        self._raise_writer_error()
        self._queue.put((start, b, batch))

    def buffers(self, start: int, stop: int) -> dict:
        """Arrays (stop - start, n_features), one per field, for the caller to fill with rows
        ``start:stop`` and hand to :meth:`commit`: in memory, the rows of the result arrays
        themselves; for a store, buffers the writer thread gives back once it has written them."""
        if self.closed:
            raise ValueError("this FrameSink is closed; open a new one to write")
        start, stop = int(start), int(stop)
        if not 0 <= start < stop <= self.n_frames:
            raise IndexError(f"rows {start}:{stop} are outside the sink's {self.n_frames} frames")
        if self.path is None:
            return {k: a[start:stop] for k, a in self._arrays.items()}
        b = stop - start
        while True:
            try:
                bufs = self._free.get_nowait()
            except queue.Empty:
                break
            if next(iter(bufs.values())).shape[0] == b:
                return bufs
        return {k: np.empty((b, self.n_features), dt) for k, dt in self.fields.items()}

    def commit(self, start: int, buffers: dict) -> None:
        """Rows ``start:`` of every field, filled in the arrays :meth:`buffers` gave, are final.
        The caller must not touch those arrays afterwards."""
        if self.closed:
            raise ValueError("this FrameSink is closed; open a new one to write")
        if set(buffers) != set(self.fields):
            raise ValueError(f"commit needs every field {sorted(self.fields)}; got {sorted(buffers)}")
        b = next(iter(buffers.values())).shape[0]
        if any(a.shape != (b, self.n_features) or a.dtype != self.fields[k] for k, a in buffers.items()):
            raise ValueError("commit takes the arrays buffers() gave, filled in place")
        if start < 0 or start + b > self.n_frames:
            raise IndexError(f"rows {start}:{start + b} are outside the sink's {self.n_frames} frames")
        if self.path is None:
            self._mark(start, b)
            return
        self._raise_writer_error()
        self._queue.put((start, b, buffers, True))

    def _store(self, start, b, batch, recycle=False):
        for k, a in batch.items():
            self._arrays[k][start:start + b] = a
        if recycle:
            self._free.put(batch)
        self._mark(start, b)

    def _mark(self, start, b):
        self._done[start:start + b] = True
        # Leading complete frames: what a reader may show.
        undone = np.flatnonzero(~self._done)
        self.n_written = int(undone[0]) if undone.size else self.n_frames
        if self.path is not None:
            self._write_attrs()

    def _drain(self):
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    self._store(*item)
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller at its next call
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise_writer_error(self):
        if self._error is not None:
            raise RuntimeError(f"writing results to {self._partial} failed: {self._error}") from self._error

    def flush(self) -> None:
        """Wait until every batch handed to ``write`` is in the store."""
        if self.path is not None and getattr(self, "_writer", None) is not None and self._writer.is_alive():
            self._queue.join()
            self._raise_writer_error()

    def _stop_writer(self):
        if self.path is not None and getattr(self, "_writer", None) is not None and self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()

    def set_attrs(self, **attrs) -> None:
        self.attrs.update(attrs)
        if self.path is not None and not self.closed:
            self.flush()
            self._write_attrs()

    def close(self):
        """Finish writing; a Zarr store moves from ``PATH.partial`` to ``PATH``. Returns self."""
        if self.closed:
            return self
        if self.path is not None:
            self.flush()
            self._stop_writer()
            self._write_attrs()
            if self.path.exists():
                shutil.rmtree(self.path) if self.path.is_dir() else self.path.unlink()
            os.replace(self._partial, self.path)
            self._arrays = _open_arrays(self.path, self.fields)
            self._group = None
        self.closed = True
        return self

    def abort(self) -> None:
        """Throw the results away (a cancelled fit): the partial store is deleted."""
        self.closed = True
        if self.path is not None:
            self._stop_writer()
        if self.path is not None and self._partial.exists():
            shutil.rmtree(self._partial, ignore_errors=True)
        self._arrays = {}

    # -- reading ----------------------------------------------------------------------------
    def read(self, field: str, start: int | None = None, stop: int | None = None) -> np.ndarray:
        """Rows ``start:stop`` of one field as a numpy array."""
        if field not in self._arrays:
            raise KeyError(f"no field {field!r}; this sink holds {sorted(self.fields)}")
        start = 0 if start is None else int(start)
        stop = self.n_frames if stop is None else int(stop)
        return np.asarray(self._arrays[field][start:stop])

    def frame(self, field: str, i: int) -> np.ndarray:
        """One frame of one field, (n_features,)."""
        if not 0 <= int(i) < self.n_frames:
            raise IndexError(f"frame {i} is outside 0..{self.n_frames - 1}")
        return self.read(field, i, i + 1)[0]

    def array(self, field: str):
        """The field as stored (a numpy array in memory, a Zarr array on disk): slices by rows."""
        return self._arrays[field]

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"<FrameSink {self.n_frames} x {self.n_features} {sorted(self.fields)} in {where}>"


def _create_array(group, name, shape, dtype, chunk_frames):
    """One field of a new store, chunked by frames and compressed as the module doc says."""
    dtype = np.dtype(dtype)
    sparse = dtype == np.bool_ or name in _SPARSE_FIELDS
    chunks = (chunk_frames, shape[1])
    if hasattr(group, "create_array"):          # Zarr 3
        from zarr.codecs import BloscCodec, ZstdCodec
        codec = ZstdCodec(level=1) if sparse else BloscCodec(cname="lz4", clevel=5, shuffle="shuffle",
                                                             typesize=dtype.itemsize)
        return group.create_array(name, shape=shape, dtype=dtype, chunks=chunks, fill_value=0,
                                  compressors=[codec], config={"write_empty_chunks": True})
    import numcodecs                             # Zarr 2
    codec = numcodecs.Zstd(level=1) if sparse else numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    return group.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks, fill_value=0,
                                compressor=codec, write_empty_chunks=True)


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def _open_arrays(path: Path, fields) -> dict:
    zarr = _zarr()
    group = zarr.open_group(str(path), mode="r")
    return {k: group[k] for k in fields}


def open_frame_store(path) -> FrameSink:
    """Open a finished store written by :class:`FrameSink` for reading (frame by frame)."""
    zarr = _zarr()
    p = Path(path)
    if not p.exists():
        partial = p.with_name(p.name + _PARTIAL)
        hint = " (a partial store exists: the run that wrote it did not finish)" if partial.exists() else ""
        raise FileNotFoundError(f"no result store at {p}{hint}")
    group = zarr.open_group(str(p), mode="r")
    meta = dict(group.attrs.get("robust_studio") or {})
    if not meta:
        raise ValueError(f"{p} is a Zarr store but not one written by Robust Subspace Studio")
    sink = FrameSink.__new__(FrameSink)
    sink.n_frames, sink.n_features = int(meta["n_frames"]), int(meta["n_features"])
    sink.fields = {k: np.dtype(v) for k, v in meta["fields"].items()}
    sink.frame_shape = tuple(meta["frame_shape"]) if meta.get("frame_shape") else None
    sink.attrs = dict(meta.get("attrs") or {})
    sink.n_written = int(meta.get("n_written", sink.n_frames))
    sink._done = np.arange(sink.n_frames) < sink.n_written
    sink.path = p
    sink.closed = True
    sink._group = None
    sink._writer = None
    sink._arrays = {k: group[k] for k in sink.fields}
    return sink
