"""
SPE and T²: the blind spot of reconstruction error
==================================================

The squared prediction error (SPE) measures how far a sample lies *off* a PCA subspace;
Hotelling's T² how far it lies *along* it, in units of the spread. A sample far out along the
principal axis reconstructs perfectly, so its SPE is small: only T² sees it. Here we add two
such samples to the bundled ``gaussian-2d`` demo and score all of them with
:class:`robustcore.ResidualScorer` against a rank-1 subspace.
"""
import matplotlib.pyplot as plt
import numpy as np

from robustcore import ResidualScorer
from robustcore.datasets import demo

X = demo("gaussian-2d").X
scorer = ResidualScorer(n_components=1, alpha=0.01, scale="none").fit(X)
axis = scorer.components_[0]
# two probes: one far ALONG the principal axis, one a little way OFF it
far_along = scorer.mean_ + 8.0 * np.sqrt(scorer.variances_[0]) * axis
off_axis = scorer.mean_ + 2.5 * np.array([-axis[1], axis[0]]) * np.sqrt(np.sum(np.var(X, axis=0)))
probes = np.vstack([far_along, off_axis])
spe, t2 = scorer.scores(probes)
print(f"SPE limit {scorer.spe_limit_:.2f}, T² limit {scorer.t2_limit_:.2f}")
for name, s, t in zip(["far along the axis", "off the axis"], spe, t2):
    print(f"{name:>20}: SPE = {s:8.2f}   T² = {t:8.2f}")

# %%
# Filled contours of SPE over the plane, the SPE limit as a dashed line: the probe far along the
# axis sits inside the SPE limit although it is far from every sample.

pts = np.vstack([X, probes])
lo, hi = pts.min() - 3, pts.max() + 3
g = np.linspace(lo, hi, 200)
G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
spe_grid, _ = scorer.scores(G)
fig, ax = plt.subplots(figsize=(5.5, 5))
cs = ax.contourf(g, g, np.log10(spe_grid + 1e-3).reshape(g.size, g.size), levels=20, cmap="viridis")
ax.contour(g, g, spe_grid.reshape(g.size, g.size), levels=[scorer.spe_limit_], colors="w", linestyles="--")
ax.plot(X[:, 0], X[:, 1], ".", ms=2, color="k", alpha=0.4)
ax.plot(*far_along, "r*", ms=14, label="far along the axis (T² flags it)")
ax.plot(*off_axis, "o", mfc="none", mec="orange", ms=12, mew=2, label="off the axis (SPE flags it)")
ax.set_aspect("equal")
ax.legend(loc="lower right", fontsize=8)
fig.colorbar(cs, ax=ax, label="log10 SPE")
fig.tight_layout()
plt.show()

# %%
# The check: each score flags one probe and misses the other.
assert spe[0] < scorer.spe_limit_ and t2[0] > scorer.t2_limit_
assert spe[1] > scorer.spe_limit_ and t2[1] < scorer.t2_limit_
