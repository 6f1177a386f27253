"""Opening the data a run or a replay needs: in memory, or out of core when it would not fit.

One decision, the window's (:func:`app.out_of_core.offer_reason`): HDF5 and Zarr tables are
always read out of core; a ``.npy`` table or a video is read out of core when its float64 copy
would exceed the memory budget (``--memory-budget``, the library's default otherwise); a video
streamed by ``online-rpca`` is read a batch of frames at a time; ``--lazy`` and ``--scheduler``
ask for it. The command line says so in one line, and a method that needs the data in memory is
refused with the reason and the way out before anything is read.
"""
from __future__ import annotations

import os

from ._parse import UsageError, parse_options

__all__ = ["open_data", "out_of_core_settings", "budget_of"]


def budget_of(args) -> int:
    from app.out_of_core import DEFAULT_BUDGET
    return int(args.memory_budget) if getattr(args, "memory_budget", None) else DEFAULT_BUDGET


def _is_video(path: str) -> bool:
    from robustcore.datasets._video import VIDEO_SUFFIXES
    return path.lower().endswith(VIDEO_SUFFIXES)


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + ("." if dot else "")


def out_of_core_reason(args, methods) -> str | None:
    """Why ``args.data`` is to be read out of core (one line), or None to load it into memory."""
    from app.out_of_core import format_bytes, offer_reason
    if args.demo is not None:
        if args.lazy:
            raise UsageError("--lazy applies to --data files, not to the bundled demos")
        if args.scheduler:
            raise UsageError("--scheduler applies to --data files read out of core, not to the bundled demos")
        return None
    path = args.data
    if not os.path.exists(path):
        raise UsageError(f"data file {path} does not exist")
    if args.lazy:
        return "--lazy: the data stay on disk and are read a block at a time"
    if args.scheduler:
        return f"--scheduler: the work runs on the Dask scheduler at {args.scheduler}, a block at a time"
    offer = offer_reason(path, budget_of(args))
    if offer is not None:
        why = _first_sentence(offer.reason)
        if offer.can_load:
            why += f" (--memory-budget, now {format_bytes(budget_of(args))}, decides)"
        return why
    streaming = [m.name for m in methods if "frames" in m.lazy_kinds]
    if streaming and _is_video(path):
        return f"{streaming[0]} streams the video, a batch of frames at a time"
    return None


def check_out_of_core(methods, reason: str, path: str) -> None:
    """Every method can run on ``path`` read out of core (a video's frames, or a table), or a
    UsageError says which cannot (the registry's words), why the data are out of core, and what
    to do; before anything is read."""
    from robustcore.methods import refusal
    kind = "frames" if _is_video(path) else "table"
    for m in methods:
        why = refusal(m, kind=kind, subject=f"'{os.path.basename(os.path.normpath(path))}'")
        if why is not None:
            more = ", or raise --memory-budget to load it into memory" if "memory budget" in reason else ""
            raise UsageError(f"{why} ({reason}){more}")


def open_lazy_data(args):
    """``args.data`` opened out of core (robustcore.bigdata.open_lazy), within the memory budget
    (which bounds the chunks its reader may decode)."""
    from robustcore.bigdata import open_lazy, settings
    from robustcore.datasets import LOADERS
    if args.format:
        raise UsageError("--format does not apply to data read out of core (the extension decides)")
    if args.outliers_from_label is not None or args.no_known_outliers:
        raise UsageError("--outliers-from-label and --no-known-outliers need a file with labels loaded into "
                         "memory; data read out of core have no labels")
    try:
        options = parse_options(args.option, LOADERS["video"] if _is_video(args.data) else None)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with settings(memory_budget=budget_of(args)):
        return open_lazy(args.data, **options)


def load_data(args):
    """``args.data`` (or ``args.demo``) loaded into memory by its loader."""
    from robustcore import datasets
    outlier_flags = args.outliers_from_label is not None or args.no_known_outliers
    if args.demo is not None:
        if args.option or args.format or outlier_flags:
            raise UsageError("--option, --format, --outliers-from-label and --no-known-outliers apply to --data "
                             "files, not to demos")
        return datasets.demo(args.demo)
    path = args.data
    fmt = args.format or datasets.detect_format(path)
    loader = datasets.LOADERS.get(fmt)
    options = parse_options(args.option, loader)
    declared = {p.name for p in getattr(loader, "options", ())}
    for flag, key, value in (("--outliers-from-label", "outlier_label", args.outliers_from_label),
                             ("--no-known-outliers", "known_outliers", False if args.no_known_outliers else None)):
        if value is None:
            continue
        if key not in declared:
            raise UsageError(f"{flag} does not apply to {loader.label} files: that loader reads no labels"
                             + (" that could mark outliers" if key == "outlier_label" else " variable"))
        if key in options:
            raise UsageError(f"{flag} and --option {key}=... say the same thing; give one of them")
        options[key] = value
    return datasets.load(path, format=args.format, **options)


def open_data(args, methods, con):
    """The data of ``run``: in memory or out of core (module doc), said in one line when out of
    core. Methods that cannot run on it are refused before the data are read."""
    reason = out_of_core_reason(args, methods)
    if reason is None:
        ds = load_data(args)
        con.dataset(ds)
        return ds
    check_out_of_core(methods, reason, args.data)
    con.note(f"out of core: {reason}")
    try:
        return open_lazy_data(args)   # a video opens as frames, anything else as a table
    except ImportError as exc:   # an extra that is not installed: its message says which
        raise UsageError(str(exc)) from None


def out_of_core_settings(args, out: str, work: str):
    """The robustcore.bigdata settings of the fits of one command: where results too large for
    the budget go (``work`` inside the output folder), the budget and the scheduler."""
    from robustcore.bigdata import settings
    return settings(scheduler=args.scheduler, store_dir=os.path.join(out, work), memory_budget=budget_of(args))
