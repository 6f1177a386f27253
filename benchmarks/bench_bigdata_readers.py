"""What the out-of-core policy costs an honest file: one pass over a table with our readers
(chunks decoded by us to their declared size, files checked per read) against the libraries'
own readers (numpy memory map, h5py, zarr through Dask), and what the content digest adds to
the first pass of a fit (the same pass with and without the hash tasks).

Each contender reads the whole table once (``sum(axis=0)`` over float64 blocks) from the page
cache (a warm-up pass first), on Dask's local threads; best and median of ``--repeat`` runs, in
the same run, so the ratios hold while the absolute times follow the machine's load.

    python benchmarks/bench_bigdata_readers.py --rows 4000000 --cols 25 --repeat 5
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write(folder: Path, rows: int, cols: int) -> dict:
    import h5py
    import zarr
    rng = np.random.default_rng(0)
    block = 250_000
    paths = {"npy": folder / "t.npy", "h5-contiguous": folder / "t.h5", "h5-gzip": folder / "t.h5",
             "zarr-zstd": folder / "t.zarr"}
    arr = np.lib.format.open_memmap(paths["npy"], mode="w+", dtype="<f4", shape=(rows, cols))
    with h5py.File(paths["h5-contiguous"], "w") as f:
        c = f.create_dataset("contiguous", shape=(rows, cols), dtype="<f4")
        g = f.create_dataset("gzip", shape=(rows, cols), dtype="<f4", chunks=(65536, cols), compression="gzip",
                             compression_opts=1, shuffle=True)
        z = zarr.create_array(str(paths["zarr-zstd"]), shape=(rows, cols), chunks=(65536, cols), dtype="<f4")
        for s in range(0, rows, block):
            X = rng.standard_normal((min(block, rows - s), cols)).astype("<f4").round(2)
            arr[s:s + len(X)] = X
            c[s:s + len(X)] = X
            g[s:s + len(X)] = X
            z[s:s + len(X)] = X
    arr.flush()
    del arr
    return paths


def library_array(kind: str, path: Path, rows_per_block: int):
    import dask.array as da
    if kind == "npy":
        a = np.load(path, mmap_mode="r")
        return da.from_array(a, chunks=(rows_per_block, a.shape[1]))
    if kind.startswith("h5"):
        import h5py
        f = h5py.File(path, "r")
        d = f["contiguous" if kind == "h5-contiguous" else "gzip"]
        return da.from_array(d, chunks=(rows_per_block, d.shape[1]))
    return da.from_zarr(str(path), chunks=(rows_per_block, None))


def ours(kind: str, path: Path, rows_per_block: int):
    from robustcore.bigdata import open_table
    ds = {"h5-contiguous": "contiguous", "h5-gzip": "gzip"}.get(kind)
    return open_table(path, dataset=ds, chunk_rows=rows_per_block)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--cols", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--folder", default=None, help="where to write the tables (default: a temporary folder)")
    args = ap.parse_args()
    from robustcore.bigdata import compute
    from robustcore.bigdata._digest import default_format
    folder = Path(args.folder or tempfile.mkdtemp(prefix="bench-readers-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"# {args.rows:,} x {args.cols} float32 ({args.rows * args.cols * 4 / 2**20:.0f} MiB), "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, in {folder}")
    t = time.perf_counter()
    paths = write(folder, args.rows, args.cols)
    print(f"# written in {time.perf_counter() - t:.1f} s\n")
    rows = 262144
    print("| table | library s (best / median) | ours s (best / median) | ours / library (median) |")
    print("|---|---|---|---|")
    for kind, path in paths.items():
        lib = library_array(kind, path, rows)
        mine = ours(kind, path, rows)
        mine.content_digest = "known"        # the reader alone; the digest is measured below
        compute(lib.sum(axis=0))             # warm the page cache
        a = timed(lambda: compute(lib.astype(np.float64).sum(axis=0)), args.repeat)
        b = timed(lambda: compute(mine.array.astype(np.float64).sum(axis=0)), args.repeat)
        print(f"| {kind} | {min(a):.2f} / {np.median(a):.2f} | {min(b):.2f} / {np.median(b):.2f} | "
              f"{np.median(b) / np.median(a):.2f} |", flush=True)
    print("\n| table | pass without digest s | first pass with digest s | ratio (median) |\n|---|---|---|---|")
    for kind in ("npy", "zarr-zstd"):
        plain, hashed = [], []
        for _ in range(args.repeat):
            t1 = ours(kind, paths[kind], rows)
            t1.content_digest = "known"
            plain += timed(lambda: compute(t1.array.astype(np.float64).sum(axis=0)), 1)
            t2 = ours(kind, paths[kind], rows)
            hashed += timed(lambda: compute(t2.array.astype(np.float64).sum(axis=0)), 1)
            assert t2.content_digest.startswith(default_format() + ":")   # xxh3 with xxhash, else sha256
        print(f"| {kind} | {min(plain):.2f} / {np.median(plain):.2f} | {min(hashed):.2f} / {np.median(hashed):.2f} | "
              f"{np.median(hashed) / np.median(plain):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
