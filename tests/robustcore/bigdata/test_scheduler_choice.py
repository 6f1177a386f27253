"""Where robustcore.bigdata.compute runs a graph with no scheduler address set: on this machine's
threads, without importing dask.distributed (Dask's own choice imports it to look for a client),
unless the user made a distributed Client current, which is then used (and progress and Cancel
work as on a cluster given by address)."""
import json
import subprocess
import sys

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

SCRIPT = r"""
import json, sys
import numpy as np
import dask
from robustcore import PCA
from robustcore.bigdata import compute, open_table, settings
rng = np.random.default_rng(5)
X = rng.standard_normal((4000, 3)) @ rng.standard_normal((3, 8)) + 0.1 * rng.standard_normal((4000, 8))
np.save(sys.argv[1], X)
out = {}
mem = PCA(n_components=3).fit_row_results(X).spe
with settings(memory_budget=200_000, store_dir=sys.argv[2]):
    spe = np.asarray(PCA(n_components=3).fit_row_results(open_table(sys.argv[1], chunk_rows=700)).spe[:])
out["local_equal"] = bool(np.allclose(spe, mem, rtol=1e-9, atol=1e-12 * mem.max()))
out["distributed_after_local_fit"] = "distributed" in sys.modules

import distributed

def where():
    try:
        return distributed.get_worker().address
    except ValueError:   # not on a worker
        return "here"

out["no_client"] = compute(dask.delayed(where)())[0]
with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
    out["workers"] = list(client.scheduler_info()["workers"])
    out["with_client"] = compute(dask.delayed(where)())[0]
    with distributed.get_task_stream(client) as stream:
        with settings(memory_budget=200_000, store_dir=sys.argv[2]):
            spe = np.asarray(PCA(n_components=3).fit_row_results(open_table(sys.argv[1], chunk_rows=700)).spe[:])
    out["fit_tasks_on_client"] = len(stream.data)
    out["client_equal"] = bool(np.allclose(spe, mem, rtol=1e-9, atol=1e-12 * mem.max()))
out["after_close"] = compute(dask.delayed(where)())[0]
print(json.dumps(out))
"""


def test_local_threads_unless_the_user_made_a_client(tmp_path):
    got = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "t.npy"), str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    r = json.loads(got.stdout.strip().splitlines()[-1])
    assert r["local_equal"] and r["distributed_after_local_fit"] is False
    assert r["no_client"] == "here"                  # distributed imported, but no client: threads
    assert r["with_client"] in r["workers"]          # the user's client ran it
    assert r["fit_tasks_on_client"] > 0 and r["client_equal"]
    assert r["after_close"] == "here"                # closed: threads again
