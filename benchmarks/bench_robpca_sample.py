"""ROBPCA's sample rule (``max_samples``) on one large table, in memory and out of core: one fresh
process per call, so that each figure is a first fit with its own peak memory.

    /work/tools/bench python benchmarks/bench_robpca_sample.py mem|ooc TABLE.npy [--max-samples all] [--save OUT.npz]

Prints the timed call's wall and CPU (``ROBPCA(random_state=0).fit_row_results``: the fit and
every row's distances and flags; the table loaded by ``np.load`` before it in memory, opened by
``open_lazy`` out of core), k, the rows the robust stages saw, the cut-offs, the offset, the flag
count and the peak RSS. ``--save`` keeps the loadings, centre, eigenvalues and flags, so that two
calls (two modes, or two checkouts through PYTHONPATH) can be compared bit for bit.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("mem", "ooc"))
    ap.add_argument("table", help="an .npy file")
    ap.add_argument("--max-samples", default=None, help='"auto", "all" or a number (default: the estimator\'s)')
    ap.add_argument("--save", default=None, help="an .npz file for the fitted arrays and flags")
    args = ap.parse_args(argv)
    import robustcore
    from robustcore import ROBPCA
    if args.mode == "mem":
        X = np.load(args.table)
    else:
        from robustcore.bigdata import open_lazy
        X = open_lazy(args.table)
    kw = {}
    if args.max_samples is not None:
        kw["max_samples"] = int(args.max_samples) if args.max_samples.isdigit() else args.max_samples
    m = ROBPCA(random_state=0, **kw)
    t0, c0 = time.perf_counter(), time.process_time()
    res = m.fit_row_results(X)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    flags = np.asarray(res.outlier)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.mode} code={robustcore.__file__} max_samples={m.max_samples!r} wall={wall:.2f}s cpu={cpu:.2f}s "
          f"k={m.n_components_} robust_rows={m.n_samples_robust_} scaling={m.scaling_} "
          f"sd_cut={m.sd_cutoff_:.12g} od_cut={m.od_cutoff_:.12g} offset={m.offset_:.12g} "
          f"flags={int(flags.sum())} peak_rss={peak:.0f}MB")
    if args.save:
        np.savez(args.save, comps=m.components_, mean=m.mean_, var=m.variances_, flags=flags)


if __name__ == "__main__":
    main()
