"""Coherence Pursuit: a robust subspace from the samples that agree most with the others.

Rahmani & Atia, "Coherence Pursuit: Fast, Simple, and Robust Subspace Recovery", ICML 2017.
Samples are ROWS here (the paper puts them in columns). Inliers lying in an r-dimensional
subspace have large inner products with one another after normalisation, while outliers spread
over the whole space are nearly orthogonal to everything, so ranking samples by their summed
(squared) coherence with the rest separates the two without any iterative optimisation.
"""
from __future__ import annotations

import numpy as np

from .._base import Estimator, fit_protocol
# (calibration_rows and residual_limit live in robustcore._outlier; their names stay here)
from .._outlier import OutlierScores, calibration_rows, residual_limit  # noqa: F401
from .._params import check_shape, param_error
from .._scaling import auto_scaling, frames_input
from ._base import SubspaceModel
from ._cop_memory import RankDeficientWarning, coherence_scores
from ._cop_fit import fit_cop
from ._scan import input_rows
from ._coherence_pursuit_params import PARAMS

# Out of core, and in memory on the route of the bounds, the index arrays are made when first read
# (_cop_fit._LazyIndices, _MaskIndices; the command line reads only the calibration rows' count);
# inlier_indices_ is selected_indices_ without the refinement, made by the same maker.
_INDICES_MADE_WHEN_READ = ("selected_indices_", "inlier_indices_", "calibration_indices_")

__all__ = ["CoherencePursuit", "coherence_scores", "residual_limit",
           "RankDeficientWarning"]


class CoherencePursuit(SubspaceModel, OutlierScores, Estimator):
    """Coherence Pursuit (CoP) robust subspace recovery, samples as rows.

    Steps: centre the data (``center``); normalise every row to unit length; score each row by
    its coherence with all other rows (``norm``); select the most coherent rows (``selection``);
    the subspace is spanned by the top ``n_components`` right singular vectors of the selected
    NORMALISED rows (so no sample weighs more because it is large). Optionally ``refine``: refit
    by PCA on every sample close enough to that subspace.

    Attributes
    ----------
    n_components_ : int
        The rank r used: ``n_components``, or the estimate when it is None.
    components_ : ndarray (r, d)
        Orthonormal basis rows of the subspace, sign-fixed (largest absolute entry positive).
    mean_ : ndarray (d,)
        The centre used (zeros for center="none"; for "affine" the point of the flat nearest the
        columns' medians; after refinement the mean of the kept samples).
    coherence_ : ndarray (n,)
        Coherence score per training sample; higher = more inlier-like. 0 for degenerate samples.
        After an ℓ2 fit in memory it is made when first read: the fit selects from bounds on it
        (``_cop_bounds``: m products per row, the exact d x d form only for the rows near the
        cut), and the first read makes one more pass over the training rows (the d x d form of
        every row, about what the fit's C costs). Until then the estimator keeps a reference
        to X (not a copy); a copy or a pickle of the estimator makes it first.
    selected_indices_ : ndarray of int
        Sorted indices of the samples CoP selected (before refinement). Like
        ``inlier_indices_`` and ``calibration_indices_``, made from the fit's per-row masks
        when first read (out of core, and in memory when the selection came from bounds): one
        sweep of the masks, no pass over X.
    inlier_indices_ : ndarray of int
        Sorted indices of the samples the final subspace was fitted on (the refined set when
        ``refine=True``, otherwise ``selected_indices_``).
    degenerate_ : ndarray (n,) of bool
        Samples equal to the centre (zero after centring): neither inlier nor outlier.
    singular_values_ : ndarray (r,)
        Top singular values of the matrix the subspace was taken from.
    refine_limit_ : float or None
        The squared-residual cut of the last refinement pass (None without refinement).
    n_refine_passes_ : int
        Refits done by the refinement (0 without refinement).
    converged_ : bool
        False only when the refinement's kept set was still changing after 10 passes (a
        ConvergenceWarning is issued; the last pass is used).
    calibration_indices_ : ndarray of int
        Sorted indices of the samples the SPE/T² limits were calibrated on (``_cop_calibration.calibration_cut``).
    variances_ : ndarray (r,)
        Variance of the calibration samples along each component (T²'s denominators).
    spe_limit_, t2_limit_ : float
        The SPE and T² limits at alpha = 0.01 (as ResidualScorer's).
    residual_eigenvalues_, thetas_ : ndarray
        The calibration samples' residual eigenvalues and their sums to the powers 1, 2, 3.
    spe_limit_method_ : str
        "jackson-mudholkar", or Box's approximation where that formula is undefined.
    scale_center_, scale_ : ndarray (d,)
        The centre subtracted from and the spread divided into each column.
    scaling_ : str
        The scaling used ("none", "standard" or "robust"; "auto" resolved).
    limit_calibration_ : dict
        What the calibration on the training scores did to both limits ("action", "factor",
        "reason"; robustcore.limits.control_limits).
    offset_ : float
        ``score_samples - offset_ = decision_function`` (robustcore._outlier).
    n_features_in_, n_samples_fit_ : int
        Features and training samples seen by ``fit``.

    Notes
    -----
    **What each output costs** (n rows, d features, rank r, k selected, n_c calibration rows;
    "a pass": one sweep over the rows). The fit: C = Σ ŷŷᵀ (n d²/2), bounds on every row's
    coherence (n d m, m the directions the rows share), the selected rows' Σ ŷŷᵀ (k d²/2), the
    residual pass (n d r: SPE as |y|² - |t|²) with the calibration rows' scatter (n_c d²/2; their
    EᵀE is P A P, ``_cop_calibration``). ``score_samples``,
    ``predict``, ``transform``: one pass, n d r (the SPE is |y|² - |t|², the explicit
    residual only in the rows where that difference would lose digits: robustcore._residual).
    ``fit_row_results``: the fit plus every row's exact coherence (n d²/2), no score pass.
    ``coherence_``: see above.

    **Outlier score.** ``max(SPE / spe_limit_, T² / t2_limit_)`` (robustcore.subspace._base): distance off and
    along the recovered subspace, each in units of its limit. ``score_samples`` is minus that.
    Coherence itself (``coherence_``) is not the outlier score: it is blind to magnitude (a
    sample 1000 times longer along the subspace is as coherent as any), and as a score it ranked
    outliers BELOW inliers on two public tables (ROC-AUC 0.22 and 0.24).
    """

    _params = PARAMS  # declared in _coherence_pursuit_params.py (read by the registry without this module)

    def __init__(self, n_components: int | None = None, *, norm: int = 2, selection: str = "count",
                 n_inliers: int | None = None, outlier_fraction: float = 0.5,
                 center: str = "none", refine: bool = False, refine_alpha: float = 0.01,
                 noise_threshold: float = 0.0, n_repeats: int = 1, chunk_size: int | None = None,
                 random_state=None, scale: str = "auto", contamination="auto"):
        self.n_components = n_components
        self.norm = norm
        self.selection = selection
        self.n_inliers = n_inliers
        self.outlier_fraction = outlier_fraction
        self.center = center
        self.refine = refine
        self.refine_alpha = refine_alpha
        self.noise_threshold = noise_threshold
        self.n_repeats = n_repeats
        self.chunk_size = chunk_size
        self.random_state = random_state
        self.scale = scale
        self.contamination = contamination

    # -- fitting --------------------------------------------------------------------------
    @fit_protocol
    def fit(self, X, y=None, progress=None, *, _selection_band_in_memory=False, p):
        """Recover the subspace from X (n_samples, n_features), in memory or lazy. Returns self.

        ``progress(fraction, message)`` is called once per block of the coherence computation;
        returning False (or raising Cancelled) stops the fit and leaves the estimator unfitted.

        Every parameter set takes one route (robustcore.subspace._cop_fit.fit_cop): passes
        over blocks of rows, the same code in memory and out of core, with the steps that need
        random access to the rows done in memory (``_cop_memory``): the coherence from pairs of
        rows (ℓ1, or fewer than two rows per feature), adaptive selection and the refinement.
        Out of core the last two and ℓ1 are refused with a message that says so.
        ``_selection_band_in_memory`` (tests): sum the selected rows in the coherence pass in
        memory too, as out of core.
        """
        X, frames = frames_input(X, out_of_core=True)
        rows = input_rows(self, X, reset=True, min_samples=2, min_features=2)
        # (frames and pixel ranges resolved here: the passes' scan sees only column moments)
        p["scale"] = auto_scaling(p["scale"], None if rows.lazy else rows.X, frames=frames)
        if rows.lazy:
            _refuse_out_of_core(p)
        if p["chunk_size"] is not None:
            rows.block_rows = int(p["chunk_size"])
        self.__dict__.pop("_coherence_maker", None)
        self.__dict__.pop("_index_makers", None)
        fit, kept, rows = fit_cop(self, rows, p, progress, selection_band_in_memory=_selection_band_in_memory)
        if callable(fit["coherence_"]):
            self._coherence_maker = fit.pop("coherence_")
        makers = {k: fit.pop(k) for k in _INDICES_MADE_WHEN_READ if callable(fit.get(k))}
        if makers:
            self._index_makers = makers
        self._set_fitted(**fit)
        self._set_fitted(**self._training_offset(p["contamination"], rows, kept=kept))
        self._keep_rows(rows=rows, **kept)
        progress(1.0, "done")
        return self

    def __getattr__(self, name):
        # coherence_ made when first read (the fit selected from bounds on it: _cop_bounds)
        if name == "coherence_":
            make = self.__dict__.get("_coherence_maker")
            if make is not None:
                self.__dict__["coherence_"] = value = make()
                del self.__dict__["_coherence_maker"]
                return value
        # the index arrays made when first read (_INDICES_MADE_WHEN_READ)
        makers = self.__dict__.get("_index_makers")
        if makers and name in makers:
            self.__dict__[name] = value = makers.pop(name)()
            if not makers:
                del self.__dict__["_index_makers"]
            return value
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):
        if "_coherence_maker" in self.__dict__:      # a copy or a pickle holds the values
            self.coherence_  # noqa: B018
        for name in list(self.__dict__.get("_index_makers", ())):
            getattr(self, name)
        return super().__getstate__()

    def _calibration_size(self) -> int:
        """How many rows the limits were calibrated on (``calibration_indices_``'s size, without
        making the indices when they are made when first read)."""
        make = self.__dict__.get("_index_makers", {}).get("calibration_indices_")
        return int(make.size) if make is not None else int(np.size(self.calibration_indices_))

    @staticmethod
    def _rank_to_use(p, n, d):
        """(r, estimate): the rank to work with, and whether it is to be estimated (then r = 1
        stands in for the bounds that involve it, since the rank is at least 1)."""
        if p["n_components"] is None:
            if p["selection"] == "adaptive":
                raise param_error("n_components", "an integer >= 1 with selection='adaptive' (it "
                                  "samples r directions, so r must be given; use selection='count' "
                                  "to estimate it)", None)
            return 1, True
        r = check_shape(PARAMS, "n_components", p, n, d)
        return r, False


def _refuse_out_of_core(p):
    """Options that need random access to the rows, refused for lazy input (saying why)."""
    if p["norm"] != 2:
        raise param_error("norm", "2 for data out of core (the ℓ1 coherence sums over every pair "
                          "of rows; load the data into memory to use norm=1)", p["norm"])
    if p["selection"] == "adaptive":
        raise param_error("selection", "'count' or 'fraction' for data out of core (adaptive "
                          "sampling picks rows one at a time from a random sketch of all of them; "
                          "load the data into memory to use it)", p["selection"])
    if p["refine"]:
        raise param_error("refine", "False for data out of core (the refinement refits on rows "
                          "chosen anew at every step; load the data into memory to use it)", p["refine"])
