"""The command line out of core: ``run --lazy`` and the replay of such a run.

Per method a lazy run writes ``METHOD-results.zarr`` (per-sample scores ``score_*``, flags
``flag_*`` and per-row arrays such as the projection, read back by slices), ``METHOD-arrays.npz``
(the small arrays), ``METHOD-summary.json``, a PNG and SVG per ``--figure``, and ``run.json``: a
session that ``robust-studio replay`` repeats out of core. run.json records, per run, the sha256 of
the arrays file and the manifest of the results store (:mod:`app.session.stores`); a replay
compares the new numbers with both, the per-row arrays a block of rows at a time.

Data opened out of core is identified cheaply, never by a full sha256 of a 10 GB file: run.json
records its size and the sha256 of its first and last MiB (a Zarr folder: its files' names and
sizes and its metadata; :mod:`app.session.identity`), which a replay checks, so a copy of the
data elsewhere is accepted and a changed file refused.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil

import numpy as np

__all__ = ["lazy_files", "run_lazy", "replay_lazy"]

WORK = ".work"


def lazy_files(method: str) -> list[str]:
    return [f"{method}-results.zarr", f"{method}-arrays.npz", f"{method}-summary.json"]


def _cli():
    from app import cli
    return cli


def _figure_files(methods: list[str], figures: list[str]) -> list[str]:
    cli = _cli()
    return [f"{cli._figure_stem(m, v)}.{ext}" for v in figures for m in methods if v in cli._views_of(m)
            for ext in ("png", "svg")]


def _check_out(out: str, methods: list[str], figures: list[str], force: bool) -> str:
    cli = _cli()
    names = [cli.RUN_FILE] + [n for m in methods for n in lazy_files(m)] + _figure_files(methods, figures)
    return cli._check_names(out, list(dict.fromkeys(names)), force)


def _able(methods) -> None:
    from robustcore.methods import METHODS
    able = [m.name for m in METHODS.values() if m.lazy is not None]
    for m in methods:
        if m.lazy is None:
            raise _cli().UsageError(f"{m.name} needs the data in memory; methods that run out of core: "
                                    f"{', '.join(able)}")


def _fit_all(con, dataset, runs, args, out: str) -> dict:
    """Fit each (method, params) out of core; results too large for the budget go to ``out/.work``
    (removed by the caller once the outputs are written)."""
    from robustcore.bigdata import settings
    cli = _cli()
    results = {}
    with settings(scheduler=args.scheduler, store_dir=os.path.join(out, WORK), memory_budget=args.memory_budget):
        if args.scheduler:
            con.note(f"out-of-core work runs on the Dask scheduler at {args.scheduler}")
        for m, params in runs:
            try:
                results[m.name] = m.run(dataset, params, progress=con.progress(m.name))
            except ValueError as exc:
                raise cli.UsageError(f"{m.name}: {exc}") from None
            finally:
                con.end_progress()
            cli._print_result(con, results[m.name])
    return results


def run_lazy(args, con, methods, params) -> int:
    """``robust-studio run --lazy``: fit out of core and write the results, figures and run.json."""
    from app import session as S
    cli = _cli()
    _able(methods)
    names = [m.name for m in methods]
    out = _check_out(args.out, names, args.figure, args.force)
    dataset = cli._load_lazy(args)
    try:
        selection = cli.parse_selection(args.select, dataset.n_samples)
        results = _fit_all(con, dataset, [(m, params[m.name]) for m in methods], args, out)
        session = S.session_from_results(dataset, results, current_method=names[0], selection=selection,
                                         view=args.figure[0] if args.figure else None, base_dir=out)
        _write_outputs(con, args, session, dataset, results, out)
    finally:
        dataset.close()
        shutil.rmtree(os.path.join(out, WORK), ignore_errors=True)
    return cli.EXIT_OK


def _split(res, n: int) -> tuple[dict, dict]:
    """(per-row fields as named in the results store, small arrays as named in the NPZ)."""
    per_row = {f"score_{k}": v for k, v in res.sample_scores.items()}
    per_row.update({f"flag_{k}": v for k, v in res.flags.items()})
    small = {}
    for k, v in res.arrays.items():
        if getattr(v, "shape", None) and v.shape[0] == n and len(v.shape) <= 2 and n > 1:
            per_row[k] = v
        else:
            small[k] = np.asarray(v)
    return per_row, small


def _write_result(res, dataset, out: str, force: bool) -> tuple[list[str], dict]:
    """The three files of one result; returns (paths, run.json's ``stored`` record)."""
    import zarr

    from app.export import atomic_write_bytes, provenance_header
    from app.session.stores import store_manifest
    cli = _cli()
    per_row, small = _split(res, dataset.n_samples)
    zpath = os.path.join(out, f"{res.method}-results.zarr")
    partial = zpath + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    group = zarr.open_group(partial, mode="w")
    make = group.create_array if hasattr(group, "create_array") else group.create_dataset
    n = dataset.n_samples
    for k, v in per_row.items():
        shape = tuple(v.shape)
        row_bytes = max(1, int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(v.dtype).itemsize)
        rows = max(1, min(n, (16 << 20) // row_bytes))
        z = make(k, shape=shape, dtype=v.dtype, chunks=(rows,) + shape[1:])
        for s0 in range(0, n, rows):      # block by block: a store of any size, in bounded memory
            z[s0:s0 + rows] = np.asarray(v[s0:s0 + rows])
    header = provenance_header(res, dataset)
    group.attrs["robust_studio"] = json.loads(json.dumps({**header, "summary": res.summary}, default=str))
    if os.path.exists(zpath):
        if not force:
            raise cli.UsageError(f"{zpath} already exists; pass --force to overwrite")
        shutil.rmtree(zpath)
    os.replace(partial, zpath)
    buf = io.BytesIO()
    np.savez_compressed(buf, metadata=np.array(json.dumps(header, default=str)), **small)
    data = buf.getvalue()
    npz = atomic_write_bytes(os.path.join(out, f"{res.method}-arrays.npz"), data, overwrite=True)
    summary = {**header, "summary": res.summary, "elapsed_s": res.elapsed,
               "data": {**header.get("data", {}), "out_of_core": dataset.summary()},
               "per_sample_results": os.path.basename(zpath)}
    js = atomic_write_bytes(os.path.join(out, f"{res.method}-summary.json"),
                            json.dumps(summary, indent=2, default=str).encode("utf-8"), overwrite=True)
    stored = {"kind": "export", "file": os.path.basename(npz), "sha256": hashlib.sha256(data).hexdigest(),
              "store": {"name": os.path.basename(zpath), **store_manifest(zpath)}}
    return [zpath, npz, js], stored


def _write_outputs(con, args, session, dataset, results, out) -> list[str]:
    """Figures first (what they need is checked before anything is written), then each result's
    files, then run.json naming them."""
    from app import session as S
    cli = _cli()
    _check_drawable(args.figure, results, dataset, session)
    cli._create_out(out)
    written = cli._render(results, dataset, session, out, args.figure, args.size, args.scale, args.force)
    for rec in session.runs:
        files, rec.stored = _write_result(results[rec.method], dataset, out, args.force)
        written += files
    written += S.save_session(os.path.join(out, cli.RUN_FILE), session, dataset=dataset)
    con.say("wrote:")
    for p in written:
        con.say(f"  {p}")
    return written


def _check_drawable(figures, results, dataset, session) -> None:
    """The views that cannot draw data opened out of core are refused with the reason, then the
    window's own check (:meth:`ResultView.missing`) runs."""
    cli = _cli()
    for view in figures:
        if view in NOT_OUT_OF_CORE:
            raise cli.UsageError(f"--figure {view} is not available with --lazy: {NOT_OUT_OF_CORE[view]}; "
                                 f"nothing was written")
    cli._check_drawable(figures, results, dataset, session)


#: Views the command line does not draw from data opened out of core, and why. The scatter (a
#: density image with the flagged samples on top, for many points) and the decomposition (frames
#: read one at a time from the video and the results store) do.
NOT_OUT_OF_CORE = {
    "detail": "it reconstructs samples from the whole data set (or the whole low-rank part) read into "
              "memory",
    "contour": "the out-of-core fit does not compute the map's plane and residual direction",
    "comparison": "its table lists sample names, which data opened out of core does not have",
}


# -- replay -------------------------------------------------------------------------------------

def _saved_store(session, rec, con):
    """name -> Zarr array of the per-row results the run wrote beside its run.json, if the store is
    still what run.json recorded (its manifest); None otherwise (with a warning when it is damaged)."""
    from app import session as S
    from app.session.stores import StoreError, open_store
    st = rec.stored.get("store") if isinstance(rec.stored, dict) else None
    if not isinstance(st, dict) or not S.session_dir(session):
        return None
    try:
        group = open_store(S.session_dir(session), st.get("name"), st)
        return {k: group[k] for k in group.array_keys()}
    except FileNotFoundError:
        return None
    except StoreError as exc:
        con.warn(f"{rec.method}: the saved per-sample results were not compared: {exc}")
        return None


def replay_lazy(args, con, sess) -> int:
    """``robust-studio replay`` of a session whose data was opened out of core: the data opened
    the same way and checked by its fingerprint, every fit repeated out of core, the numbers
    compared with run.json's summary, arrays file and results store (before anything is
    overwritten), and the same files written."""
    from app import session as S
    cli = _cli()
    methods = [cli._method(r.method) for r in sess.runs]
    _able(methods)
    out = _check_out(args.out, [r.method for r in sess.runs], args.figure, args.force)
    dataset = S.resolve_dataset(sess, path=args.data)
    from app.session.identity import describe_identity
    how = (describe_identity(sess.dataset.identity) if sess.dataset.identity else
           "its files' sizes and modification times (the content is not hashed)")
    con.note(f"data: {sess.dataset.describe()} opened out of core and verified by {how}")
    try:
        saved = {r.method: (cli._export_arrays(sess, r, con), _saved_store(sess, r, con)) for r in sess.runs}
        for rec in sess.runs:
            if not rec.reproducible:
                con.note(f"warning: {rec.method} was run without a fixed random_state; its numbers will differ")
        results = _fit_all(con, dataset, [(m, dict(r.params)) for m, r in zip(methods, sess.runs)], args, out)
        problems = []
        for rec in sess.runs:
            res = results[rec.method]
            diffs = cli._summary_diffs(rec, res, args.rtol)
            per_row, small = _split(res, dataset.n_samples)
            old_small, old_rows = saved[rec.method]
            if old_small is not None:
                diffs += [f"array {d}" for d in S.compare_arrays(
                    {k: v for k, v in old_small.items() if k != "metadata"}, small, rtol=args.rtol)]
            if old_rows is not None:
                diffs += [f"per-sample {d}" for d in S.compare_arrays(old_rows, per_row, rtol=args.rtol)]
            problems += [f"{rec.method}: {d}" for d in diffs]
        new = S.Session(dataset=S.DatasetRef.from_dataset(dataset, out),
                        runs=[S.run_record(results[r.method]) for r in sess.runs],
                        current_method=sess.current_method, view=dict(sess.view), selection=list(sess.selection))
        if args.figure and not new.view:
            new.view = {"name": args.figure[0]}
        _write_outputs(con, args, new, dataset, results, out)
    finally:
        dataset.close()
        shutil.rmtree(os.path.join(out, WORK), ignore_errors=True)
    compared = any(a is not None or b is not None for a, b in saved.values())
    return cli._replay_verdict(args, problems, compared)
