"""
Coherence Pursuit: a planted subspace among more outliers than inliers
======================================================================

Coherence Pursuit (Rahmani & Atia 2017) scores every sample by how strongly it aligns with all
the others. Inliers lying in a common low-dimensional subspace align with many samples; outliers
scattered in the whole space align with few. The span of the most coherent samples is the
subspace. Here 60 % of the samples are outliers: PCA's subspace is pulled away, Coherence
Pursuit's is not.
"""
import matplotlib.pyplot as plt
import numpy as np
from scipy.linalg import subspace_angles

from robustcore import PCA, CoherencePursuit

rng = np.random.default_rng(1)
d, rank, n_in, n_out = 50, 3, 200, 300
U = np.linalg.qr(rng.standard_normal((d, rank)))[0]          # the planted subspace (d, r)
inliers = rng.standard_normal((n_in, rank)) @ U.T
outliers = 3.0 * rng.standard_normal((n_out, d)) / np.sqrt(d) * np.sqrt(rank)
X = np.vstack([inliers, outliers])
is_outlier = np.r_[np.zeros(n_in, bool), np.ones(n_out, bool)]

# A linear subspace through the origin (the paper's model), the rank given, and the 100 most
# coherent samples kept: fewer than the inliers, as the method needs.
cop = CoherencePursuit(n_components=rank, center="none", n_inliers=100, scale="none").fit(X)
pca = PCA(n_components=rank, center=False, scale="none").fit(X)

angle_cop = np.degrees(subspace_angles(cop.components_.T, U).max())
angle_pca = np.degrees(subspace_angles(pca.components_.T, U).max())
chosen_outliers = int(is_outlier[cop.selected_indices_].sum())
print(f"largest principal angle to the planted subspace: CoP {angle_cop:.2e} deg, PCA {angle_pca:.1f} deg")
print(f"outliers among the {cop.selected_indices_.size} samples CoP selected: {chosen_outliers}")

# %%
# Coherence separates the two groups: every inlier is more coherent than every outlier.

fig, ax = plt.subplots(figsize=(6, 3.5))
bins = np.linspace(0, cop.coherence_.max(), 40)
ax.hist(cop.coherence_[~is_outlier], bins=bins, alpha=0.7, label="inliers (in the subspace)")
ax.hist(cop.coherence_[is_outlier], bins=bins, alpha=0.7, label="outliers")
ax.set_xlabel("coherence")
ax.set_ylabel("samples")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# The check: Coherence Pursuit selects only inliers and recovers the subspace to rounding error;
# PCA, fitted on every sample, is far off.
assert chosen_outliers == 0
assert angle_cop < 1e-6
assert angle_pca > 10.0
