"""Soft Confidence-Weighted online classifiers: SCW-I and SCW-II (Wang, Zhao & Hoi, ICML 2012).

The estimator lives here; its learning state (the Gaussian over the weights, how a stream runs
through it, the history) is in ``_scw_model``, the closed-form steps are in ``_scw_steps`` and
the one-pass stream engines in ``_scw_stream`` (numpy; optional compiled kernels in ``_scw_jit``
when numba is installed).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr
from sklearn.base import ClassifierMixin
from sklearn.utils import column_or_1d
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._base import Estimator, fit_protocol
from .._params import param_error
from .._validation import check_magnitude, check_random_state, validate_X
from ._order import tie_broken_predictions
from ._scw_model import History, learn, new_state, state_of, watch_order
from ._scw_stream import with_constant_column
from ._scw_params import PARAMS

__all__ = ["SCW", "DEFAULT_ETA"]

#: LIBOL's defaults for eta (init_options.m): SCW-I 0.75, SCW-II 0.90.
DEFAULT_ETA = {"I": 0.75, "II": 0.90}


# SCW's x^T Sigma x is a square of X's values: its largest |value| must stay well inside float64.
_OVERFLOW_FIX = "Scale X first, e.g. make_pipeline(StandardScaler(), SCW())."


def _binary_only(est):
    """predict_proba exists for a fitted two-class model only (see SCW.predict_proba)."""
    return getattr(est, "model_kind_", None) == "binary"


class SCW(ClassifierMixin, Estimator):
    """Soft Confidence-Weighted linear classifier, learned online in one pass (SCW-I / SCW-II).

    The weights are a Gaussian N(mu, Sigma) (mu_1 = 0, Sigma_1 = a I). For each example (x, y)
    the learner predicts sign(mu^T x), then, if the confidence loss
    ``max(0, phi sqrt(x^T Sigma x) - y mu^T x)`` is positive, moves to the closed-form minimiser
    of ``KL(new || old) + C * loss`` (SCW-I) or ``C * loss^2`` (SCW-II) with
    ``phi = Phi^-1(eta)``, the inverse standard-normal CDF. Both step sizes come from the same
    pre-update state; Sigma stays positive definite.

    With ``fit_intercept=True`` (default) x carries one more, constant feature (1, or for data far
    from unit scale the power of two nearest its typical magnitude: ``intercept_scaling_``), whose
    weight (``intercept_``) is learned like the others: a zero margin is a loss like any other
    (phi sqrt(v) > 0), so it triggers an update, and an all-zero row gets the learned bias
    instead of a score of exactly 0. A score that is still exactly 0 (e.g. the very first
    example) predicts the class seen most often so far (``class_counts_``; the lower class on
    equal counts), never the positive class by fiat. Why: on a web-page-like stream with 3 %
    positives and 8.5 % all-zero rows, the model without intercept scored every all-zero row 0
    and predicted it positive (LIBOL's tie rule): 11 % online mistakes, against 3 % for always
    predicting the majority class; with the intercept 3.5 % (benchmarks/results_scw.md). Without
    an intercept (``fit_intercept=False``) an all-zero x has v = 0 and is skipped.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted labels. Binary: ``classes_[1]`` is the positive class.
    mean_ : ndarray of shape (n_features,) or (n_classes, n_features)
        Weights: one vector for two classes, else one row per class (row c scores class c).
    intercept_ : float or ndarray of shape (n_classes,)
        A float for two classes; 0 when ``fit_intercept=False``. The decision function is
        ``X @ mean_.T + intercept_``.
    intercept_scaling_ : float
        The value of the constant feature (1 for data within 16x of unit scale, else the power of
        two nearest its typical magnitude); 0 when ``fit_intercept=False``. The intercept's
        weight in the Gaussian is ``intercept_ / intercept_scaling_``.
    covariance_ : ndarray of shape (D, D) or (n_classes, D, D)
        Full covariance only (the second shape for ``multiclass="ovr"``), over D = d + 1
        coordinates with an intercept (the last one is the constant feature's), else d.
    covariance_diag_ : ndarray of shape (D,) or (n_classes, D)
        Its diagonal, present for both covariance kinds (the second shape for ``"ovr"``).
    class_counts_ : ndarray of shape (n_classes,)
        How many examples of each class were learned from (they break exact score ties).
    phi_ : float
        Phi^-1(eta).
    eta_ : float
        The eta used (the variant's default when ``eta=None``).
    n_features_in_ : int
        Number of features seen in the first ``fit`` or ``partial_fit``.
    n_samples_seen_ : int
        Examples learned from so far (fit and every partial_fit).
    history_ : dict of ndarray of shape (n_samples_seen,)
        One entry per example in the order seen: ``"mistake_rate"`` cumulative online mistake
        rate (the prediction made before the label was revealed); ``"updates"`` cumulative number
        of updates (for ``"ovr"``, of per-class updates); ``"loss"`` the confidence loss before
        the update (summed over the per-class models for ``"ovr"``); ``"mistake"`` (bool) whether
        that prediction was wrong. ``partial_fit`` appends (amortised O(1) per example, so
        feeding one example per call stays linear).
    model_kind_ : {"binary", "shared", "ovr"}
        Which model the state holds.
    order_ : ndarray of shape (n_samples,)
        The row indices of the last ``fit``'s X in the order they were visited (``arange(n)``
        unless ``shuffle``).

    Notes
    -----
    **Multi-class.** ``multiclass="shared"`` (default) is the multi-class SCW of the LIBOL
    manual: one mean per class and ONE shared covariance. The true class r and the best-scoring
    other class s are updated, ``mu_r += alpha Sigma x``, ``mu_s -= alpha Sigma x``, with the
    loss measured on the score difference, whose variance is ``2 x^T Sigma x``:
    ``max(0, phi sqrt(2 x^T Sigma x) - (mu_r - mu_s)^T x)``. The update is triggered by that same
    loss, and the step sizes are the exact minimiser of ``KL(mu_r) + KL(mu_s) + C * loss`` (or
    ``C * loss^2``); for M-SCW-I this is the consistent formula of methods.md section 3.3, not
    LIBOL's printed M-SCW1 alpha, which is not optimal. Chosen over one-vs-rest because it is the
    method's own multi-class form and costs one d x d covariance instead of one per class.
    ``multiclass="ovr"`` trains one binary SCW per class (class c against the rest) and predicts
    the class with the largest score; it keeps one covariance per class.

    **Probabilities.** For two classes, ``predict_proba`` gives P(y = classes_[1] | x) =
    Phi(mu^T x / sqrt(x^T Sigma x)): the probability, under the learned Gaussian over weights
    w ~ N(mu, Sigma), that w^T x > 0 (Phi is the standard normal CDF). It measures how sure the
    MODEL is of the sign of the score, not a calibrated class frequency: it tends to 0 or 1 as
    Sigma shrinks with the data seen. Without an intercept a zero x gets 1/2. There is no such
    closed form for the multi-class models, so ``predict_proba`` exists only for two classes
    (``hasattr`` is False otherwise).

    **Speed.** Learning is sequential, but the numpy engines avoid per-example Python work where
    the maths allows: blocks of examples share one GEMM and only examples that trigger an update
    cost vector operations (full covariance); support-disjoint CSR rows are learned in vectorised
    waves (diagonal, binary). All give the plain sequential algorithm's result up to rounding.
    If the optional package numba is installed, streams of at least
    ``robustcore.online._scw_stream.JIT_MIN_ROWS`` rows run through compiled kernels of the
    same loop (several times faster); results agree with the numpy engines to rounding.
    Set the environment variable ``ROBUSTCORE_NO_JIT=1`` to always use numpy.

    References
    ----------
    J. Wang, P. Zhao and S. C. H. Hoi, "Exact soft confidence-weighted learning", Proceedings of
    the 29th International Conference on Machine Learning (ICML), 2012.
    """

    # Each parameter's help is written once, here: the docstring's Parameters section is rendered
    # from these declarations (robustcore._docstring).
    _params = PARAMS  # declared in _scw_params.py (read by the registry without this module)

    def __init__(self, variant="I", *, C=1.0, eta=None, covariance="full", a=1.0, multiclass="shared",
                 fit_intercept=True, shuffle=True, random_state=None):
        self.variant = variant
        self.C = C
        self.eta = eta
        self.covariance = covariance
        self.a = a
        self.multiclass = multiclass
        self.fit_intercept = fit_intercept
        self.shuffle = shuffle
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- parameters and input checks -----------------------------------------------------
    def _validate_params(self) -> dict:
        p = super()._validate_params()
        p["eta"] = DEFAULT_ETA[p["variant"]] if p["eta"] is None else p["eta"]
        return p

    def _check_X(self, X, *, reset, min_samples):
        # after the first fit the width check says more than a minimum of 2 features would
        X = validate_X(self, X, reset=reset, min_samples=min_samples, min_features=2 if reset else 1,
                       accept_sparse=True)
        check_magnitude(X, method="SCW", fix=_OVERFLOW_FIX)
        return X

    @staticmethod
    def _check_y(y, n, *, first=True):
        """y as a 1-D label array; on later partial_fit calls (``first=False``) the labels are
        checked against ``classes_`` instead of by scikit-learn's (slow) target-type analysis."""
        y = column_or_1d(y, warn=True)
        if y.shape[0] != n:
            raise ValueError(f"y must have one label per sample of X ({n}); got {y.shape[0]} labels")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite labels; remove those samples before fitting")
        if y.dtype.kind == "O":
            if any(lab is None for lab in y):
                raise ValueError("y contains missing (None) labels; remove those samples before fitting")
            kinds = {isinstance(lab, str) for lab in y}
            if len(kinds) > 1:
                first_str = next(lab for lab in y if isinstance(lab, str))
                first_other = next(lab for lab in y if not isinstance(lab, str))
                raise ValueError(f"y mixes strings and other labels (e.g. {first_other!r} and "
                                 f"{first_str!r}), which cannot be ordered; make them one type, "
                                 f"e.g. y.astype(str)")
        if first:
            check_classification_targets(y)
        return y

    # -- fitting -----------------------------------------------------------------------------
    @fit_protocol
    def fit(self, X, y, progress=None, *, p):
        """Learn from the rows of X in one pass (in order, or shuffled), starting afresh.

        Parameters
        ----------
        X : (n_samples, n_features) array or CSR matrix; n_samples >= 2, n_features >= 2.
        y : (n_samples,) labels, at least two distinct values.
        progress : callable(fraction, message) or None; may cancel (see robustcore._progress).

        Returns
        -------
        self
        """
        X = self._check_X(X, reset=True, min_samples=2)
        y = self._check_y(y, X.shape[0])
        classes = np.unique(y)
        if len(classes) < 2:
            only = classes[0].item() if hasattr(classes[0], "item") else classes[0]
            raise ValueError(f"y must contain labels of at least 2 distinct classes; got only the "
                             f"class {only!r}")
        order = np.arange(X.shape[0])
        if p["shuffle"]:
            order = check_random_state(p["random_state"]).permutation(X.shape[0])
            X = X[order]
            y = y[order]
        state = new_state(p, classes, X)
        fitted, (mistake, updates, loss) = learn(state, X, y, p, progress, n_done=0, n_total=X.shape[0])
        self._label_order = watch_order(state, (0, None, False), "passed to fit")
        progress(1.0, "done")
        hist = History()
        hist.append(mistake, updates, loss)
        self._history = hist
        self._set_fitted(history_=hist.views(), order_=order, n_samples_seen_=X.shape[0], **fitted)
        return self

    @fit_protocol(partial=True)
    def partial_fit(self, X, y, classes=None, progress=None, *, p):
        """Continue learning from the rows of X, in order.

        The first call needs ``classes`` (every label that will ever appear); later calls may
        repeat the same classes or omit them. The history is appended to.

        Returns
        -------
        self
        """
        fitted = hasattr(self, "mean_")
        if not fitted:
            if classes is None:
                raise param_error("classes", "the array of all labels on the first partial_fit call "
                                  "(the model must know every class up front)", None)
            classes = np.unique(np.asarray(classes))
            if len(classes) < 2:
                raise param_error("classes", "at least 2 distinct labels", list(classes))
        else:
            if classes is not None:
                given = np.unique(np.asarray(classes))
                if given.shape != self.classes_.shape or np.any(given != self.classes_):
                    raise param_error("classes", f"the classes of the first call {list(self.classes_)}",
                                      list(given))
            classes = self.classes_
            kind = "full" if hasattr(self, "covariance_") else "diagonal"
            if p["covariance"] != kind:
                raise param_error("covariance", f"{kind!r}, as when this model started learning "
                                  "(call fit to start afresh)", p["covariance"])
            if len(classes) > 2 and p["multiclass"] != self.model_kind_:
                raise param_error("multiclass", f"{self.model_kind_!r}, as when this model started "
                                  "learning (call fit to start afresh)", p["multiclass"])
            if p["fit_intercept"] != self._has_intercept():
                raise param_error("fit_intercept", f"{self._has_intercept()}, as when this model "
                                  "started learning (call fit to start afresh)", p["fit_intercept"])
        X = self._check_X(X, reset=not fitted, min_samples=1)
        y = self._check_y(y, X.shape[0], first=not fitted)
        if fitted:
            state = state_of(self)
        else:
            state = new_state(p, classes, X)
        out, (mistake, updates, loss) = learn(state, X, y, p, progress, n_done=0, n_total=X.shape[0])
        self._label_order = watch_order(
            state, self._label_order if fitted else (0, None, False), "passed to partial_fit")
        if fitted:
            hist = self._history
            out["order_"] = self.order_
        else:
            hist = History()
            out["order_"] = np.arange(X.shape[0])
        hist.append(mistake, updates, loss)
        self._history = hist
        self._set_fitted(history_=hist.views(), n_samples_seen_=hist.n, **out)
        return self

    def _has_intercept(self) -> bool:
        return self.covariance_diag_.shape[-1] == self.n_features_in_ + 1

    # -- prediction --------------------------------------------------------------------------
    def decision_function(self, X):
        """Scores mu^T x + intercept: (n_samples,) for two classes (positive means classes_[1]),
        (n_samples, n_classes) otherwise."""
        check_is_fitted(self)
        X = validate_X(self, X, reset=False, accept_sparse=True)
        return np.asarray(X @ self.mean_.T, dtype=np.float64) + self.intercept_

    def predict(self, X):
        """Predicted labels (n_samples,): the sign of the score (two classes) or the best-scoring
        class; an exact tie goes to the class learned from most often (``class_counts_``)."""
        scores = self.decision_function(X)
        return self.classes_[tie_broken_predictions(scores, self.class_counts_, None)]

    @available_if(_binary_only)
    def predict_proba(self, X):
        """(n_samples, 2): P(y = classes_[0] | x), P(y = classes_[1] | x), where the latter is
        Phi(mu^T x / sqrt(x^T Sigma x)), the model's confidence in the sign (class doc)."""
        check_is_fitted(self)
        X = validate_X(self, X, reset=False, accept_sparse=True)
        m = np.asarray(X @ self.mean_, dtype=np.float64).ravel() + self.intercept_
        if self._has_intercept():
            X = with_constant_column(X, self.intercept_scaling_)
        if hasattr(self, "covariance_"):
            XS = X @ self.covariance_
            # (a CSR X times the dense covariance is dense: multiply from the sparse side)
            v = np.asarray(X.multiply(XS).sum(axis=1) if sp.issparse(X) else np.einsum("ij,ij->i", XS, X)).ravel()
        else:
            X2 = X.multiply(X) if sp.issparse(X) else X * X
            v = np.asarray(X2 @ self.covariance_diag_, dtype=np.float64).ravel()
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(v > 0, m / np.sqrt(np.maximum(v, 0.0)), 0.0)
        p1 = ndtr(z)
        return np.column_stack([1.0 - p1, p1])
