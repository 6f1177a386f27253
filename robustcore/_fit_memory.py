"""The memory a fit may allocate at once, and the one check every large allocation asks first.

Loaders charge what a file will cost before they read it (robustcore.datasets._limits); fits
do the same for what they build beyond their input: a dense copy of sparse data, a d x d
covariance (SCW's full covariance, a residual covariance), an n x d workspace. Each such
allocation is estimated from the shapes alone and refused when it passes the fit budget, with
the size, the budget and a way out, before numpy is asked for it (numpy's own refusal is a bare
``MemoryError`` naming a shape, after the fit has already run for a while, or none at all
when the operating system overcommits and the process is killed later).

Sparse data (a LIBSVM file) densified for a method that needs dense rows are charged by
:func:`check_dense_copy`, the one rule for every estimator's fit (the registry,
:meth:`robustcore.methods.Method.run`, asks it before a dense copy exists): the copy itself and
the working copies the method holds beside it at its peak, as measured (the registry declares
them per method: ``Method.dense_copies``).

Budget: ``ROBUSTCORE_FIT_MEMORY`` (bytes, or a number with a K, M, G or T suffix, powers of
1024), read at every check; by default 2 GiB, or half the machine's physical memory when that
is less (a PCA of the 20-byte LIBSVM file ``1 16777216:1`` / ``-1 1:1``, 2 x 16,777,216, is a
256 MiB dense copy and 8 working copies, 2.25 GiB: refused by default; it peaked at 2.2 GiB
unrefused). Data opened out of core keep their own budget (``robustcore.bigdata.settings``).
"""
from __future__ import annotations

import os

__all__ = ["ENV", "DEFAULT_FIT_MEMORY", "FitMemoryError", "fit_budget", "check_fit_memory", "check_dense_copy",
           "format_size"]

ENV = "ROBUSTCORE_FIT_MEMORY"
DEFAULT_FIT_MEMORY = 2 * 1024 ** 3
_SUFFIX = {"": 1, "B": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


class FitMemoryError(ValueError, MemoryError):
    """A fit refused before an allocation over the fit budget. A ValueError (the data or the
    parameters ask too much, as every other refusal of a fit) and a MemoryError (what callers
    that catch numpy's own refusal expect)."""


def format_size(n: float) -> str:
    n = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def _physical() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX, or not reported
        return None


def fit_budget() -> int:
    """The fit budget in bytes (module doc); a malformed ``ROBUSTCORE_FIT_MEMORY`` is a ValueError."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        ram = _physical()
        return DEFAULT_FIT_MEMORY if ram is None else min(DEFAULT_FIT_MEMORY, ram // 2)
    text = raw.upper().removesuffix("IB").removesuffix("B") if raw[-1:].isalpha() else raw
    unit = text[-1:] if text[-1:].isalpha() else ""
    try:
        value = float(text[: len(text) - len(unit)]) * _SUFFIX[unit]
    except (ValueError, KeyError):
        value = -1.0
    if not 1 <= value < 2 ** 62:
        raise ValueError(f"{ENV}={raw!r} is not a memory size; give bytes or a number with K, M, G "
                         f"or T, e.g. {ENV}=8G")
    return int(value)


def check_fit_memory(nbytes: float, method: str, what: str, way_out: str) -> None:
    """Refuse (FitMemoryError) when ``nbytes`` (what ``method`` would allocate for ``what``)
    passes the fit budget; the message gives the size, the budget and ``way_out``."""
    budget = fit_budget()
    if nbytes > budget:
        raise FitMemoryError(f"{method} would need {format_size(nbytes)} for {what}, more than the fit "
                             f"memory budget of {format_size(budget)}; {way_out}, or raise the budget "
                             f"({ENV}=16G, if the machine has the memory)")


#: The way out of a refused dense copy of sparse data.
SPARSE_WAY_OUT = ("load the file with fewer features (LIBSVM's n_features option, or drop the columns with "
                  "large indices), or use a method that takes sparse data as it is (SCW with "
                  "covariance='diagonal')")


def check_dense_copy(shape, copies: float, method: str) -> None:
    """Refuse (FitMemoryError) a dense copy of sparse data of ``shape`` (n, d) when it and the
    ``copies`` working copies ``method`` holds beside it at its peak pass the fit budget; asked
    before the copy is made."""
    n, d = (int(v) for v in shape)
    one = 8.0 * n * d
    check_fit_memory(one * (1.0 + copies), method,
                     f"a dense copy of the {n:,} x {d:,} sparse data ({format_size(one)}) and the "
                     f"{copies:g} working copies its fit holds beside it", SPARSE_WAY_OUT)
