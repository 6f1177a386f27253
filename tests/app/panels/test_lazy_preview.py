"""The Data panel's first rows of a table opened out of core: just those rows read (by the
table's reader; else as robustcore computes, on this machine's threads), no dask.distributed
imported to look for a client, and held alone, not as a view of the block read from disk (two
32 MB blocks stayed held in a 30M-row window)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import gc, json, sys, tracemalloc
import numpy as np
import dask.array, dask.threaded, dask.callbacks  # noqa: F401 - imported before the count
from robustcore.bigdata import open_lazy
from app.panels.dataset_panel import _lazy_head
ds = open_lazy(sys.argv[1])
if sys.argv[2] == "dask":   # a table without a reader: through Dask
    ds.source.reader = None
tracemalloc.start()
head = _lazy_head(ds)
gc.collect()
arrays = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
held = sum(t.size for t in arrays.traces)   # the data of numpy arrays alive
print(json.dumps({"head": head.tolist(), "held": held, "peak": tracemalloc.get_traced_memory()[1],
                  "block": int(ds.source.array.chunks[0][0]),
                  "distributed": "distributed" in sys.modules}))
"""


@pytest.mark.parametrize("way", ["reader", "dask"])
def test_first_rows_import_no_distributed_and_keep_no_block(tmp_path, way):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400_000, 10))   # 32 MB: one block, read whole to give its first rows
    np.save(tmp_path / "t.npy", X)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t.npy"), way], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(np.array(r["head"]), X[:100])
    assert r["distributed"] is False
    assert r["block"] * X.shape[1] * 8 >= 8 << 20, "the block read must be large for the count to mean anything"
    assert r["held"] <= 2 * 100 * X.shape[1] * 8, f"{r['held']:,} bytes of arrays held after reading 100 rows"
    if way == "reader":   # and no block read to give them: the GUI thread waits for this read
        assert r["peak"] < 4 << 20, f"{r['peak']:,} bytes at the peak"
