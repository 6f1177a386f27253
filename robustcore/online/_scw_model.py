"""SCW's learning state: the Gaussian over the weights of each model, how a stream of labelled
rows runs through it, and the per-sample history.

The estimator (:mod:`.scw`) validates its input and publishes what these functions return; the
closed-form steps are in :mod:`._scw_steps` and the stream engines in :mod:`._scw_stream`.

The state is a dict: ``kind`` ("binary", "shared" or "ovr"), ``classes``, ``models`` (one
[mean rows, covariance] pair per model, over D = d (+ 1 with an intercept, its weight last)
coordinates), ``d``, ``intercept`` (the value of the constant feature, 0 without one),
``counts`` (examples learned per class) and ``idx`` (the class indices of the last stream).
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from .._fit_memory import check_fit_memory
from ._order import label_changes, looks_sorted, sorted_labels_message, tie_broken_predictions
from ._scw_steps import loss_scale, phi_from_eta
from ._scw_stream import run_stream

__all__ = ["History", "INTERCEPT_UNIT_RANGE", "intercept_constant", "label_codes", "learn", "new_state",
           "publishable", "state_of", "watch_order"]


class History:
    """Per-sample learning history with amortised O(1) appends.

    ``partial_fit`` may be called once per example on a long stream; concatenating the whole
    history on every call would make that quadratic. The buffers grow by doubling, and
    ``views()`` returns the filled part (earlier views stay valid and unchanged).
    """

    _DTYPES = {"mistake_rate": np.float64, "updates": np.int64, "loss": np.float64, "mistake": bool}

    def __init__(self):
        self.n = 0
        self.mistakes = 0
        self.updates = 0
        self.buf = {k: np.empty(0, dtype=t) for k, t in self._DTYPES.items()}

    def append(self, mistake, updates, loss):
        m = len(mistake)
        need = self.n + m
        if need > len(self.buf["loss"]):
            cap = max(need, 2 * len(self.buf["loss"]), 1024)
            for k, t in self._DTYPES.items():
                grown = np.empty(cap, dtype=t)
                grown[:self.n] = self.buf[k][:self.n]
                self.buf[k] = grown
        a, b = self.n, need
        cum_mistakes = self.mistakes + np.cumsum(mistake, dtype=np.int64)
        cum_updates = self.updates + np.cumsum(updates, dtype=np.int64)
        self.buf["mistake_rate"][a:b] = cum_mistakes / np.arange(a + 1, b + 1)
        self.buf["updates"][a:b] = cum_updates
        self.buf["loss"][a:b] = loss
        self.buf["mistake"][a:b] = mistake
        if m:
            self.mistakes = int(cum_mistakes[-1])
            self.updates = int(cum_updates[-1])
        self.n = need

    def views(self):
        return {k: v[:self.n] for k, v in self.buf.items()}


# The constant feature carrying the intercept is 1 while the data's typical magnitude is within
# this factor of 1, else the power of two nearest that magnitude (see intercept_constant).
INTERCEPT_UNIT_RANGE = 16.0


def intercept_constant(X) -> float:
    """The value of the constant feature that carries the intercept, fixed by the first data
    learned from: 1 when the typical magnitude m of the data (the median non-zero |value| among the
    first 100,000) is within INTERCEPT_UNIT_RANGE of 1, else the power of two nearest m (exact
    scaling). Why: the constant shares the prior variance ``a`` with the features; at 1 next to
    features of 1e-100 it alone decided every margin and nothing else was learned (only the
    majority class was ever predicted). Unit-scale data (a8a's 0/1, USPS's [-1, 1], standardised
    tables, m about 0.67) keep exactly 1, far from the switch, so fit and partial_fit agree."""
    vals = (X.data if sp.issparse(X) else np.ravel(X))[:100_000]
    vals = np.abs(vals[vals != 0])
    if vals.size == 0:
        return 1.0
    m = float(np.median(vals))
    if 1.0 / INTERCEPT_UNIT_RANGE <= m <= INTERCEPT_UNIT_RANGE:
        return 1.0
    return float(2.0 ** np.round(np.log2(m)))


def label_codes(y, classes):
    """Map labels to +1/-1 (binary) or class indices; unknown labels are an error."""
    try:
        idx = np.searchsorted(classes, y)
        idx = np.clip(idx, 0, len(classes) - 1)
        bad = np.asarray(classes[idx] != y, dtype=bool)
    except TypeError:       # e.g. numbers against string classes
        bad = np.ones(len(y), dtype=bool)
    if np.any(bad):
        unknown = np.unique(y[bad])
        shown = ", ".join(repr(u.item() if hasattr(u, "item") else u) for u in unknown[:5])
        raise ValueError(f"y contains label(s) not among the classes "
                         f"{[c.item() if hasattr(c, 'item') else c for c in classes]}: {shown}; "
                         f"pass every label in classes= on the first partial_fit call")
    if len(classes) == 2:
        return np.where(idx == 1, 1.0, -1.0)
    return idx.astype(np.intp)


def new_state(p, classes, X):
    """A fresh state for ``classes`` (the prior: zero means, covariance a I)."""
    k = len(classes)
    d = X.shape[1]
    full = p["covariance"] == "full"
    if k == 2:
        kind, n_models, k_mean = "binary", 1, 1
    elif p["multiclass"] == "shared":
        kind, n_models, k_mean = "shared", 1, k
    else:
        kind, n_models, k_mean = "ovr", k, 1
    D = d + int(p["fit_intercept"])
    if full:
        # One D x D covariance per model and a D x D temporary of its update, refused from the
        # width before numpy is asked for them.
        check_fit_memory(8.0 * D * D * (n_models + 1), "SCW with covariance='full'",
                         f"{n_models} covariance matri{'x' if n_models == 1 else 'ces'} of {D:,} x {D:,}",
                         "pass covariance='diagonal' (O(d) memory, the choice for wide or sparse data)")
    models = []
    for _ in range(n_models):
        cov = np.eye(D) * p["a"] if full else np.full(D, p["a"])
        models.append([np.zeros((k_mean, D)), cov])
    return {"kind": kind, "classes": classes, "models": models, "d": d,
            "intercept": intercept_constant(X) if p["fit_intercept"] else 0.0,
            "counts": np.zeros(k, dtype=np.int64),
            "idx": np.zeros(0, dtype=np.intp)}


def _full_weights(est):
    """(k_mean, D) weight rows per model: the feature weights, then the intercept if any."""
    W = np.atleast_2d(est.mean_)
    if est._has_intercept():
        W = np.hstack([W, np.reshape(est.intercept_, (-1, 1)) / est.intercept_scaling_])
    return W


def state_of(est):
    """A copy of a fitted estimator's state, to learn on from there (partial_fit)."""
    kind = est.model_kind_
    full = hasattr(est, "covariance_")
    cov = est.covariance_ if full else est.covariance_diag_
    W = _full_weights(est)
    if kind in ("binary", "shared"):
        models = [[W.copy(), cov.copy()]]
    else:
        models = [[W[c][None, :].copy(), cov[c].copy()] for c in range(len(est.classes_))]
    return {"kind": kind, "classes": est.classes_, "models": models, "d": est.n_features_in_,
            "intercept": est.intercept_scaling_ if est._has_intercept() else 0.0,
            "counts": est.class_counts_.copy(), "idx": np.zeros(0, dtype=np.intp)}


def watch_order(state, previous, where):
    """Count label changes across the stream so far; warn once if the labels look sorted.
    Returns the new (changes, last label, warned) triple."""
    changes, last, warned = previous
    idx = state["idx"]
    changes += label_changes(idx, last)
    last = int(idx[-1]) if idx.size else last
    if not warned and looks_sorted(changes, state["counts"]):
        warnings.warn(sorted_labels_message(changes, state["counts"], where), UserWarning,
                      stacklevel=4)
        warned = True
    return changes, last, warned


def learn(state, X, y, p, rep, *, n_done, n_total):
    """Run the stream through the state (in place).

    Returns the fitted attributes (not yet published) and the new samples' (mistake,
    update count, loss) arrays.
    """
    kind = state["kind"]
    classes = state["classes"]
    phi = phi_from_eta(p["eta"])
    C, variant = p["C"], p["variant"]
    bias = state["intercept"]
    n = X.shape[0]
    k = len(classes)
    idx = label_codes(y, classes)
    if k == 2:
        idx = (idx > 0).astype(np.intp)
    if kind == "ovr":
        scores = np.empty((n, k))
        updates = np.zeros(n, dtype=np.int64)
        loss = np.zeros(n)
        for c, (mean, cov) in enumerate(state["models"]):
            codes = np.where(idx == c, 1.0, -1.0)
            res = run_stream(X, codes, mean, cov, phi=phi, C=C, variant=variant, multiclass=False,
                             rep=rep.span(c / k, (c + 1) / k), n_done=n_done, n_total=n_total,
                             intercept=bias)
            scores[:, c] = res.scores[:, 0]
            updates += res.updated
            loss += np.maximum(0.0, phi * np.sqrt(np.maximum(res.v, 0.0)) - codes * res.scores[:, 0])
        upd_flags = updates
    else:
        codes = np.where(idx == 1, 1.0, -1.0) if kind == "binary" else idx
        mean, cov = state["models"][0]
        res = run_stream(X, codes, mean, cov, phi=phi, C=C, variant=variant,
                         multiclass=kind == "shared", rep=rep, n_done=n_done, n_total=n_total,
                         intercept=bias)
        scale = loss_scale(kind == "shared")
        if kind == "binary":
            scores = res.scores[:, 0]
            m = codes * scores
        else:
            scores = res.scores
            rows = np.arange(n)
            other = scores.copy()
            other[rows, codes] = -np.inf
            m = scores[rows, codes] - other.max(axis=1)
        loss = np.maximum(0.0, phi * np.sqrt(np.maximum(scale * res.v, 0.0)) - m)
        upd_flags = res.updated.astype(np.int64)
    # the prediction made before each label was revealed; exact ties go to the prior so far
    mistake = tie_broken_predictions(scores, state["counts"], idx) != idx
    state["counts"] = state["counts"] + np.bincount(idx, minlength=k)
    state["idx"] = idx
    out = publishable(state)
    out.update(phi_=phi, eta_=p["eta"], classes_=classes, model_kind_=kind,
               class_counts_=state["counts"].copy())
    return out, (mistake, upd_flags, loss)


def publishable(state):
    """The fitted attributes that hold the state (mean_, intercept_, covariance_...)."""
    kind = state["kind"]
    models = state["models"]
    full = models[0][1].ndim == 2
    if kind in ("binary", "shared"):
        W = models[0][0]
        cov = models[0][1]
    else:
        W = np.vstack([m[0] for m in models])
        cov = np.stack([m[1] for m in models])
    d = state["d"]
    mean = W[:, :d].copy()
    intercept = W[:, d] * state["intercept"] if state["intercept"] else np.zeros(W.shape[0])
    if kind == "binary":
        mean, intercept = mean[0], float(intercept[0])
    out = {"mean_": mean, "intercept_": intercept, "intercept_scaling_": float(state["intercept"])}
    if full:
        out["covariance_"] = cov
        out["covariance_diag_"] = np.diagonal(cov, axis1=-2, axis2=-1).copy()
    else:
        out["covariance_diag_"] = cov
    return out
