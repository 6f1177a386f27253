"""Writing a result's arrays (``METHOD-arrays.npz``) at 1,000,000 rows: by hand, never in tests.

PCP on a 1,000,000 x 20 table (rank 3 + noise, 1 % gross rows, ``default_rng(5)``), fitted once
(not timed); then the same arrays written atomically beside each other, as main wrote them
(``np.savez_compressed``: every member deflated at zlib's default level) and as
``app.export.npz_bytes`` writes them (deflated only where that pays), each read back whole with
``np.load(allow_pickle=False)`` and compared. CPU = user + system of this process.

    /work/tools/bench python benchmarks/bench_export_npz.py [--rows N] [--out DIR]
"""
from __future__ import annotations

import argparse
import io
import os
import resource
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _bench import conditions  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn):
    w, c = time.perf_counter(), _cpu()
    out = fn()
    return out, time.perf_counter() - w, _cpu() - c


def table(n: int, d: int = 20) -> np.ndarray:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, d)) + 0.1 * rng.normal(size=(n, d))
    bad = rng.random(n) < 0.01
    X[bad] += 5 * rng.normal(size=(int(bad.sum()), d))
    return X


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", default=None, help="folder for the two files (default: a temporary one)")
    args = ap.parse_args()
    print(conditions())
    from app import export
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    ds = Dataset(X=table(args.rows), name=f"t{args.rows}")
    res, wall, cpu = _timed(lambda: get_method("pcp").run(ds, {}))
    print(f"PCP fit on {args.rows:,} x 20: {wall:.1f} s wall, {cpu:.1f} s CPU (not part of the comparison)")
    folder = args.out or tempfile.mkdtemp(prefix="bench-npz-")
    data, wall, cpu = _timed(lambda: export.arrays_npz_bytes(res, ds))
    new = os.path.join(folder, "after.npz")
    _, w2, c2 = _timed(lambda: export.atomic_write_bytes(new, data))
    arrays = dict(np.load(new, allow_pickle=False))
    rows = [("after: app.export.npz_bytes", wall + w2, cpu + c2, new)]

    def before():
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        return export.atomic_write_bytes(os.path.join(folder, "before.npz"), buf.getvalue())
    old, wall, cpu = _timed(before)
    rows.insert(0, ("before: np.savez_compressed", wall, cpu, old))
    raw = sum(a.nbytes for a in arrays.values())
    print(f"arrays: {len(arrays)}, {raw / 1e6:,.0f} MB in memory "
          f"({', '.join(f'{k} {a.nbytes / 1e6:.0f} MB' for k, a in arrays.items() if a.nbytes > 1e6)})")
    print("| file | write wall | write CPU | size | np.load of every array (wall) |")
    print("|---|--:|--:|--:|--:|")
    for what, wall, cpu, path in rows:
        def load(p=path):
            with np.load(p, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        got, lw, _ = _timed(load)
        assert got.keys() == arrays.keys() and all(np.array_equal(got[k], arrays[k]) for k in arrays)
        print(f"| {what} | {wall:.2f} s | {cpu:.2f} s | {os.path.getsize(path) / 1e6:,.1f} MB | {lw:.2f} s |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.out is None:
        for _, _, _, p in rows:
            os.unlink(p)
        os.rmdir(folder)


if __name__ == "__main__":
    main()
