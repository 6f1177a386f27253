"""The methods' prose, one row each: what the help page says a method does and when to use it,
and the paper it comes from. Read by :attr:`Method.about` and :attr:`Method.reference`; the
method pages in docs/methods/ say more."""
from __future__ import annotations

from typing import NamedTuple

from ._pcp import PCP_DIRECTIONS

__all__ = ["About", "ABOUT"]


class About(NamedTuple):
    about: str       # what it does and when to use it (a few sentences)
    reference: str   # the paper


ABOUT: dict[str, About] = {
    "pca": About(
        "Finds the directions of largest variance: the best least-squares subspace of the given "
        "rank. Fast and exact, and the baseline every robust method is compared with; but every "
        "sample pulls on the fit with the square of its distance, so a few gross outliers can "
        "tilt the subspace towards themselves. Use it to see how much the outliers move the "
        "answer (Comparison view), or on clean data. Samples are flagged when their SPE or T² "
        "exceeds its control limit, calibrated on all samples. By default the rank is the elbow "
        "of the scree plot (at most half of min(samples, features)), and columns in different "
        "units are standardised (scale = auto).",
        "I. T. Jolliffe, Principal Component Analysis, 2nd ed., Springer 2002."),
    "coherence-pursuit": About(
        "Robust subspace recovery when whole samples are outliers. Each sample is normalised and "
        "scored by how strongly it aligns with all the others: inliers, which share a "
        "low-dimensional subspace, align with many; outliers, scattered in the full space, with "
        "few. The subspace is spanned by the most coherent samples. Non-iterative, so quick, and "
        "it tolerates a large share of outliers when the inliers outnumber the rank. Coherence "
        "ignores magnitude (samples are normalised), so it is kept as a column of its own; the "
        "outlier score is the larger of SPE and T² against the subspace found, each in units of "
        "its limit, calibrated on all but the gross outliers. By default the data are not centred"
        " (the paper's formulation: a linear subspace) and the rank is the elbow of the scree "
        "plot of the selected samples.",
        "M. Rahmani and G. K. Atia, \"Coherence Pursuit: Fast, Simple, and Robust Subspace "
        "Recovery\", ICML 2017 (PMLR 70)."),
    "robpca": About(
        "The robust PCA statisticians use first (R's rrcov PcaHubert, MATLAB's LIBRA). Each "
        "sample's outlyingness over directions through pairs of samples picks the least outlying "
        "75 %, whose covariance gives the subspace; samples far off it are set aside, and a "
        "Minimum Covariance Determinant estimate inside the subspace gives the robust centre, "
        "axes and variances. Its outlier map is the diagnostic it was made with: the score "
        "distance (robust Mahalanobis distance along the subspace) against the orthogonal "
        "distance (off it), each with its cut-off at 0.975; a sample beyond either is flagged. "
        "The rank is the smallest that explains 80 % of the robust variance (at most 10) unless "
        "given. Out of core the robust stages run on a random sample of 100,000 samples and every"
        " sample is scored in one pass; the data are not rescaled unless asked (scale).",
        "M. Hubert, P. J. Rousseeuw and K. Vanden Branden, \"ROBPCA: a new approach to robust "
        "principal component analysis\", Technometrics 47(1), 2005."),
    "pcp": About(
        "Splits the data into a low-rank part L plus a sparse part S by minimising ‖L‖* + λ‖S‖₁ "
        "with X = L + S. Suited to corruption of individual entries rather than whole samples: a "
        "moving object over a static video background (L is the background, S the foreground), "
        "scratches on images, sensor glitches. The rank of L is found, not chosen. Each sample's "
        "score is the size of its row of S; each column's median is taken out first (its zero is "
        "arbitrary), and samples above a limit at a 1 % false-alarm rate are flagged. Views draw "
        f"L's {PCP_DIRECTIONS} leading directions at most as its subspace.",
        "E. J. Candès, X. Li, Y. Ma and J. Wright, \"Robust principal component analysis?\", "
        "Journal of the ACM 58(3), 2011."),
    "residual": About(
        "Anomaly scores against a PCA subspace: SPE (the squared distance from the subspace) and "
        "Hotelling's T² (the distance along it, in units of the spread), each with a control "
        "limit at false-alarm rate alpha. Each score is blind to what the other sees: a sample "
        "far out along the subspace has a small SPE. The SPE/T² map draws both so the blind spot "
        "shows. Use it for process monitoring or as a transparent anomaly score; the subspace is "
        "fitted on all samples, so outliers in the training data widen the limits.",
        "J. E. Jackson and G. S. Mudholkar, \"Control procedures for residuals associated with "
        "principal component analysis\", Technometrics 21(3), 1979."),
    "online-rpca": About(
        "Robust PCA for videos too long for memory: the frames stream through in batches, and "
        "each batch is split into a part in a slowly updated low-rank basis (the background) and "
        "a sparse part (the foreground). Memory does not grow with the length of the video, and "
        "results can go to disk. Less exact than PCP on a short clip, whose background it learns "
        "from the whole stack at once; use it when PCP would not fit in memory or time. Each "
        "frame's score is the size of its sparse part; frames far above the median are flagged.",
        "J. Feng, H. Xu and S. Yan, \"Online robust PCA via stochastic optimization\", NIPS 2013."),
    "esfs": About(
        "Ranks features without labels by how much the cluster structure depends on them: a "
        "similarity graph of the samples is built, and each feature is scored by the sensitivity "
        "of the graph Laplacian's smallest non-trivial eigenvalues to it. Features that carry the"
        " clusters come first. Use it to find the few features worth plotting or keeping.",
        "Y. Jiang and J. Ren, \"Eigenvalue sensitive feature selection\", ICML 2011."),
    "scw": About(
        "A linear classifier learned one sample at a time. It keeps a Gaussian belief over the "
        "weights and, when a sample is misclassified or classified with too little confidence, "
        "moves the belief just enough to fix it, with a soft margin that limits how far one noisy"
        " label can push. Use it for streams and large sparse data; the learning curve shows how "
        "quickly it settles.",
        "J. Wang, P. Zhao and S. C. H. Hoi, \"Exact soft confidence-weighted learning\", ICML 2012."),
}
