"""
Out of core: PCA of a table on disk, block by block
===================================================

:mod:`robustcore.bigdata` runs PCA, SPE/T² scoring and Coherence Pursuit on tables larger than
memory with the same estimators: give :class:`robustcore.PCA` the Dask array of a table on disk
(HDF5, Zarr or a memory-mapped ``.npy``) instead of a numpy array, and it reads the table a
block of rows at a time. The parameters, defaults, checks and numbers are the in-memory ones.
Here the table is small, so that we can check exactly that (needs the ``big`` extra:
``pip install -e ".[big]"``).
"""
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from robustcore import PCA
from robustcore.bigdata import open_table

rng = np.random.default_rng(5)
X = rng.standard_normal((20_000, 30)) @ rng.standard_normal((30, 30)) * np.linspace(1, 3, 30)

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "table.npy"
    np.save(path, X)
    table = open_table(path, chunk_rows=2_000)           # 10 blocks of 2,000 rows
    print(f"{table.array.shape[0]} x {table.array.shape[1]} on disk, read in {table.array.numblocks[0]} blocks")
    big = PCA(n_components=5).fit(table.array)            # the table on disk, block by block
    small = PCA(n_components=5).fit(X)                    # the same rows in memory

var_err = np.max(np.abs(big.explained_variance_ - small.explained_variance_) / small.explained_variance_)
# the subspaces agree when the projectors onto them do (component signs are fixed the same way)
proj_err = np.linalg.norm(big.components_.T @ big.components_ - small.components_.T @ small.components_)
print(f"largest relative difference of the variances: {var_err:.1e}; of the projectors: {proj_err:.1e}")

# %%
# The explained variance of each component, on disk and in memory.

fig, ax = plt.subplots(figsize=(5.5, 3.5))
k = np.arange(1, 6)
ax.bar(k - 0.2, small.explained_variance_, width=0.4, label="PCA in memory")
ax.bar(k + 0.2, big.explained_variance_, width=0.4, label="PCA, 10 blocks from disk")
ax.set_xlabel("component")
ax.set_ylabel("explained variance")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# The check: the same numbers to rounding error.
assert var_err < 1e-8
assert proj_err < 1e-8
