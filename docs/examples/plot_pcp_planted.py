"""
Robust PCA (PCP): recover a planted low-rank matrix
===================================================

Principal Component Pursuit splits a matrix into a low-rank part plus a sparse part,
``X = L + S``. When the low-rank part is incoherent and the corruptions are sparse and spread out,
Candès, Li, Ma and Wright (2011) prove that the split is exact. Here we plant both parts, hide
them in their sum, and check that :class:`robustcore.PCP` gives them back.
"""
import matplotlib.pyplot as plt
import numpy as np

from robustcore import PCP

rng = np.random.default_rng(0)
n, d, rank = 200, 100, 3
L0 = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))
# 5 % of the entries corrupted by large values of random sign
mask = rng.random((n, d)) < 0.05
S0 = np.where(mask, rng.choice([-10.0, 10.0], size=(n, d)), 0.0)
X = L0 + S0

# The paper's formulation: no scaling and no centring (by default PCP takes each column's median
# out first and gives it back to L; the offset then costs one more direction of the solver's L).
pcp = PCP(scale="none", center="none").fit(X)
L, S = pcp.low_rank_, pcp.sparse_
rel_err_L = np.linalg.norm(L - L0) / np.linalg.norm(L0)
rel_err_S = np.linalg.norm(S - S0) / np.linalg.norm(S0)
support_found = np.abs(S) > 1.0
print(f"rank of L: {pcp.rank_}, iterations: {pcp.n_iter_}")
print(f"relative error of L: {rel_err_L:.2e}, of S: {rel_err_S:.2e}")
print(f"corrupted entries found: {np.sum(support_found & mask)} of {mask.sum()}, "
      f"false alarms: {np.sum(support_found & ~mask)}")

# %%
# The singular values of X decay slowly (the corruptions are full rank); those of L stop after
# the planted rank.

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
ax1.semilogy(np.linalg.svd(X, compute_uv=False), "o-", ms=3, label="X = L0 + S0")
ax1.semilogy(np.maximum(np.linalg.svd(L, compute_uv=False), 1e-12), "s-", ms=3, label="L found by PCP")
ax1.set_xlabel("index")
ax1.set_ylabel("singular value")
ax1.legend()
ax2.imshow(np.abs(S[:50, :50]) > 1.0, cmap="gray_r", interpolation="nearest")
ax2.set_title("support of S (first 50 x 50)")
fig.tight_layout()
plt.show()

# %%
# The check: the planted parts are recovered to a small relative error, and the rank is exact.
assert pcp.rank_ == rank
assert rel_err_L < 1e-4 and rel_err_S < 1e-4
