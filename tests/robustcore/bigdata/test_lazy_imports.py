"""An out-of-core fit on this machine's threads imports no dask.distributed (Dask imports it to
choose a rechunk method unless one is named: 1-2.6 s of every command), and answers as before."""
import subprocess
import sys

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("zarr")

SCRIPT = r"""
import sys, numpy as np
from robustcore import PCA
from robustcore.bigdata import open_table, settings
rng = np.random.default_rng(3)
X = (rng.standard_normal((4000, 3)) @ rng.standard_normal((3, 8)) + 0.1 * rng.standard_normal((4000, 8)))
np.save(sys.argv[1], X)
with settings(memory_budget=200_000, store_dir=sys.argv[2]):
    res = PCA(n_components=3).fit_row_results(open_table(sys.argv[1], chunk_rows=700))
    spe = np.asarray(res.spe[:])
mem = PCA(n_components=3).fit_row_results(X)
assert np.allclose(spe, mem.spe, rtol=1e-9, atol=1e-12 * mem.spe.max()), abs(spe - mem.spe).max()
import dask
print("distributed" in sys.modules, dask.config.get("array.rechunk.method"))
"""


def test_a_local_fit_imports_no_distributed(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t.npy"), str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "tasks"]
