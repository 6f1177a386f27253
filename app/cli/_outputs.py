"""The files a run (or a replay) writes into its ``--out`` folder, for data in memory or out of core.

Per method:

- ``METHOD-samples.csv`` (data in memory): index, id, label, known outlier, every score, 0/1 flags;
  ``METHOD-results.zarr`` (data out of core): the same per-sample columns (``score_*``,
  ``flag_*``) and the per-row arrays (the projection), written a block of rows at a time;
- ``METHOD-arrays.npz``: the result's arrays (out of core: those that are not per row);
- ``METHOD-features.csv``: feature scores (ESFS);
- ``METHOD-summary.json``: provenance, the typed numbers (``facts``) and the same in words;
- ``METHOD-VIEW.png/.svg`` per ``--figure`` (``VIEW.png`` for views that show every run), and the
  decomposition video (``--video``, data in memory).

Then ``run.json``, a session that ``robust-studio replay`` repeats: per run, the sha256 of the
arrays file and (out of core) the manifest of the results store, so that a replay compares the
new numbers with both. A figure that cannot be drawn is skipped with a message saying why, the
other files are written, and the run ends with a non-zero exit. From the first file to run.json
the folder holds ``run.INCOMPLETE.txt`` (:func:`app.writing.writing_set`): a run cut short says
so.
"""
from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import json
import os
import shutil

import numpy as np

from robustcore.datasets import is_lazy_dataset

from ._figures import SHARED_VIEWS, figure_stem, render, views_of
from ._parse import UsageError

__all__ = ["RUN_FILE", "WORK", "planned_names", "check_out", "create_out", "check_video", "write_outputs",
           "split_rows", "npz_fields"]

RUN_FILE = "run.json"
# Out of core, results larger than the memory budget are computed into this folder of --out,
# removed once the outputs are written.
WORK = ".work"


def video_name(method: str, kind: str) -> str:
    return f"{method}-decomposition" + ("-frames" if kind == "png" else f".{kind}")


def planned_names(methods: list[str], figures: list[str], lazy: bool, video: str | None = None) -> list[str]:
    """Every file name a run of ``methods`` may write (those that exist already are refused
    without --force)."""
    names = [RUN_FILE]
    for m in methods:
        per_row = [f"{m}-results.zarr"] if lazy else [f"{m}-samples.csv", f"{m}-features.csv"]
        names += per_row + [f"{m}-arrays.npz", f"{m}-summary.json"]
        if video and "decomposition" in views_of(m):
            names.append(video_name(m, video))
        for v in figures:
            if v in views_of(m):
                names += [f"{figure_stem(m, v)}.png", f"{figure_stem(m, v)}.svg"]
    return list(dict.fromkeys(names))


def check_out(out: str, names: list[str], force: bool) -> str:
    """The --out folder, refused (without --force) when it already holds any of ``names``;
    nothing is created or written yet."""
    out = os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} is a file; give a folder")
    if not force and os.path.isdir(out):
        existing = [n for n in names if os.path.exists(os.path.join(out, n))]
        if existing:
            raise UsageError(f"{out} already holds {', '.join(existing)}; pass --force to overwrite, "
                             f"or choose another --out folder")
    return out


def create_out(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out folder {out}: {exc.strerror or exc}") from None


def check_video(video: str | None, method_names: list[str], dataset=None) -> None:
    """--video needs a robust PCA run (checked before anything runs), image data in memory (once
    opened), and PyAV for MP4; a problem stops the run before any file is written."""
    if not video:
        return
    from robustcore.methods import methods_for_view
    if not any(m in method_names for m in methods_for_view("decomposition")):
        raise UsageError("--video writes the robust PCA decomposition: add --method pcp; nothing was written")
    from app.video import has_mp4
    if video == "mp4" and not has_mp4():
        raise UsageError("--video mp4 needs PyAV: pip install 'robust-subspace-studio[video]', or use "
                         "--video gif or --video png; nothing was written")
    if dataset is not None and dataset.is_lazy:
        raise UsageError("--video needs the data in memory; this data set is read out of core; nothing was "
                         "written")
    if dataset is not None and not dataset.is_image:
        raise UsageError(f"--video needs image data (frames with an image shape); {dataset.name} is a table; "
                         f"nothing was written")


def split_rows(res, n: int) -> tuple[dict, dict]:
    """(per-row fields as named in a results store, the other arrays as named in the NPZ)."""
    per_row = {f"score_{k}": v for k, v in res.sample_scores.items()}
    per_row.update({f"flag_{k}": v for k, v in res.flags.items()})
    small = {}
    for k, v in res.all_arrays().items():
        if getattr(v, "shape", None) and v.shape[0] == n and len(v.shape) <= 2 and n > 1:
            per_row[k] = v
        else:
            small[k] = np.asarray(v)
    return per_row, small


def npz_fields(res, dataset) -> dict:
    """name -> array of what ``METHOD-arrays.npz`` holds for ``res`` (without its metadata): out
    of core the arrays that are not per row, in memory everything (app.export's naming)."""
    if is_lazy_dataset(dataset):
        return split_rows(res, dataset.n_samples)[1]
    out = dict(res.all_arrays())
    for prefix, group in (("score_", res.sample_scores), ("flag_", res.flags), ("feature_", res.feature_scores)):
        out.update({prefix + k: v for k, v in group.items()})
    return out


def _adoptable(per_row: dict, out: str) -> str | None:
    """The results store a fit already wrote in ``out``'s working folder (streaming robust PCA's
    L, S and mask), which can become METHOD-results.zarr by a rename instead of a copy of
    gigabytes; None when there is none."""
    from app.session.stores import zarr_location
    work = os.path.join(os.path.abspath(out), WORK) + os.sep
    stores: dict[str, bool] = {}
    for k, v in per_row.items():
        loc = zarr_location(v)
        if loc is not None and loc[0].startswith(work):
            stores[loc[0]] = stores.get(loc[0], True) and loc[1] == k
    # Only a store whose every field already has its output name: after the rename, a field
    # still read from the old path under another name would read as missing chunks (zeros).
    return next((path for path, all_named in stores.items() if all_named), None)


def _movable(per_row: dict, kept: set, out: str) -> dict:
    """name -> (store folder, array name) of the per-row fields held, each alone, in an array
    of a store the fit wrote in ``out``'s working folder (deleted after the run): moved into
    the results store rather than copied. An array two fields share is copied."""
    from app.session.stores import zarr_location
    work = os.path.join(os.path.abspath(out), WORK) + os.sep
    locs = {k: zarr_location(v) for k, v in per_row.items() if k not in kept}
    uses = collections.Counter(loc for loc in locs.values() if loc is not None)
    return {k: loc for k, loc in locs.items()
            if loc is not None and loc[0].startswith(work) and uses[loc] == 1
            and os.path.isdir(os.path.join(*loc))}


def _copy_rows(z, values, rows: int, n: int) -> None:
    for s0 in range(0, n, rows):
        z[s0:s0 + rows] = np.asarray(values[s0:s0 + rows])


def _write_store(res, dataset, out: str, force: bool, header: dict) -> str:
    """``METHOD-results.zarr``: the per-row fields, a block of rows at a time (bounded memory),
    written under a temporary name and renamed into place. A store the fit wrote in the working
    folder is adopted (renamed) and completed rather than copied."""
    import zarr

    from app.session.stores import zarr_location
    from robustcore.bigdata._rows import RawChunks, result_codecs
    per_row, _ = split_rows(res, dataset.n_samples)
    zpath = os.path.join(out, f"{res.method}-results.zarr")
    partial = zpath + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    adopt = _adoptable(per_row, out)
    if adopt is not None:
        kept = {k for k, v in per_row.items() if zarr_location(v) == (adopt, k)}
        os.replace(adopt, partial)
        group = zarr.open_group(partial, mode="r+")
    else:
        kept = set()
        group = zarr.open_group(partial, mode="w")
    make = group.create_array if hasattr(group, "create_array") else group.create_dataset
    n = dataset.n_samples
    moved = _movable(per_row, kept, out)
    jobs = []
    for k, v in per_row.items():
        if k in kept or k in moved:
            continue
        shape = tuple(v.shape)
        row_bytes = max(1, int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(v.dtype).itemsize)
        rows = max(1, min(n, (16 << 20) // row_bytes))
        codecs = result_codecs(v.dtype) if hasattr(group, "create_array") else {}
        z = make(k, shape=shape, dtype=v.dtype, chunks=(rows,) + shape[1:], **codecs)
        # uncompressed fields are written as Zarr's chunk files directly (RawChunks), around
        # the page cache: nothing in this run reads them again
        jobs.append((RawChunks(z, direct=True) if RawChunks.takes(z) else z, v, rows))
    # two fields at a time: file writes and the flags' compression release the GIL (30M rows:
    # 0.9 GB of fields took 2.6 s one after another)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(_copy_rows, z, v, rows, n) for z, v, rows in jobs]:
            done.result()
    # last, once nothing more is read from them: a Zarr array is a folder, and one the fit
    # stored in the working folder moves into the output under its name instead of being
    # copied (30M rows: 2.5 GB of copies took 12 s of a 43 s run)
    for k, (root, name) in moved.items():
        os.replace(os.path.join(root, name), os.path.join(partial, k))
    group.attrs["robust_studio"] = json.loads(json.dumps({**header, "summary": res.summary}, default=str))
    if os.path.exists(zpath):
        if not force:
            raise UsageError(f"{zpath} already exists; pass --force to overwrite")
        shutil.rmtree(zpath)
    os.replace(partial, zpath)
    return zpath


def _npz_bytes(header: dict, arrays: dict) -> bytes:
    from app.export import npz_bytes
    return npz_bytes({"metadata": np.array(json.dumps(header, default=str)), **arrays})


def write_result(res, dataset, out: str, force: bool) -> tuple[list[str], dict]:
    """The files of one result (module doc); returns (paths, run.json's ``stored`` record)."""
    from app.export import atomic_write_bytes, export_results, provenance_header
    from app.session.stores import store_manifest
    header = provenance_header(res, dataset)
    lazy = is_lazy_dataset(dataset)
    npz = os.path.join(out, f"{res.method}-arrays.npz")
    if lazy:
        written = [_write_store(res, dataset, out, force, header)]
        _, small = split_rows(res, dataset.n_samples)
        data = _npz_bytes(header, small)
        written.append(atomic_write_bytes(npz, data, overwrite=True))
    else:
        written = export_results(res, dataset, out, overwrite=force)
        data = None
        if npz in written:
            with open(npz, "rb") as fh:
                data = fh.read()
    summary = {**header, "summary": res.summary, "facts": res.facts(), "elapsed_s": res.elapsed}
    if lazy:
        summary["data"] = {**header.get("data", {}), "out_of_core": dataset.summary()}
        summary["per_sample_results"] = os.path.basename(written[0])
    written.append(atomic_write_bytes(os.path.join(out, f"{res.method}-summary.json"),
                                      json.dumps(summary, indent=2, default=str).encode("utf-8"), overwrite=True))
    stored = None if data is None else {"kind": "export", "file": os.path.basename(npz),
                                        "sha256": hashlib.sha256(data).hexdigest()}
    if lazy:
        stored["store"] = {"name": os.path.basename(written[0]), **store_manifest(written[0])}
    return written, stored


class FiguresNotDrawn(UsageError):
    """Some --figure could not be drawn; every other file was written (the message says which
    figures and why)."""


def write_outputs(con, args, session, dataset, results: dict, out: str) -> list[str]:
    """Each result's files and the figures, the decomposition video, and run.json naming them.
    A figure that cannot be drawn is skipped and the rest written; then :class:`FiguresNotDrawn`
    says which and why (a non-zero exit). In memory the results are written first, so that
    nothing a figure does can lose them; out of core the figures are drawn first, because
    writing the results store moves the arrays of the fit's working folder that the views read."""
    from app import session as S
    from app.writing import writing_set
    create_out(out)
    lazy = is_lazy_dataset(dataset)
    # One set: until run.json is written the folder says the run's files are incomplete (a run
    # killed between two methods' files, or during its video, leaves that said).
    with writing_set(out, "run", f"the files of a run of {', '.join(results)}"):
        written, figures, skipped = [], [], []
        if lazy:
            figures, skipped = render(results, dataset, session, out, args.figure, args.size, args.scale,
                                      args.force)
        for rec in session.runs:
            files, rec.stored = write_result(results[rec.method], dataset, out, args.force)
            written += files
        if not lazy:
            figures, skipped = render(results, dataset, session, out, args.figure, args.size, args.scale,
                                      args.force)
        written += figures
        if args.video:
            from app.video import export_video
            from robustcore.methods import methods_for_view
            for m in (m for m in methods_for_view("decomposition") if m in results):
                path = os.path.join(out, video_name(m, args.video))
                files = export_video(path, dataset, results[m], overwrite=args.force,
                                     progress=con.progress("video"))
                con.end_progress()
                written += [path] if args.video == "png" else files
        written += S.save_session(os.path.join(out, RUN_FILE), session, dataset=dataset)
    con.say("wrote:")
    for p in written:
        con.say(f"  {p}")
    if skipped:
        raise FiguresNotDrawn("; ".join(skipped) + f"; the other results were written to {out}")
    return written


__all__ += ["SHARED_VIEWS", "video_name", "FiguresNotDrawn"]
