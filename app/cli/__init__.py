"""The headless command line: the window's methods, parameters and exports without a window.

``robust-studio run``     fit methods on a file or demo and write scores, arrays, figures, run.json
``robust-studio replay``  re-run a saved session (or a run.json) and write the same files
``robust-studio methods`` list the methods and their parameters
``robust-studio demos``   list the bundled demo data sets

``run`` and ``replay`` are written once for data in memory and data read out of core: the data
are opened by one decision (:mod:`._data`), every fit goes through the registry
(:meth:`robustcore.methods.Method.run`), the files are written by one writer (:mod:`._outputs`)
and a replay compares them by one comparison (:mod:`._replay`).

:func:`main` takes the argument list and returns the exit code: 0 success, 1 a replay that did
not reproduce its numbers or could not compare them (with ``--check``) or an unexpected failure,
2 bad arguments, parameters or files (the library's message on stderr, no traceback) or a
``--figure`` that could not be drawn (every other file is written; the message says which and
why), 130 interrupted. Nothing here imports Qt unless figures are asked for.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback

from robustcore.datasets import DEFAULT_MEMORY_BUDGET

from ..views.catalog import VIEW_NAMES as VIEWS
from ._console import Console
from ._data import budget_of, open_data, out_of_core_settings
from ._figures import check_figures
from ._outputs import RUN_FILE, WORK, FiguresNotDrawn, check_out, check_video, planned_names, write_outputs
from ._parse import UsageError, parse_budget, parse_options, parse_params, parse_scale, parse_selection, parse_size
from ._replay import differences, saved_numbers, verdict

__all__ = ["main", "build_parser", "VIEWS", "UsageError", "parse_params", "parse_options", "parse_selection",
           "RUN_FILE"]

PROG = "robust-studio"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _loader_names() -> list[str]:
    from robustcore.datasets import LOADERS
    return list(LOADERS)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse's own errors go the same way as ours: one line on stderr, exit code 2.
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _scheduler(text: str) -> str:
    """--scheduler's address, checked as it is parsed: an empty one is an error, not a run on
    this machine."""
    from robustcore.bigdata import check_address
    try:
        return check_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
        sp.add_argument("--size", type=parse_size, default=(1000, 700), metavar="WxH",
                        help="figure size in pixels (default 1000x700)")
        sp.add_argument("--scale", type=parse_scale, default=1.0,
                        help="PNG resolution factor (default 1; 2 for print)")
        sp.add_argument("--video", choices=("mp4", "gif", "png"), default=None,
                        help="also write the robust PCA decomposition of image data (original | L | S | "
                        "mask per frame) as METHOD-decomposition.mp4 (needs the 'video' extra), .gif, or "
                        "PNG images in METHOD-decomposition-frames/")
        sp.add_argument("--force", action="store_true", help="overwrite files that already exist")
        sp.add_argument("-q", "--quiet", action="store_true", help="print only errors")

    def out_of_core(sp):
        sp.add_argument("--scheduler", metavar="ADDRESS", default=None, type=_scheduler,
                        help="run out-of-core work on this dask.distributed scheduler (e.g. tcp://host:8786) "
                        "instead of this machine's threads")
        sp.add_argument("--memory-budget", metavar="GB", type=parse_budget, default=None,
                        help=f"memory the run may use for the data (default {DEFAULT_MEMORY_BUDGET / 2 ** 30:g}): "
                        "a .npy table or a video "
                        "whose float64 copy is larger is read out of core, and results larger than it "
                        "stay on disk in Zarr stores")

    r = sub.add_parser("run", help="run methods on a data file or demo and write the results",
                       description="Fit one or more methods and write, per method, "
                       "METHOD-samples.csv (scores and 0/1 flags; METHOD-results.zarr for data read out "
                       "of core), METHOD-arrays.npz, METHOD-features.csv (feature rankings), "
                       "METHOD-summary.json, METHOD-VIEW.png/.svg for each --figure, and "
                       f"{RUN_FILE} (a session file: '{PROG} replay' repeats the run). Data that would "
                       "not fit the memory budget (HDF5 and Zarr tables always) are read out of core, "
                       "a block at a time; the run says so.")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", metavar="PATH", help="data file (CSV, LIBSVM, MAT, NPY/NPZ, images...)")
    src.add_argument("--demo", metavar="NAME", help=f"bundled demo (see '{PROG} demos')")
    r.add_argument("--format", metavar="NAME", default=None, help="loader for --data when the extension "
                   "does not tell: " + ", ".join(_loader_names()))
    r.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="loader option for --data (repeatable), e.g. label_column=species; an unknown "
                   "option's error lists the loader's options")
    r.add_argument("--lazy", action="store_true",
                   help="read --data out of core even when it would fit the memory budget (.npy tables "
                   "and videos are read block by block, never whole; automatic for .h5/.hdf5/.zarr, for "
                   "data larger than --memory-budget and for online-rpca on a video). Methods that run "
                   "out of core: pca, residual, coherence-pursuit (tables) and online-rpca (videos)")
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
                    help="exit with code 1 if the numbers differ from the saved ones, or if saved "
                    "results exist that could not be compared")
    rp.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance of the comparison")
    rp.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a loader limit for the session's data (repeatable): max_bytes=N or max_features=N. "
                    "The session's own loader options are used as saved, but never its limits above yours "
                    "(by default the policy's)")
    out_of_core(rp)
    outputs(rp)
    return p




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


# -- run and replay ------------------------------------------------------------------------------

def _fit_all(con, dataset, runs, args, out: str, saved_params: bool = False) -> dict:
    """Fit each (method, params) on ``dataset`` through the registry; out of core within the
    run's settings (results too large for the budget go to ``out/.work``, removed by the caller
    once the outputs are written)."""
    results = {}
    lazy = dataset.is_lazy
    with out_of_core_settings(args, out, WORK) if lazy else contextlib.nullcontext():
        if lazy and args.scheduler:
            con.note(f"out-of-core work runs on the Dask scheduler at {args.scheduler}")
        for m, params in runs:
            try:
                results[m.name] = m.run(dataset, params, progress=con.progress(m.name))
            except ValueError as exc:
                from robustcore.datasets import LoadError
                # (a LoadError is about the data themselves: changed since the session, a
                # missing chunk; not about the parameters)
                what = "the saved parameters do not fit this data: " if saved_params and not isinstance(
                    exc, LoadError) else ""
                raise UsageError(f"{m.name}: {what}{exc}") from None
            finally:
                con.end_progress()
            if lazy and results[m.name].storage.out_of_core:
                # the fit's store lies in out/.work, removed after the run: the summary names
                # the store the run leaves, METHOD-results.zarr
                results[m.name].storage.results_in = os.path.join(out, f"{m.name}-results.zarr")
            con.result(results[m.name])
    return results


def _cmd_run(args) -> int:
    from app import session as S
    from robustcore.methods import get_method
    con = Console(args.quiet)
    names = list(dict.fromkeys(args.method))  # keep order, drop repeats
    methods = [get_method(n) for n in names]
    params = parse_params(methods, args.param)
    for m in methods:
        params[m.name] = S.pin_seed(m, params[m.name], args.seed)
        m.validate(params[m.name])  # bad combinations fail before the data is loaded
    check_figures(args.figure, methods)
    check_video(args.video, names)
    dataset = open_data(args, methods, con)
    out = None
    try:
        lazy = dataset.is_lazy
        for m in methods:   # the values the data's shape refuses, before any fit reads the rows
            for why in m.shape_errors(m.validate(params[m.name]), dataset.n_samples, dataset.n_features).values():
                raise UsageError(f"{m.name}: {why}")
        check_video(args.video, names, dataset)
        check_figures(args.figure, methods, dataset)
        out = check_out(args.out, planned_names(names, args.figure, lazy, args.video), args.force)
        selection = parse_selection(args.select, dataset.n_samples)
        results = _fit_all(con, dataset, [(m, params[m.name]) for m in methods], args, out)
        session = S.session_from_results(dataset, results, current_method=names[0], selection=selection,
                                         view=args.figure[0] if args.figure else None, base_dir=out)
        write_outputs(con, args, session, dataset, results, out)
    finally:
        _close(dataset, out)
    return EXIT_OK


def _close(dataset, out) -> None:
    import shutil
    if hasattr(dataset, "close"):
        dataset.close()
    if out is not None:
        shutil.rmtree(os.path.join(out, WORK), ignore_errors=True)


def _replay_data(args, sess, con):
    """The session's data, opened with the user's limits (a session never raises one; the lines
    saying which it asked for and which were used go to stderr), out of core within
    --memory-budget."""
    from app import session as S
    from app.session.limits import LIMIT_NAMES, user_limits
    from robustcore.bigdata import settings
    try:
        limits = parse_options(args.option)
        user_limits(limits)
    except ValueError as exc:
        raise UsageError(f"--option: {exc}; replay uses the session's own loader options and takes only "
                         f"its limits ({', '.join(LIMIT_NAMES)}) from the command line") from None
    notes: list[str] = []
    how = "pass --option {name}=N to replay to raise it, if the data really need more"
    with settings(memory_budget=budget_of(args)) if sess.dataset.lazy else contextlib.nullcontext():
        dataset = S.resolve_dataset(sess, path=args.data, limits=limits, notes=notes, how=how)
    for n in notes:
        con.warn(n)
    return dataset


def _cmd_replay(args) -> int:
    from app import session as S
    from robustcore.methods import get_method
    con = Console(args.quiet)
    sess = S.load_session(args.session)
    from app.session.reopen import interrupted_notes
    for note in interrupted_notes(sess):
        con.warn(note)
    if sess.dataset is None or not sess.runs:
        raise UsageError(f"session {args.session} holds no runs to replay")
    methods = []
    for rec in sess.runs:
        try:
            methods.append(get_method(rec.method))
        except ValueError as exc:
            raise UsageError(f"the session uses {exc}") from None
    names = [m.name for m in methods]
    check_figures(args.figure, methods)
    lazy = bool(sess.dataset.lazy)
    if lazy and args.video:
        raise UsageError("--video needs the data in memory; this session's data are read out of core")
    if not lazy and args.scheduler:
        raise UsageError("--scheduler applies to sessions whose data are read out of core; this session's "
                         "data were loaded into memory")
    check_video(args.video, names)
    out = check_out(args.out, planned_names(names, args.figure, lazy, args.video), args.force)
    dataset = _replay_data(args, sess, con)
    try:
        if lazy:
            from app.session.identity import describe_check
            con.note(f"data: {sess.dataset.describe()} read out of core and checked by {describe_check(sess.dataset)}")
        else:
            con.note(f"data: {sess.dataset.describe()} verified (sha256 {sess.dataset.fingerprint[:12]}…)")
            con.dataset(dataset)
        check_video(args.video, names, dataset)
        # Saved numbers are read only to compare, and before anything is overwritten: the point
        # of a replay is to compute again.
        saved = saved_numbers(sess, dataset, con)
        for rec in sess.runs:
            if not rec.reproducible:
                con.warn(f"{rec.method} was run without a fixed random_state; its numbers will differ")
        results = _fit_all(con, dataset, [(m, dict(r.params)) for m, r in zip(methods, sess.runs)], args, out,
                           saved_params=True)
        if lazy:
            # The whole content against the session's digest, from the fits' own first pass
            # (before anything is written: changed data write nothing).
            from app.session.identity import check_content
            said = check_content(sess.dataset, dataset, progress=con.progress("checking the data"))
            con.end_progress()
            if said:
                con.note(said)
        problems, incomplete = [], []
        for rec in sess.runs:
            diffs, compared = differences(rec, results[rec.method], saved[rec.method], dataset, args.rtol)
            problems += [f"{rec.method}: {d}" for d in diffs]
            incomplete += [f"{rec.method}: {why}" for why in saved[rec.method].unreadable]
            if not compared:
                incomplete.append(f"{rec.method}: the session saved no numbers of this run to compare")
        changed = [f"{k} {v} -> {S.library_versions().get(k)}" for k, v in sess.versions.items()
                   if k in ("robustcore", "numpy", "scipy") and S.library_versions().get(k) != v]
        if changed:
            con.note("note: library versions differ from the session's: " + "; ".join(changed))
        new = S.Session(dataset=S.DatasetRef.from_dataset(dataset, out),
                        runs=[S.run_record(results[r.method]) for r in sess.runs],
                        current_method=sess.current_method, view=dict(sess.view), selection=list(sess.selection))
        if args.figure and not new.view:
            new.view = {"name": args.figure[0]}
        not_drawn = None
        try:
            write_outputs(con, args, new, dataset, results, out)
        except FiguresNotDrawn as exc:   # the comparison is still told
            not_drawn = exc
    finally:
        _close(dataset, out)
    code = verdict(args, con, problems, incomplete, any(s.arrays for s in saved.values()))
    if not_drawn is not None:   # a failed comparison's code says more than a missing figure
        print(f"{PROG}: error: {not_drawn}", file=sys.stderr)
        return code or EXIT_USAGE
    return code


# -- entry point ---------------------------------------------------------------------------------

_COMMANDS = {"methods": _cmd_methods, "demos": _cmd_demos, "run": _cmd_run, "replay": _cmd_replay}


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (without the program name); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from robustcore import Cancelled
    try:
        args = build_parser().parse_args(argv)
        if args.command in ("run", "replay"):
            from app.writing import install_termination_cleanup
            install_termination_cleanup()   # SIGTERM leaves no temporary file behind
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
    except Exception:  # noqa: BLE001 - a bug: keep the traceback for the report
        traceback.print_exc()
        print(f"{PROG}: internal error; please report it with the traceback above", file=sys.stderr)
        return EXIT_FAILED
