"""ESFS's parameter declarations, in a module of their own so that the registry, the window's
forms and the command line can read them without importing the estimator or scikit-learn."""
from __future__ import annotations

from .._params import Param, SeedParam, scale_param

__all__ = ["PARAMS"]

# The share of the samples an eigenvector must live on to count (see min_support's doc).
DEFAULT_MIN_SUPPORT = 0.02

# graph="auto" builds the dense graph (the exact model, O(n²) memory: 72 MB per n x n array at
# n = 3000) up to this many samples and the kNN graph beyond. Measured (benchmarks/results_esfs.md):
# with the defaults' other rules, on 33 real sets the dense graph ranked none below chance, the kNN
# graph (K = 10) one (iris, where it also fails the petal check); on the two-cluster demo kNN put
# the noise feature above an informative one in 0-10 of 20 seeds over K = 5, 10, 20 and
# sigma_scale 0.5-2 (3 at K = 10), the dense graph in 0 of 20 for every sigma_scale.
AUTO_DENSE_MAX_SAMPLES = 3000


def _below_n(n, d, values):
    return 1, n - 1, f"fewer than n_samples = {n}"


def _neighbors_rule(n, d, values):
    # only a kNN graph has neighbours ("auto" is kNN beyond AUTO_DENSE_MAX_SAMPLES samples;
    # the fit passes the graph it resolved)
    graph = values.get("graph", "auto")
    if graph == "knn" or (graph == "auto" and n > AUTO_DENSE_MAX_SAMPLES):
        return _below_n(n, d, values)
    return None


def _select_rule(n, d, values):
    return 1, d, f"at most n_features = {d}"

PARAMS = (
    Param("sigma", float, None, "Gaussian width σ of the similarity graph.", low=0.0,
          low_inclusive=False, allow_none=True, none_label="sigma_scale x median distance",
          doc="The automatic σ is ``sigma_scale`` x the median pairwise distance (dense graph) "
              "or x the median distance to the ``n_neighbors``-th neighbour (kNN graph), both "
              "measured after ``scale``."),
    Param("sigma_scale", float, None, "Multiplier of the automatic σ.", low=0.0,
          low_inclusive=False, allow_none=True, none_label="0.5 dense, 1.0 kNN",
          advanced=True,
          doc="Ignored when ``sigma`` is given. Why 0.5 for the dense graph: on two clusters "
              "separated along one feature (methods.md §4.5), σ = 1.0 x the median pairwise "
              "distance put a noise feature first in 9 of 20 seeds (k = 1) while 0.5 x median "
              "ranked correctly in 20 of 20 (also measured here, benchmarks/results_esfs.md); "
              "for kNN the K-th neighbour distance is already a local scale, and scales 0.5 to "
              "2 ranked alike there, so 1.0 is kept."),
    Param("n_eigenpairs", int, None, "Number of smallest non-trivial eigenpairs summed in EVSC.",
          low=1, allow_none=True, none_label="largest eigengap, up to 5", shape_rule=_below_n,
          doc="k counts the smallest **non-trivial** pairs (after the λ = 0 pair of each "
              "connected component of the graph) whose eigenvectors are not concentrated on a "
              "few samples (``min_support``). c well-separated groups are described by the "
              "c - 1 smallest non-trivial pairs; further pairs describe the spread *within* "
              "groups, which noise features share (on the ``clusters-3d`` demo, two groups, "
              "k = 2 or 3 put the pure-noise feature z first). None estimates c - 1 from the "
              "spectrum: the j <= 5 at which the ratio λ_{j+1} / λ_j of consecutive candidate "
              "eigenvalues is largest (the relative eigengap). Give an int when the number of "
              "groups is known. Must satisfy 1 <= k < n_samples (and k + components <= "
              "n_samples)."),
    Param("min_support", float, DEFAULT_MIN_SUPPORT, "Skip eigenvectors living on less than "
          "this share of the samples (a few outlying samples, not a cluster); 0 keeps all.",
          low=0.0, high=1.0, high_inclusive=False, advanced=True,
          doc="The support of a D-normalised q is 1 / (n Σ_i (D_ii q_i²)²): about m/n for a "
              "vector concentrated on m samples, about p for the vector that splits off a "
              "cluster holding a share p of the samples. Why: on real data the smallest "
              "eigenvectors often single out a handful of outlying samples (support 0.001-0.01 "
              "measured), and their derivatives then rank whatever features make those samples "
              "odd. On ODDS cardio the smallest pair lives on 0.3 % of the samples and ranked "
              "the features below chance (0.84, in units of the mean ANOVA F); skipping it gave "
              "3.14. With scale=\"standard\" the smallest pair ranked below chance on 9 of 31 "
              "real sets, this rule (with the eigengap choice of k) on 5 of 33 "
              "(benchmarks/results_esfs.md)."),
    Param("graph", str, "auto", "Similarity graph: all pairs (dense) or k nearest neighbours.",
          choices=("auto", "dense", "knn"),
          doc="\"dense\": all n² similarities (O(n²) memory). \"knn\": the symmetrised (union) "
              "graph of the ``n_neighbors`` nearest neighbours, with ARPACK on a deflated "
              "operator; memory O(n·K). \"auto\": dense up to 3000 samples, kNN beyond. Why: "
              "the dense graph is the exact model; on the planted checks it ranked right for "
              "every σ scale tried, where kNN put the noise feature of the two-cluster demo "
              "above an informative one in 0-10 of 20 seeds depending on K and σ (3 at the "
              "defaults), and it ranked none of 33 real sets below chance (kNN with the same "
              "rules: iris; on a few others, e.g. MNIST 4 v 9, kNN was ahead); beyond that size "
              "the n x n arrays (72 MB each at n = 3000) and O(n² d) time make kNN the only "
              "practical graph (benchmarks/results_esfs.md)."),
    Param("n_neighbors", int, 10, "Neighbours per sample in the kNN graph.", low=1, shape_rule=_neighbors_rule,
          doc="K must satisfy 1 <= K < n_samples. The derivative treats the set of kNN edges as "
              "fixed (it changes discontinuously with the weights)."),
    scale_param("auto", doc="The scaling is applied before the graph is built: \"standard\" "
                "z-scores every feature, \"robust\" uses median / MAD, \"none\" keeps the "
                "units. Why \"auto\": mixed units would otherwise dominate both the graph and "
                "the derivatives, while on images (USPS, MNIST) z-scoring turns a pixel inked in "
                "a handful of images into a huge value, those images become outliers, and the "
                "dense graph's small eigenvectors then describe them; keeping the pixel units "
                "ranked class-separating pixels above average on all 27 digit groups measured "
                "(0 of 33 real sets below chance, against 9 of 31 for z-scores with the smallest "
                "pair). Constant features get scale 1 and score 0. (Sessions of 0.1 said "
                "``standardize=True/False``.)"),
    Param("n_features_to_select", int, None, "Top-ranked features kept by transform.", low=1,
          allow_none=True, none_label="half of the features", shape_rule=_select_rule,
          doc="Half is ``max(1, n_features // 2)``, scikit-learn's RFE convention, so "
              ":meth:`transform` always reduces."),
    SeedParam("Seed of the eigensolver's starting vector.",
              doc="Used by the kNN graph and large problems only."),
)
