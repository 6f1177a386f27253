"""The rows ROBPCA's stages read, ``Z - shift``, made where they are read rather than stored.

When the centred rows are their own coordinates (full rank, the usual case), every stage after
the affine span reads ``Z - mean``: all of it a block at a time (the float32 copy of the
outlyingness, the orthogonal distances, the projections of the MCD stage) or some rows of it
(the h-subset, the rows that move at the reweighting). Storing it took the largest fresh array
of a fit (n x d float64), and a process's first fit pays for every fresh page: at 10,000 x 200
a first fit took 0.18 s of CPU instead of 0.22 s when 64 MB had been touched before it
(medians of 8 interleaved runs, benchmarks/results_robpca.md). Each entry is computed as the
stored copy computed it, ``z - shift`` in float64, so every stage sees the same numbers.
"""
from __future__ import annotations

import math

import numpy as np

from .._residual import SCORE_BLOCK_ENTRIES, ResidualKernel

__all__ = ["CentredRows", "abs_max", "dense", "huge_empty", "single_rows"]

# The size of a transparent huge page (x86-64 and most 64-bit Linux): numpy asks the kernel for
# them on arrays of 4 MB or more, and the kernel can back only the whole 2 MB-aligned stretches.
_HUGE = 1 << 21


class CentredRows:
    """``Z - shift`` (shift (d,), or None: Z as it is) for the stages of ROBPCA."""

    def __init__(self, Z, shift=None):
        self.Z, self.shift = Z, shift
        self.shape = Z.shape
        self._single = None         # (the float32 copy, its largest |entry|) made by survey,
        # until single_rows or astype takes it
        self._buf = None            # the block buffer every read shares (_buffer)

    def rows_per_block(self) -> int:
        return max(1, SCORE_BLOCK_ENTRIES // max(self.shape[1], 1))

    def __getitem__(self, idx):
        """The rows ``idx`` (an index array or a boolean mask: never a view of Z), a new array."""
        B = self.Z[np.asarray(idx)]
        if self.shift is not None:
            B -= self.shift
        return B

    def _buffer(self, rows):
        """A float64 scratch of ``rows`` rows, the same memory for every read of these rows
        (one 2 MB buffer a fit instead of one per pass: a fresh one costs its page faults);
        its contents are the last user's."""
        size = min(rows, self.shape[0]) * self.shape[1]
        if self._buf is None or self._buf.size < size:
            self._buf = huge_empty((size,), np.float64)
        return self._buf[:size].reshape(-1, self.shape[1])

    def spare_bytes(self):
        """The block buffer as raw bytes (uint8), or None before a read made it: scratch for a
        stage that reads no block meanwhile (the outlyingness's univariate MCDs), memory the
        process has touched already. A fresh page can cost far more than its zeroing: on a VM
        whose host takes freed memory back (free page reporting, in 2 MB blocks), the first
        touch of a huge page cost up to 3-4 ms (benchmarks/results_robpca.md, round 11)."""
        return None if self._buf is None else self._buf.view(np.uint8)

    def blocks(self, rows=None):
        """(start, block) over every row, in blocks of ``rows`` (a buffer reused from one
        block to the next, and by the next read, when there is a shift: use each block before
        asking for the next)."""
        n = self.shape[0]
        b = rows or self.rows_per_block()
        buf = None if self.shift is None else self._buffer(b)
        for s in range(0, n, b):
            B = self.Z[s:s + b]
            yield s, (B if buf is None else np.subtract(B, self.shift, out=buf[:B.shape[0]]))

    def scatter(self, mask):
        """Mean and scatter matrix (sum of outer products about it) of the rows ``mask`` (a
        boolean mask), for rows with a shift (``Z - mean``), a block of rows at a time in one
        buffer: the sums of the rows and of their outer products, less count x the mean's
        outer product (the rows are centred near that mean already, so the difference keeps
        its digits: the same matrix to about 1e-15 of its largest entry). Copying the rows out
        took the largest fresh array of a fit (at 10,000 x 200, 12 MB for 7,500 rows)."""
        n, d = self.shape
        b = self.rows_per_block()
        buf = self._buffer(b)
        total, G, prod = np.zeros(d), np.zeros((d, d)), np.empty((d, d))
        for s in range(0, n, b):
            rows = np.flatnonzero(mask[s:s + b])
            # (take with mode="clip" writes into the buffer itself: compress, and take in its
            # default mode, fill a fresh copy of ``out`` and copy it back, 1 ms more at 10,000 x
            # 200; the indices are in range, so clipping changes nothing)
            B = np.take(self.Z[s:s + b], rows, axis=0, out=buf[:rows.size], mode="clip")
            B -= self.shift
            total += B.sum(axis=0)
            G += np.matmul(B.T, B, out=prod)
        count = int(np.count_nonzero(mask))
        m = total / count
        G -= count * np.outer(m, m)
        return m, G

    def survey(self, step: int):
        """One read of every row for the affine span's test and the outlyingness: the sum of
        squares of every entry, the Gram matrix of rows 0, step, 2 step... (summed
        by blocks), and the float32 copy with its largest |entry|, which the next
        ``single_rows`` (or ``astype(np.float32)``) returns (the same rounding: made from the
        same blocks; the largest |entry| from each block of the copy while it is in cache).
        Reading the rows three times (the copy of every step-th row, the sum of squares, the
        float32 copy) took 3.2 MB of fresh memory and two more passes at 10,000 x 200, and the
        copy's largest |entry| two passes over its 8 MB."""
        n, d = self.shape
        G, prod = np.zeros((d, d)), np.empty((d, d))
        single = huge_empty((n, d), np.float32)
        sq = 0
        size = 0.0
        with np.errstate(over="ignore"):    # (an entry beyond float32: the outlyingness's range test)
            for s, B in self.blocks():
                part = single[s:s + B.shape[0]]
                part[...] = B
                size = max(size, abs_max(part))
                sq += np.einsum("ij,ij->", B, B)
                P = B[(-s) % step::step]
                G += np.matmul(P.T, P, out=prod)
        self._single = single, size
        return float(sq), G

    def astype(self, dtype):
        """The rows in ``dtype`` (as ``dense(self).astype(dtype)``: the same rounding)."""
        if self._single is not None and np.dtype(dtype) == np.float32:
            (single, _), self._single = self._single, None
            return single
        if self.shift is None:
            return self.Z.astype(dtype)
        out = np.empty(self.shape, dtype=dtype)
        for s, B in self.blocks():
            out[s:s + B.shape[0]] = B
        return out

    def project(self, V, about=None):
        """(Vᵀ (rows)ᵀ (k, n), spe) for V (d, k) with orthonormal columns: one product without
        a shift, else one per block (the same numbers to rounding: the library may order a dot
        product's terms differently for another width); ``spe`` (n,): with ``about`` (d,),
        every row's squared distance to ``about + span(V)`` from the same read of each block
        (robustcore._residual's kernel), else None."""
        n = self.shape[0]
        kern = None if about is None else ResidualKernel(V.T, about)
        spe = None if kern is None else np.empty(n)
        if self.shift is None:
            out = V.T @ self.Z.T
            if kern is not None:
                buf = np.empty((min(self.rows_per_block(), n), self.shape[1]))
                for s, B in self.blocks():
                    spe[s:s + B.shape[0]] = kern(B, buf)[1]
            return out, spe
        out = np.empty((V.shape[1], n))
        for s, B in self.blocks():
            out[:, s:s + B.shape[0]] = V.T @ B.T
            if kern is not None:
                # (the block is the rows' own buffer, centred again in place)
                spe[s:s + B.shape[0]] = kern(B, B)[1]
        return out, spe


def huge_empty(shape, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)`` starting on a 2 MB boundary when it takes 1 MB or more (its
    allocation is then made 4 MB or more, which numpy asks huge pages for), so that every 2 MB
    of it can be one transparent huge page (one fault instead of 512). numpy's allocation starts
    a few bytes past a 4 kB page, so the first and last partial 2 MB of an 8 MB array were 4 kB
    pages: about 1,000 faults a fit at 10,000 x 200 for the float32 copy and the block of
    projections; an array of 1-2 MB (the rows' block buffer, a block of projections) is one
    huge page. The unused head and tail of the allocation are never touched, so they cost
    address space only. The same numbers either way (contents undefined, as np.empty)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _HUGE // 2:
        return np.empty(shape, dtype=dtype)
    raw = np.empty(max(nbytes, _HUGE) + _HUGE, dtype=np.uint8)
    skip = (-raw.ctypes.data) % _HUGE
    return raw[skip:skip + nbytes].view(dtype).reshape(shape)


def abs_max(X) -> float:
    """The largest |entry| of X (0 for an empty X), without an |X| temporary: at 10,000 x 200
    a fresh 16 MB array to read once cost more than the two reductions (page faults)."""
    return float(max(X.max(initial=0.0), -X.min(initial=0.0)))


def single_rows(X):
    """(X in float32, its largest |entry|) for X an array or CentredRows: survey's copy and
    size when it made them (the same numbers: abs_max of the copy, block by block)."""
    if isinstance(X, CentredRows) and X._single is not None:
        made, X._single = X._single, None
        return made
    X32 = X.astype(np.float32)
    return X32, abs_max(X32)


def dense(X):
    """X as an array (CentredRows made in full)."""
    if isinstance(X, CentredRows):
        return X.Z - X.shift if X.shift is not None else X.Z
    return X
