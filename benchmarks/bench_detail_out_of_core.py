"""Sample detail out of core: the time and memory of reading one sample (its row and its stored
per-row results) of a table opened out of core after an out-of-core PCA, against one row read
through Dask (the whole block that holds it).

Run: python benchmarks/bench_detail_out_of_core.py /work/bigbench/t2m.npy"""
import sys
import tempfile
import time
import tracemalloc

import numpy as np

from app.views._detail_numbers import sample_numbers
from robustcore.bigdata import compute, open_lazy, settings
from robustcore.methods import get_method


def main(path: str) -> None:
    ds = open_lazy(path)
    with settings(memory_budget=64 << 20, store_dir=tempfile.mkdtemp(prefix="bench-detail-")):
        res = get_method("pca").run(ds, {"n_components": 3})
    print("results:", {k: type(v).__name__ for k, v in res.arrays.items()})
    rows = np.random.default_rng(0).integers(0, ds.n_samples, 20)
    took = []
    tracemalloc.start()
    for r in rows:
        t0 = time.perf_counter()
        sample_numbers(res, ds, np.array([r]), 0)
        took.append(time.perf_counter() - t0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    ref = []
    for r in rows[:5]:
        t0 = time.perf_counter()
        compute(ds.source.array[int(r):int(r) + 1])
        ref.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    n = sample_numbers(res, ds, np.array([], dtype=np.int64), 0)
    default = time.perf_counter() - t0
    print(f"one sample (row + its stored results): median {np.median(took) * 1e3:.1f} ms, peak traced "
          f"{peak / 1e6:.2f} MB; reference, one row through Dask (its block): median {np.median(ref) * 1e3:.1f} ms; "
          f"ratio {np.median(took) / np.median(ref):.3f}")
    print(f"default sample (nothing selected, flags and scores read in blocks): {default:.2f} s -> #{n.i}")


if __name__ == "__main__":
    main(sys.argv[1])
