"""The headless command line: the window's methods, parameters and exports without a window.

``robust-studio run``     fit methods on a file or demo and write scores, arrays, figures, run.json
``robust-studio replay``  re-run a saved session (or a run.json) and write the same files
``robust-studio methods`` list the methods and their parameters
``robust-studio demos``   list the bundled demo data sets

:func:`main` takes the argument list and returns the exit code: 0 success, 1 a replay that did
not reproduce its numbers (with ``--check``) or an unexpected failure, 2 bad arguments,
parameters or files (the library's message on stderr, no traceback), 130 interrupted.
Nothing here imports Qt unless figures are asked for.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback

__all__ = ["main", "VIEWS", "parse_params", "parse_options", "parse_selection"]

PROG = "robust-studio"
VIEWS = ("scatter", "detail", "decomposition", "ranking", "contour", "learning-curve", "comparison")
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
RUN_FILE = "run.json"
# Views that draw every result at once are written once, without a method prefix.
SHARED_VIEWS = ("comparison",)


class UsageError(Exception):
    """A problem with what the user asked for: reported on stderr, exit code 2."""


# -- parsing ---------------------------------------------------------------------------------------

def _split_kv(text: str, flag: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{flag} must be KEY=VALUE; got {text!r}")
    return key.strip(), value


def parse_params(methods: list, items: list[str]) -> dict:
    """``--param`` strings -> {method name: {param: value}}, parsed and checked by each ``Param``.

    ``key=value`` applies to every chosen method that has a parameter ``key``;
    ``method:key=value`` to that method only. A key no chosen method has is an error that lists
    the parameters that exist.
    """
    out = {m.name: {} for m in methods}
    by_name = {m.name: m for m in methods}
    for item in items:
        key, value = _split_kv(item, "--param")
        targets = methods
        if ":" in key:
            mname, key = (s.strip() for s in key.split(":", 1))
            if mname not in by_name:
                raise UsageError(f"--param {item!r} names method {mname!r}, which is not being run; "
                                 f"methods in this run: {', '.join(by_name)}")
            targets = [by_name[mname]]
        hit = False
        for m in targets:
            spec = next((p for p in m.params() if p.name == key), None)
            if spec is None:
                continue
            hit = True
            try:
                out[m.name][key] = spec.parse(value)
            except ValueError as exc:
                raise UsageError(str(exc) if len(methods) == 1 else f"{m.name}: {exc}") from None
        if not hit:
            names = sorted({p.name for m in targets for p in m.params()})
            which = targets[0].name if len(targets) == 1 else "these methods"
            raise UsageError(f"unknown parameter {key!r}; {which} take(s): {', '.join(names)}")
    return out


def parse_options(items: list[str], loader=None) -> dict:
    """Loader ``--option key=value`` strings, parsed by the loader's own option declarations.

    Without a loader (or for a name it does not declare) values are JSON literals (numbers,
    true/false, null) or text, and the loader's validation reports what is wrong.
    """
    specs = {p.name: p for p in getattr(loader, "options", ())}
    out = {}
    for item in items:
        key, value = _split_kv(item, "--option")
        if key in specs:
            out[key] = specs[key].parse(value)
            continue
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def parse_selection(text: str | None, n_samples: int) -> list[int]:
    """``"3,17,40-45"`` -> sorted unique 0-based sample indices, each checked against the data."""
    if not text:
        return []
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise UsageError(f"--select must be indices and ranges like 3,17,40-45; got {part!r}") from None
        if a > b:
            raise UsageError(f"--select range {part!r} runs backwards; write it as {b}-{a}")
        if a < 0 or b >= n_samples:
            raise UsageError(f"--select index {a if a < 0 else b} is outside the data set: it has "
                             f"{n_samples} samples, indices 0 to {n_samples - 1}")
        out.update(range(a, b + 1))
    return sorted(out)


def _parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if w < 50 or h < 50 or w > 10000 or h > 10000:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT in pixels, each in [50, 10000]; "
                                         f"got {text!r}") from None
    return w, h


def _parse_scale(text: str) -> float:
    try:
        v = float(text)
        if not 0.1 <= v <= 10:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"scale must be a number in [0.1, 10]; got {text!r}") from None
    return v


def _parse_budget(text: str) -> int:
    try:
        v = float(text)
        if not 1e-6 <= v <= 1e6:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"memory budget must be a number of gigabytes in [1e-6, 1e6]; "
                                         f"got {text!r}") from None
    return int(v * 2**30)


def _loader_names() -> list[str]:
    from robustcore.datasets import LOADERS
    return list(LOADERS)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse's own errors go the same way as ours: one line on stderr, exit code 2.
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Robust Subspace Studio without a window: run methods on data, "
                "replay saved sessions, list methods and demos. Without a command, "
                f"'{PROG}' opens the window.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    m = sub.add_parser("methods", help="list the methods with their parameters",
                       description="List the methods, what they do, their views and parameters.")
    m.add_argument("names", nargs="*", metavar="METHOD", help="only these methods")
    m.add_argument("--json", action="store_true", help="machine-readable output")

    d = sub.add_parser("demos", help="list the bundled demo data sets",
                       description="List the bundled demo data sets with a description of each.")
    d.add_argument("--json", action="store_true", help="machine-readable output")

    def outputs(sp):
        sp.add_argument("--out", required=True, metavar="DIR", help="folder for the results (created)")
        sp.add_argument("--figure", action="append", default=[], choices=VIEWS, metavar="VIEW",
                        help=f"also write this view as PNG and SVG (repeatable): {', '.join(VIEWS)}")
        sp.add_argument("--size", type=_parse_size, default=(1000, 700), metavar="WxH",
                        help="figure size in pixels (default 1000x700)")
        sp.add_argument("--scale", type=_parse_scale, default=1.0,
                        help="PNG resolution factor (default 1; 2 for print)")
        sp.add_argument("--video", choices=("mp4", "gif", "png"), default=None,
                        help="also write the robust PCA decomposition of image data (original | L | S | "
                        "mask per frame) as METHOD-decomposition.mp4 (needs the 'video' extra), .gif, or "
                        "PNG images in METHOD-decomposition-frames/")
        sp.add_argument("--force", action="store_true", help="overwrite files that already exist")
        sp.add_argument("-q", "--quiet", action="store_true", help="print only errors")

    def out_of_core(sp):
        sp.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run out-of-core work on this dask.distributed scheduler (e.g. tcp://host:8786) "
                        "instead of this machine's threads")
        sp.add_argument("--memory-budget", metavar="GB", type=_parse_budget, default=None,
                        help="out of core: results larger than this stay on disk in Zarr stores (default 1)")

    r = sub.add_parser("run", help="run methods on a data file or demo and write the results",
                       description="Fit one or more methods and write, per method, "
                       "METHOD-samples.csv (scores and 0/1 flags), METHOD-arrays.npz, "
                       "METHOD-features.csv (feature rankings), METHOD-VIEW.png/.svg for each "
                       f"--figure, and {RUN_FILE} (a session file: '{PROG} replay' repeats the run).")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", metavar="PATH", help="data file (CSV, LIBSVM, MAT, NPY/NPZ, images...)")
    src.add_argument("--demo", metavar="NAME", help=f"bundled demo (see '{PROG} demos')")
    r.add_argument("--format", metavar="NAME", default=None, help="loader for --data when the extension "
                   "does not tell: " + ", ".join(_loader_names()))
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="loader option for --data (repeatable), e.g. label_column=species; an unknown "
                   "option's error lists the loader's options")
    r.add_argument("--lazy", action="store_true",
                   help="open --data out of core (HDF5, Zarr, .npy tables and videos are read block by "
                   "block, never whole); automatic for .h5/.hdf5/.zarr. Methods that run out of core: "
                   "pca, residual, coherence-pursuit (tables) and online-rpca (videos). Writes "
                   "METHOD-results.zarr (per-sample results), METHOD-arrays.npz, METHOD-summary.json, "
                   f"figures and {RUN_FILE} ('{PROG} replay' repeats it out of core)")
    out_of_core(r)
    r.add_argument("--outliers-from-label", metavar="VALUE", default=None, dest="outliers_from_label",
                   help="mark the samples whose label is VALUE as the known outliers (the ground truth "
                   "methods are evaluated against), e.g. 1; the labels come from the file or from "
                   "--option label_column=...")
    r.add_argument("--no-known-outliers", action="store_true", dest="no_known_outliers",
                   help="do not read a 0/1 labels variable with fewer 1s than 0s in a MATLAB or NPZ file "
                   "as known outliers (by default it is, as in ODDS outlier tables: 1 = outlier)")
    r.add_argument("--method", action="append", required=True, metavar="NAME",
                   help=f"method to run (repeatable; see '{PROG} methods')")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="parameter by the estimator's own name (repeatable), e.g. n_components=5; "
                   "METHOD:KEY=VALUE for one method when several run")
    r.add_argument("--select", metavar="INDICES", default=None,
                   help="samples to select (highlighted in figures, recorded in run.json), "
                   "e.g. 3,17,40-45 (0-based)")
    r.add_argument("--seed", type=int, default=None,
                   help="random_state for random methods when not given by --param (default 0); "
                   f"it is recorded in {RUN_FILE}")
    outputs(r)

    rp = sub.add_parser("replay", help="re-run a saved session or run.json and write the results",
                        description="Load a session file (or a run.json), verify its data by sha256, "
                        "re-run every fit with the saved parameters and seeds, and write the same "
                        "files as 'run'. The numbers are compared with those the session recorded.")
    rp.add_argument("session", metavar="SESSION.json")
    rp.add_argument("--data", metavar="PATH", help="the data file, if it has moved (verified by sha256)")
    rp.add_argument("--check", action="store_true",
                    help="exit with code 1 if the numbers differ from the saved ones")
    rp.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance of the comparison")
    out_of_core(rp)
    outputs(rp)
    return p


# -- output helpers ------------------------------------------------------------------------------

class _Console:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self._last = 0.0
        self._tty = sys.stderr.isatty()

    def say(self, text: str = "") -> None:
        if not self.quiet:
            print(text)

    def note(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr)

    @staticmethod
    def warn(text: str) -> None:
        # Even with --quiet: something in the data was not taken in as it was.
        print(f"warning: {text}", file=sys.stderr)

    def dataset(self, ds) -> None:
        """What was loaded, and whatever the loader could not take in as it was."""
        if ds.outliers is not None:
            source = f" (from {ds.outliers_from})" if ds.outliers_from else ""
            self.note(f"data: {ds.n_samples} x {ds.n_features}, {int(ds.outliers.sum())} known outliers{source}")
        for w in ds.warnings:
            self.warn(w)

    def progress(self, label: str):
        if self.quiet or not self._tty:
            return None

        def cb(fraction, message):
            now = time.monotonic()
            if now - self._last > 0.1 or fraction >= 1.0:
                self._last = now
                sys.stderr.write(f"\r{label}: {100 * fraction:3.0f}% {message[:50]:<50}")
                sys.stderr.flush()
        return cb

    def end_progress(self) -> None:
        if not self.quiet and self._tty:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()


def _figure_stem(method: str, view: str) -> str:
    return view if view in SHARED_VIEWS else f"{method}-{view}"


def _video_name(method: str, kind: str) -> str:
    return f"{method}-decomposition" + ("-frames" if kind == "png" else f".{kind}")


def _method_files(method, figures: list[str], views_of, video: str | None = None) -> list[str]:
    names = [f"{method}-samples.csv", f"{method}-arrays.npz", f"{method}-features.csv"]
    if video and "decomposition" in views_of(method):
        names.append(_video_name(method, video))
    for v in figures:
        if v in views_of(method):
            names += [f"{_figure_stem(method, v)}.png", f"{_figure_stem(method, v)}.svg"]
    return names


def _check_out(out: str, methods: list[str], figures: list[str], force: bool, views_of,
               video: str | None = None) -> str:
    """The --out folder, checked (nothing is created or written yet)."""
    names = [RUN_FILE] + [n for m in methods for n in _method_files(m, figures, views_of, video)]
    return _check_names(out, list(dict.fromkeys(names)), force)


def _check_names(out: str, names: list[str], force: bool) -> str:
    """The --out folder, refused (without --force) when it already holds any of ``names``."""
    out = os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} is a file; give a folder")
    if not force and os.path.isdir(out):
        existing = [n for n in names if os.path.exists(os.path.join(out, n))]
        if existing:
            raise UsageError(f"{out} already holds {', '.join(existing)}; pass --force to overwrite, "
                             f"or choose another --out folder")
    return out


def _create_out(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out folder {out}: {exc.strerror or exc}") from None


def _check_figures(figures: list[str], methods: list) -> None:
    """Before anything runs: each figure's view is drawn by a method of this run, and views that
    compare methods have enough of them (the registry says what each view needs)."""
    from robustcore.methods import methods_for_view, view_requirement
    names = [m.name for m in methods]
    for v in figures:
        if not any(v in m.views for m in methods):
            drawn = "; ".join(f"{m.name}: {', '.join(m.views)}" for m in methods)
            raise UsageError(f"--figure {v}: no method in this run draws that view ({drawn})")
        why = view_requirement(v, names)
        if why is not None:
            more = [m for m in methods_for_view(v) if m not in names]
            raise UsageError(f"--figure {v}: {why}; add " + " or ".join(f"--method {m}" for m in more)
                             + "; nothing was written")


def _check_video(video: str | None, method_names: list[str], dataset=None) -> None:
    """--video needs a pcp run (checked before anything runs), image data (once loaded), and
    PyAV for MP4; a problem stops the run before any file is written."""
    if not video:
        return
    from robustcore.methods import methods_for_view
    if not any(m in method_names for m in methods_for_view("decomposition")):
        raise UsageError("--video writes the robust PCA decomposition: add --method pcp; nothing was written")
    from app.video import has_mp4
    if video == "mp4" and not has_mp4():
        raise UsageError("--video mp4 needs PyAV: pip install 'robust-subspace-studio[video]', or use "
                         "--video gif or --video png; nothing was written")
    if dataset is not None and not dataset.is_image:
        raise UsageError(f"--video needs image data (frames with an image shape); {dataset.name} is a table; "
                         f"nothing was written")


def _check_drawable(figures: list[str], results: dict, dataset, session) -> None:
    """After the fits, before any file is written: each figure has what it draws (a contour
    map needs control limits, which a full-rank subspace does not have)."""
    if not figures:
        return
    _offscreen_if_headless()
    from app._qt import ensure_app
    from app.session import apply_to_state
    from app.state import AppState
    from app.views.result_views import _view_class
    ensure_app()
    state = AppState()
    apply_to_state(session, state, dataset, results)
    for view in figures:
        cls = _view_class(view)
        for method in _drawn_methods(view, results):
            why = cls.missing(state, method)
            if why is not None:
                raise UsageError(f"--figure {view} cannot be drawn for {method}: {why}; nothing was written")


def _drawn_methods(view: str, results: dict) -> list[str]:
    drawn = [m for m in results if view in _views_of(m)]
    return drawn[:1] if view in SHARED_VIEWS else drawn


def _offscreen_if_headless() -> None:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or
                                                  os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


_LAZY_ONLY = (".h5", ".hdf5", ".he5", ".zarr")


def _wants_lazy(args) -> bool:
    if args.demo is not None:
        if args.lazy:
            raise UsageError("--lazy applies to --data files, not to the bundled demos")
        return False
    p = args.data.rstrip("/\\")
    return args.lazy or p.lower().endswith(_LAZY_ONLY)


def _load_lazy(args):
    from robustcore.bigdata import open_lazy
    if args.format:
        raise UsageError("--format does not apply to data opened out of core (the extension decides)")
    if not os.path.exists(args.data):
        raise UsageError(f"data file {args.data} does not exist")
    from robustcore.datasets import LOADERS
    from robustcore.datasets._video import VIDEO_SUFFIXES
    video = args.data.lower().endswith(VIDEO_SUFFIXES)
    try:
        options = parse_options(args.option, LOADERS["video"] if video else None)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return open_lazy(args.data, **options)


def _load_data(args):
    from robustcore import datasets
    outlier_flags = args.outliers_from_label is not None or args.no_known_outliers
    if args.demo is not None:
        if args.option or args.format or outlier_flags:
            raise UsageError("--option, --format, --outliers-from-label and --no-known-outliers apply to --data "
                             "files, not to demos")
        return datasets.demo(args.demo)
    path = args.data
    if not os.path.exists(path):
        raise UsageError(f"data file {path} does not exist")
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


def _export(results: dict, dataset, out: str, force: bool) -> list[str]:
    from app.export import export_results
    written = []
    for res in results.values():
        written += export_results(res, dataset, out, overwrite=force)
    return written


def _render(results: dict, dataset, session, out: str, figures: list[str], size, scale: float,
            force: bool) -> list[str]:
    """Draw the requested views offscreen: a PNG and an SVG per method that has the view (one
    pair for views that show every result, such as the comparison)."""
    if not figures:
        return []
    _offscreen_if_headless()
    from app._qt import ensure_app
    from app.session import apply_to_state
    from app.state import AppState
    from app.views import render_view
    ensure_app()
    state = AppState()
    apply_to_state(session, state, dataset, results)
    written = []
    for view in figures:
        for method in _drawn_methods(view, results):
            state.set_current_method(method)
            for ext in ("png", "svg"):
                path = os.path.join(out, f"{_figure_stem(method, view)}.{ext}")
                if os.path.exists(path) and not force:
                    raise UsageError(f"{path} already exists; pass --force to overwrite")
                render_view(view, state, path, scale=scale, size=size)
                _stamp_figure(path, results[method], dataset, view)
                written.append(path)
    return written


def _stamp_figure(path: str, result, dataset, view: str) -> None:
    """Write what produced a figure into the file: a PNG text chunk, an SVG <metadata> element."""
    import struct
    import zlib
    from xml.sax.saxutils import escape

    from app.export import atomic_write_bytes, provenance_header
    header = dict(provenance_header(result, dataset), view=view)
    text = json.dumps(header, sort_keys=True)  # ASCII: valid in a PNG tEXt chunk
    with open(path, "rb") as fh:
        data = fh.read()
    if path.endswith(".png"):
        end = data.rfind(b"IEND")
        if end < 4:
            return
        body = b"tEXt" + b"Comment\0" + text.encode("ascii")
        chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
        data = data[:end - 4] + chunk + data[end - 4:]
    else:
        svg = data.decode("utf-8")
        start = svg.find("<svg")
        close = svg.find(">", start)
        if start < 0 or close < 0:
            return
        meta = f'\n<metadata id="robust-studio-provenance">{escape(text)}</metadata>'
        data = (svg[:close + 1] + meta + svg[close + 1:]).encode("utf-8")
    atomic_write_bytes(path, data, overwrite=True)


def _print_result(con: _Console, res) -> None:
    con.say(f"{res.method}: done in {res.elapsed:.2f} s")
    for k, v in res.summary.items():
        con.say(f"  {k}: {v:.6g}" if isinstance(v, float) else f"  {k}: {v}")
    for w in res.warnings:
        con.note(f"  warning ({res.method}): {w}")


# -- commands ------------------------------------------------------------------------------------

def _cmd_methods(args) -> int:
    from robustcore.methods import METHODS, get_method
    chosen = [get_method(n) for n in args.names] if args.names else list(METHODS.values())
    if args.json:
        out = []
        for m in chosen:
            out.append({"name": m.name, "title": m.title, "description": m.description,
                        "views": list(m.views), "needs_labels": m.needs_labels,
                        "accepts_sparse": m.accepts_sparse,
                        "params": [{"name": p.name, "type": p.kind.__name__, "default": p.default,
                                    "allowed": p.allowed(), "help": p.help, "advanced": p.advanced}
                                   for p in m.params()]})
        print(json.dumps(out, indent=2, default=str))
        return EXIT_OK
    for m in chosen:
        print(f"{m.name}  ({m.title})")
        print(f"    {m.description}")
        needs = " (needs class labels)" if m.needs_labels else ""
        print(f"    views: {', '.join(m.views)}{needs}")
        for p in m.params():
            default = "None" if p.default is None else p.default
            print(f"    --param {p.name}={default}  [{p.kind.__name__}; {p.allowed()}]"
                  f"{'  (advanced)' if p.advanced else ''}")
            print(f"        {p.help}")
        print()
    return EXIT_OK


def _cmd_demos(args) -> int:
    from robustcore.datasets import demos
    items = demos()
    if args.json:
        print(json.dumps([{"name": k, "description": v} for k, v in items.items()], indent=2))
        return EXIT_OK
    width = max(len(k) for k in items)
    for k, v in items.items():
        print(f"{k:<{width}}  {v}")
    return EXIT_OK


def _cmd_run(args) -> int:
    from app import session as S
    from robustcore.methods import get_method
    con = _Console(args.quiet)
    names = list(dict.fromkeys(args.method))  # keep order, drop repeats
    methods = [get_method(n) for n in names]
    params = parse_params(methods, args.param)
    for m in methods:
        params[m.name] = S.pin_seed(m, params[m.name], args.seed)
        m.validate(params[m.name])  # bad combinations fail before the data is loaded
    _check_figures(args.figure, methods)
    lazy = _wants_lazy(args)
    if (args.scheduler or args.memory_budget) and not lazy:
        raise UsageError("--scheduler and --memory-budget apply to data opened out of core (--lazy, or an "
                         ".h5/.hdf5/.zarr file)")
    if args.video and lazy:
        raise UsageError("--video needs the data in memory; it is not available with --lazy")
    if lazy:
        from app.cli_lazy import run_lazy
        try:
            return run_lazy(args, con, methods, params)
        except ImportError as exc:   # an extra that is not installed: its message says which
            raise UsageError(str(exc)) from None
    _check_video(args.video, names)
    out = _check_out(args.out, names, args.figure, args.force, _views_of, args.video)
    dataset = _load_data(args)
    _check_video(args.video, names, dataset)
    con.dataset(dataset)
    selection = parse_selection(args.select, dataset.n_samples)
    results = {}
    for m in methods:
        try:
            results[m.name] = m.run(dataset, params[m.name], progress=con.progress(m.name))
        finally:
            con.end_progress()
        _print_result(con, results[m.name])
    session = S.session_from_results(dataset, results, current_method=names[0], selection=selection,
                                     view=args.figure[0] if args.figure else None, base_dir=out)
    _write_outputs(con, args, session, dataset, results, out)
    return EXIT_OK


def _write_outputs(con, args, session, dataset, results, out) -> list[str]:
    """Figures, exports and run.json; run.json points to each method's arrays file so that a
    replay can compare its numbers with them. What the figures need is checked first, and they
    are drawn first: a figure that cannot be drawn leaves no exports without a run.json."""
    from app import session as S
    _check_drawable(args.figure, results, dataset, session)
    _create_out(out)
    written = _render(results, dataset, session, out, args.figure, args.size, args.scale, args.force)
    written += _export(results, dataset, out, args.force)
    if args.video:
        from app.video import export_video
        from robustcore.methods import methods_for_view
        for m in (m for m in methods_for_view("decomposition") if m in results):
            path = os.path.join(out, _video_name(m, args.video))
            files = export_video(path, dataset, results[m], overwrite=args.force, progress=con.progress("video"))
            con.end_progress()
            written += [path] if args.video == "png" else files
    for rec in session.runs:
        npz = os.path.join(out, f"{rec.method}-arrays.npz")
        if npz in written:
            with open(npz, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            rec.stored = {"kind": "export", "file": os.path.basename(npz), "sha256": digest}
    run_path = os.path.join(out, RUN_FILE)
    written += S.save_session(run_path, session, dataset=dataset)
    con.say("wrote:")
    for p in written:
        con.say(f"  {p}")
    return written


def _export_arrays(session, rec, con) -> dict | None:
    """The arrays a run exported beside its run.json, if that file is still the one it wrote (a
    plain name in the run.json's own folder: the session's path rules)."""
    from app import session as S
    from robustcore.datasets import DEFAULT_MAX_BYTES, read_npz
    st = rec.stored or {}
    if not isinstance(st, dict) or st.get("kind") != "export" or not session.source:
        return None
    try:
        path, data = S.read_side(session, st.get("file"), "the exported arrays")
        if hashlib.sha256(data).hexdigest() != st.get("sha256"):
            return None
        return read_npz(data, DEFAULT_MAX_BYTES, f"exported arrays {path}", error=S.SessionError)
    except FileNotFoundError:
        return None
    except S.SessionError as exc:
        con.warn(f"{rec.method}: the exported arrays were not compared: {exc}")
        return None


def _npz_arrays(source) -> dict:
    import numpy as np
    with np.load(source, allow_pickle=False) as z:
        return {k: z[k] for k in z.files if k != "metadata"}


def _views_of(method: str) -> tuple:
    from robustcore.methods import get_method
    return get_method(method).views


# Summary entries that say where a run put its files (not a number it computed): never compared.
_WHERE_KEYS = ("results in",)


def _summary_diffs(rec, res, rtol: float) -> list[str]:
    import math
    diffs = []
    for k, old in rec.summary.items():
        if k in _WHERE_KEYS:
            continue
        new = res.summary.get(k)
        if isinstance(old, bool) or isinstance(new, bool) or not isinstance(old, (int, float)):
            same = old == new or str(old) == str(new)
        elif not isinstance(new, (int, float)):
            same = False
        else:
            same = math.isclose(float(old), float(new), rel_tol=rtol, abs_tol=1e-12)
        if not same:
            diffs.append(f"summary '{k}': saved {old!r}, now {new!r}")
    return diffs


def _cmd_replay(args) -> int:
    from app import session as S
    con = _Console(args.quiet)
    sess = S.load_session(args.session)
    if sess.dataset is None or not sess.runs:
        raise UsageError(f"session {args.session} holds no runs to replay")
    for rec in sess.runs:
        _check_known_method(rec.method)
    _check_figures(args.figure, [_method(r.method) for r in sess.runs])
    if sess.dataset.lazy:
        if args.video:
            raise UsageError("--video needs the data in memory; this session's data was opened out of core")
        from app.cli_lazy import replay_lazy
        try:
            return replay_lazy(args, con, sess)
        except ImportError as exc:   # an extra that is not installed: its message says which
            raise UsageError(str(exc)) from None
    if args.scheduler or args.memory_budget:
        raise UsageError("--scheduler and --memory-budget apply to sessions whose data was opened out of core")
    _check_video(args.video, [r.method for r in sess.runs])
    out = _check_out(args.out, [r.method for r in sess.runs], args.figure, args.force, _views_of, args.video)
    dataset = S.resolve_dataset(sess, path=args.data)
    _check_video(args.video, [r.method for r in sess.runs], dataset)
    con.note(f"data: {sess.dataset.describe()} verified (sha256 {sess.dataset.fingerprint[:12]}…)")
    con.dataset(dataset)
    # Saved numbers are read only to compare (and before anything is overwritten): the point of
    # a replay is to compute again.
    saved, exported = {}, {}
    for rec in sess.runs:
        skipped: list[str] = []
        old = S.stored_result(sess, rec, dataset, skipped)
        for note in skipped:
            con.warn(note.replace("the run is fitted again", "they are not compared"))
        if old is not None:
            saved[rec.method] = old
        arrays = _export_arrays(sess, rec, con)
        if arrays is not None:
            exported[rec.method] = {k: v for k, v in arrays.items() if k != "metadata"}
    results = {}
    problems = []
    for rec in sess.runs:
        m = _method(rec.method)
        if not rec.reproducible:
            con.note(f"warning: {rec.method} was run without a fixed random_state; its numbers will differ")
        try:
            res = m.run(dataset, dict(rec.params), progress=con.progress(rec.method))
        except ValueError as exc:
            raise UsageError(f"{rec.method}: the saved parameters do not fit this data: {exc}") from None
        finally:
            con.end_progress()
        results[rec.method] = res
        _print_result(con, res)
        diffs = _summary_diffs(rec, res, args.rtol)
        if rec.method in saved:
            diffs += S.compare_results(saved[rec.method], res, rtol=args.rtol)
        problems += [f"{rec.method}: {d}" for d in diffs]
    changed = [f"{k} {v} -> {S.library_versions().get(k)}" for k, v in sess.versions.items()
               if k in ("robustcore", "numpy", "scipy") and S.library_versions().get(k) != v]
    if changed:
        con.note("note: library versions differ from the session's: " + "; ".join(changed))
    new = S.Session(dataset=S.DatasetRef.from_dataset(dataset, out),
                    runs=[S.run_record(results[r.method]) for r in sess.runs],
                    current_method=sess.current_method, view=dict(sess.view), selection=list(sess.selection))
    if args.figure and not new.view:
        new.view = {"name": args.figure[0]}
    written = _write_outputs(con, args, new, dataset, results, out)
    for method, old in exported.items():
        npz = os.path.join(out, f"{method}-arrays.npz")
        if npz in written:
            problems += [f"{method}: array {d}" for d in S.compare_arrays(old, _npz_arrays(npz), rtol=args.rtol)]
    return _replay_verdict(args, problems, bool(saved or exported))


def _replay_verdict(args, problems: list[str], compared_arrays: bool) -> int:
    """Say whether a replay reproduced the numbers; the exit code (1 with --check when not)."""
    if problems:
        print("replay did not reproduce the saved numbers:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return EXIT_FAILED if args.check else EXIT_OK
    _Console(args.quiet).note("replay reproduced the saved numbers" + (" and arrays" if compared_arrays else ""))
    return EXIT_OK


def _method(name: str):
    from robustcore.methods import get_method
    return get_method(name)


def _check_known_method(name: str) -> None:
    try:
        _method(name)
    except ValueError as exc:
        raise UsageError(f"the session uses {exc}") from None


# -- entry point ---------------------------------------------------------------------------------

_COMMANDS = {"methods": _cmd_methods, "demos": _cmd_demos, "run": _cmd_run, "replay": _cmd_replay}


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (without the program name); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from robustcore import Cancelled
    try:
        args = build_parser().parse_args(argv)
        return _COMMANDS[args.command](args)
    except SystemExit as exc:  # --help and --version
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into head or less that quit early
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except (ValueError, FileExistsError) as exc:
        # Parameter, data and session errors: the library's own message, as the window shows it.
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"{PROG}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_USAGE
    except (KeyboardInterrupt, Cancelled):
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # a bug: keep the traceback for the report
        traceback.print_exc()
        print(f"{PROG}: internal error; please report it with the traceback above", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    # Through the imported module, so that errors raised by app.cli_lazy (which imports app.cli)
    # are the classes main() catches.
    from app.cli import main as _main
    sys.exit(_main())
