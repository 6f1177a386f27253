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

import contextlib
import contextvars
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from .._lanes import pass_threads
from .._residual import SCORE_BLOCK_ENTRIES, ResidualKernel
from .._threads import Governor

__all__ = ["CentredRows", "Lanes", "THREADS", "abs_max", "dense", "huge_empty", "no_report", "single_rows"]

# Threads a fit's reads run on at most: the caller's and one helper (the machines this runs on
# have two cores or more; the reads are short, and a second helper would cost more in
# hand-offs than it gains).
THREADS = 2

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
        self.rows32 = None          # survey's float32 copy, held for scatter's float32 product
        # until the fit lets it go (None: every scatter in float64)
        self._buf = None            # the block buffer every read shares (_buffer)
        self._lent = False          # whether a lane holds it (_take_buffer), and the
        self._free = []             # buffers of lanes that ran beside it, for the next ones
        self._lock = threading.Lock()
        self._lanes = None          # the fit's Lanes (lanes), made at the first read in lanes

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

    def lanes(self) -> Lanes:
        """The Lanes every read of these rows runs on (one per fit: its governor's decisions
        carry from one read to the next)."""
        if self._lanes is None:
            self._lanes = Lanes()
        return self._lanes

    def _take_buffer(self, rows):
        """A block buffer of ``rows`` rows for one lane of a read (:meth:`scatter`): the shared
        one (``_buffer``) unless a lane running at the same time holds it, then another, kept
        for the next such lane (two lanes on two threads take two buffers; on one thread, one)."""
        size = min(rows, self.shape[0]) * self.shape[1]
        with self._lock:
            if not self._lent:
                self._lent = True
                return self._buffer(rows)
            if self._free and self._free[-1].size >= size:
                return self._free.pop()[:size].reshape(-1, self.shape[1])
        return huge_empty((size,), np.float64).reshape(-1, self.shape[1])

    def _give_buffer(self, buf):
        """Hand back a buffer of :meth:`_take_buffer`."""
        with self._lock:
            if self._buf is not None and np.shares_memory(buf, self._buf):
                self._lent = False
            else:
                self._free.append(buf.reshape(-1))

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

    def each_block(self, fn, rows=None, runner=None, about=None):
        """``fn(start, block, buf)`` for every block of ``rows`` rows (those of :meth:`blocks`,
        less ``about`` (d,) when given: ``z - (shift + about)``, one subtraction, the rows less
        ``about`` to rounding; ``buf``: a float64 scratch of the block's size, the block's own
        memory when anything is subtracted), on the threads of ``runner`` (a :class:`Lanes`; by
        default :meth:`lanes`), for reads in which each row's result is its own (``fn`` writes
        rows start to start + len(block) of its outputs): the same numbers on one thread or two."""
        b = rows or self.rows_per_block()
        if about is None:
            centre = self.shift
        else:
            centre = about if self.shift is None else self.shift + about

        def block(buf, i):
            B = self.Z[i * b:(i + 1) * b]
            if centre is not None:
                B = np.subtract(B, centre, out=buf[:B.shape[0]])
            fn(i * b, B, buf)
        self._run_on_buffers(runner or self.lanes(), block, b)

    def _run_on_buffers(self, runner, block, b, product=False, **run):
        """``runner.run`` of ``block(state, i)`` over every block of ``b`` rows, each thread's
        state a buffer lent by :meth:`_take_buffer` (with a d x d product of its own when
        ``product``), every buffer handed back after, also when a block fails."""
        n, d = self.shape
        lent = []

        def start():
            buf = self._take_buffer(b)
            lent.append(buf)
            return (buf, np.empty((d, d))) if product else buf
        try:
            runner.run(start, block, -(-n // b), **run)
        finally:
            for buf in lent:
                self._give_buffer(buf)

    def scatter(self, mask, runner=None, exact=False):
        """Mean and scatter matrix (sum of outer products about it) of the rows ``mask`` (a
        boolean mask), for rows with a shift (``Z - mean``), a block of rows at a time in one
        buffer: the sums of the rows and of their outer products, less count x the mean's
        outer product (the rows are centred near that mean already, so the difference keeps
        its digits: the same matrix to about 1e-15 of its largest entry). Copying the rows out
        took the largest fresh array of a fit (at 10,000 x 200, 12 MB for 7,500 rows).

        While the rows hold survey's float32 copy (``rows32``) and not ``exact``, each block's
        product is float32's (a third of float64's time at 10,000 x 200: 2.6 against 6.7 ms,
        half the bytes to gather, no shift to subtract) and the blocks' sums float64's: the
        matrix to about 1e-7 of its largest entry (the copy's rounding and the product's
        float32 sums of at most a block of rows), the mean to about 1e-8 of the rows' size.
        The caller decides whether that holds its eigenvectors (robpca._leading).

        On the threads of ``runner`` (a :class:`Lanes`; by default :meth:`lanes`), each block's
        product made on its thread and added in the blocks' order: the same matrix on one
        thread or two."""
        d = self.shape[1]
        b = self.rows_per_block()
        runner = runner or self.lanes()
        total, G = np.zeros(d), np.zeros((d, d))
        single = None if exact else self.rows32

        def block(state, i):
            buf, prod = state
            rows = np.flatnonzero(mask[i * b:(i + 1) * b])
            if single is not None:
                # (the lane's float64 buffers hold the float32 rows and product in their bytes)
                B = np.take(single[i * b:(i + 1) * b], rows, axis=0, mode="clip",
                            out=buf.reshape(-1).view(np.float32)[:rows.size * d].reshape(rows.size, d))
                part = B.sum(axis=0, dtype=np.float64)
                P = np.matmul(B.T, B, out=prod.reshape(-1).view(np.float32)[:d * d].reshape(d, d))
            else:
                # (take with mode="clip" writes into the buffer itself: compress, and take in
                # its default mode, fill a fresh copy of ``out`` and copy it back, 1 ms more at
                # 10,000 x 200; the indices are in range, so clipping changes nothing)
                B = np.take(self.Z[i * b:(i + 1) * b], rows, axis=0, out=buf[:rows.size], mode="clip")
                B -= self.shift
                part = B.sum(axis=0)
                P = np.matmul(B.T, B, out=prod)
            with runner.in_turn(i):
                np.add(total, part, out=total)
                np.add(G, P, out=G)
        self._run_on_buffers(runner, block, b, product=True)
        count = int(np.count_nonzero(mask))
        m = total / count
        G -= count * np.outer(m, m)
        return m, G

    def survey(self, step: int):
        """One read of every row for the affine span's test and the outlyingness: the sum of
        squares of every entry, the Gram matrix of rows 0, step, 2 step... (summed
        by blocks) with a bound on its error, and the float32 copy with its largest |entry|,
        which the next ``single_rows`` (or ``astype(np.float32)``) returns (the same rounding:
        made from the same blocks; the largest |entry| from each block of the copy while it is
        in cache). Reading the rows three times (the copy of every step-th row, the sum of
        squares, the float32 copy) took 3.2 MB of fresh memory and two more passes at 10,000 x
        200, and the copy's largest |entry| two passes over its 8 MB.

        Returns (sum of squares, Gram matrix, error): each block's part of the Gram matrix is
        the float32 copy's product (half of float64's time: 56 against 113 us a block at
        10,000 x 200, 0.45 ms a fit) when the block's largest |entry| is within
        ``_GRAM_RANGE`` (no product overflows, none of the block's own size underflows), else
        float64's; ``error`` bounds the spectral norm of the difference from the exact Gram
        matrix of those rows (:func:`_single_gram_error`; 0 when every block was float64's)."""
        n, d = self.shape
        b = self.rows_per_block()
        runner = self.lanes()
        G = np.zeros((d, d))
        single = huge_empty((n, d), np.float32)
        sums = [0, 0.0, 0.0]                # the sum of squares, the largest |entry|, the error

        def block(state, i):
            # (each block's numbers on its thread, added in the blocks' order: one thread's sums)
            buf, prod = state
            s = i * b
            B = self.Z[s:s + b]
            if self.shift is not None:
                B = np.subtract(B, self.shift, out=buf[:B.shape[0]])
            part = single[s:s + B.shape[0]]
            part[...] = B
            size = abs_max(part)
            # (BLAS's dot product of the contiguous block: 27 against einsum's 66 us a block at
            # 10,000 x 200; the sum only scales the affine span's floor, 1e-8 of it)
            sq = _sum_of_squares(B)
            first = (-s) % step
            P = B[first::step]
            if _GRAM_RANGE[0] <= size <= _GRAM_RANGE[1]:
                # (the lane's float64 product buffer holds the float32 product in its bytes)
                P32 = part[first::step]
                prod32 = prod.reshape(-1).view(np.float32)[:d * d].reshape(d, d)
                np.matmul(P32.T, P32, out=prod32)
                err = _single_gram_error(np.einsum("ij,ij->", P, P), P.shape[0], d)
                prod = prod32
            else:
                np.matmul(P.T, P, out=prod)
                err = 0.0
            with runner.in_turn(i):
                sums[1] = max(sums[1], size)
                sums[0] += sq
                sums[2] += err
                np.add(G, prod, out=G)
        with np.errstate(over="ignore"):    # (an entry beyond float32: the outlyingness's range test)
            # (not measured: its blocks are short, and the fit's first read would otherwise
            # decide alone whether the outlyingness, a read of 4x its time, gets the threads)
            self._run_on_buffers(runner, block, b, product=True, measure=False)
        self._single = single, sums[1]
        self.rows32 = single
        return float(sums[0]), G, float(sums[2])

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
        """(Vᵀ (rows - about)ᵀ (k, n), spe) for V (d, k) with orthonormal columns (``about``
        (d,), or None: 0): one product without a shift or centre, else one per block (the same
        numbers to rounding: the library may order a dot product's terms differently for
        another width); ``spe`` (n,): with ``about``, every row's squared distance to ``about +
        span(V)``, from the same read and product (robustcore._residual's kernel on the rows
        less ``about``, :meth:`each_block`: its coordinates are the projections; one product
        and one subtraction a block instead of two each, 2 ms less at 10,000 x 200), else None."""
        n = self.shape[0]
        out = np.empty((V.shape[1], n))
        if about is None:
            if self.shift is None:
                return V.T @ self.Z.T, None

            def block(s, B, buf):
                out[:, s:s + B.shape[0]] = V.T @ B.T
            self.each_block(block)
            return out, None
        kern = ResidualKernel(V.T, np.zeros(self.shape[1]))
        spe = np.empty(n)

        def block(s, B, buf):
            # (the block, in the lane's buffer, is centred already: the kernel reads it as it is)
            T, spe[s:s + B.shape[0]] = kern(B, buf)
            out[:, s:s + B.shape[0]] = T.T
        self.each_block(block, about=about)
        return out, spe


def _sum_of_squares(B) -> float:
    """The sum of the squares of B's entries (a dot product of the flat entries where B is
    contiguous: no copy)."""
    if B.flags.c_contiguous:
        flat = B.reshape(-1)
        return float(flat @ flat)
    return float(np.einsum("ij,ij->", B, B))


# Largest |entry| of a block whose rows' Gram matrix the survey takes from their float32 copy,
# and the smallest: a product of two entries stays below float32's largest number (3e38) summed
# over a block's rows, and the block's own largest products above its smallest normal one (1e-38).
_GRAM_RANGE = (1e-15, 1e15)


def _single_gram_error(frob2: float, m: int, d: int) -> float:
    """A bound on the spectral norm of the error of the float32 Gram matrix of m rows (m x d)
    whose entries' sum of squares (in float64) is ``frob2``: the rows' rounding to float32
    (relative u = 2^-24 each entry: at most (2u + u²) frob2; an entry below float32's smallest
    normal number is off by at most 2^-150 more, at most 2 sqrt(m d) 2^-150 sqrt(frob2) in all),
    the product's float32 sums of m terms in any order (at most gamma_m frob2 (1 + u)², gamma_m =
    m u / (1 - m u), Higham's bound of |Pᵀ||P|, whose spectral norm is at most frob2), and the
    products' underflows (at most 2^-149 a term, m d² terms), with a tenth more for the float64
    sums' own rounding."""
    u = 2.0 ** -24
    gamma = m * u / (1.0 - m * u)
    return 1.1 * ((2.0 * u + u * u + gamma * (1.0 + u) ** 2) * frob2
                  + 2.0 * math.sqrt(m * d * frob2) * 2.0 ** -150 + m * d * d * 2.0 ** -149)


def no_report(fraction, message):
    """A progress callback that reports nowhere (for reads without one)."""


class _Stop(Exception):
    """The helper stopped because the caller failed or was cancelled."""


_HELPER = None
_HELPER_LOCK = threading.Lock()


def _helper():
    """The one helper thread of the reads (made on first use; a forked child makes its own)."""
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = ThreadPoolExecutor(1, thread_name_prefix="robustcore-robpca")
        return _HELPER


def _forget_helper_in_child():
    global _HELPER, _HELPER_LOCK
    _HELPER, _HELPER_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper_in_child)


class Lanes:
    """Runs the blocks of a fit's reads on the caller's thread, and on one helper thread beside
    it when the process has threads to spare (robustcore._lanes.pass_threads: every core unless
    the user set a thread count, such as ``OPENBLAS_NUM_THREADS=1``) and the machine is free
    for them (a robustcore._threads Governor: not while another job keeps a core busy, and not
    again soon after two threads gave less than 1.4 cores).

    The blocks are the same either way (those of one thread), and each thread takes the next
    block not yet taken, so a helper that gets no core costs the caller at most the one block it
    holds. Whatever a block adds to a sum is added in the blocks' order (:meth:`in_turn`), so
    the numbers are those of one thread, to the bit. Progress and Cancel stay on the caller's
    thread.

    ``jobs``: the threads (by default the process's pass threads, at most ``THREADS``);
    ``adaptive=False``: every read on ``jobs`` threads whatever the machine's load (tests)."""

    def __init__(self, jobs: int | None = None, *, adaptive: bool = True):
        self.jobs = min(pass_threads() if jobs is None else int(jobs), THREADS)
        self._adaptive = adaptive
        self._governor = None       # (made at the first read of several blocks: it looks at the machine)
        self._turn = threading.Condition()
        self._next = 0              # the block whose sums go next (in_turn)
        self._stop = threading.Event()

    def _threaded(self, blocks: int) -> bool:
        if blocks < 2 or self.jobs < 2:
            return False
        if self._governor is None:
            self._governor = Governor(self.jobs, adaptive=self._adaptive)
        return self._governor.threaded()

    def run(self, start, block, blocks: int, rep=no_report, message="", measure=True):
        """``block(state, i)`` for every i in range(``blocks``), each thread's ``state`` from
        ``start()`` (its buffers, its partial results): the threads' states, the caller's
        first. ``rep(fraction of the blocks done, message)`` is called on the caller's thread
        and may cancel (the helper then stops before its next block). ``measure``: whether the
        governor learns from this read how many cores two threads got."""
        self._next = 0
        self._stop.clear()
        every = max(1, blocks // 20)
        if not self._threaded(blocks):
            state = start()
            for i in range(blocks):
                block(state, i)
                if (i + 1) % every == 0:
                    rep((i + 1) / blocks, message)
            rep(1.0, message)
            return [state]
        taken = [0]
        lock = threading.Lock()

        def lane(report):
            state = start()
            while True:
                with lock:
                    i = taken[0]
                    if i >= blocks or self._stop.is_set():
                        return state
                    taken[0] += 1
                block(state, i)
                report(i)

        def caller_report(i):
            if (i + 1) % every == 0:
                rep(min(1.0, (i + 1) / blocks), message)

        def helper_lane():
            try:
                return lane(lambda i: None)
            except BaseException:
                self._stop.set()            # (the caller takes no further block either)
                with self._turn:
                    self._turn.notify_all()
                raise
        with self._governor.measure(True) if measure else contextlib.nullcontext():
            later = _helper().submit(contextvars.copy_context().run, helper_lane)
            try:
                first = lane(caller_report)
            except BaseException:
                self._stop.set()
                with self._turn:
                    self._turn.notify_all()
                wait([later])
                raise
            rest = later.result()
        rep(1.0, message)
        return [first, rest]

    @contextlib.contextmanager
    def in_turn(self, i: int):
        """Hold the body until the blocks before ``i`` have had theirs (sums in the blocks' order)."""
        with self._turn:
            while self._next != i:
                if self._stop.is_set():
                    raise _Stop()
                self._turn.wait(0.05)
            try:
                yield
            finally:
                self._next = i + 1
                self._turn.notify_all()


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
