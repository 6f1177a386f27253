"""The method registry: one entry per method, used by the window, the command line and exports.

Each :class:`Method` names its estimator (whose ``_params`` declaration builds forms and CLI
help), the views it feeds, its outlier rule, where its subspace comes from, and an adapter that
turns a fitted estimator into a :class:`RunResult` -- the uniform bundle of per-sample scores,
flags, arrays and summary numbers that views draw and exports write.

This is the one place where method -> views -> outlier rule is declared: the views take their
method lists from :func:`methods_for_view`, the adapters apply :attr:`Method.outlier_rule` and
every legend quotes it. Views never compute: anything they need (limits, variances along the
components, the planes of the SPE/T² map) is put in the result here.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._params import Param, validate_params
from ._progress import Reporter

__all__ = ["Method", "RunResult", "OutlierRule", "METHODS", "get_method", "method_names",
           "methods_for_view", "view_requirement", "VIEW_MIN_METHODS", "upgrade_params",
           "SCORE_DIRECTIONS"]


@dataclass
class RunResult:
    """Everything one run produced, tagged with what produced it.

    Attributes
    ----------
    sample_scores : name -> (n,) float array (written to the per-sample CSV).
    flags : name -> (n,) bool array (e.g. "outlier"; the CSV has them as 0/1 columns).
    arrays : name -> ndarray (written to the NPZ: bases, L, S, projections, histories).
    feature_scores : name -> (d,) array (ESFS scores; written to their own CSV).
    summary : name -> number/str (what the log and the summary view show).
    feature_names : the data set's feature names, in column order (what the scores, components
        and rankings refer to).
    """

    method: str
    params: dict
    data_fingerprint: str
    estimator: Any = None
    sample_scores: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    feature_scores: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    elapsed: float = 0.0
    feature_names: list = field(default_factory=list)

    @property
    def primary_score(self) -> str | None:
        return next(iter(self.sample_scores), None)


@dataclass(frozen=True)
class OutlierRule:
    """How a method decides its "outlier" flag. Declared once per method; the adapter applies it
    and the views, the log and the exports quote :meth:`describe`.

    ``alpha`` is a fixed false-alarm rate of control limits, ``alpha_param`` the run parameter
    holding it when the user chooses it; ``n_mad`` the width of a median + n·MAD cut.
    """

    text: str
    alpha: float | None = None
    alpha_param: str | None = None
    n_mad: float | None = None

    def alpha_for(self, params: dict | None = None) -> float | None:
        if self.alpha_param is not None and params and params.get(self.alpha_param) is not None:
            return float(params[self.alpha_param])
        return self.alpha

    def describe(self, params: dict | None = None) -> str:
        c = (params or {}).get("contamination", "auto")
        if c != "auto":  # a numeric contamination replaces the method's own rule
            return contamination_rule(c)
        a = self.alpha_for(params)
        return f"{self.text} (alpha = {a:g})" if a is not None else self.text


# (the words of a numeric contamination's rule live with the rules themselves)
from ._outlier import contamination_rule  # noqa: E402


@dataclass(frozen=True)
class Method:
    name: str                   # stable, lower-case, hyphenated (CLI name)
    title: str                  # shown in the window
    description: str            # one line
    factory: Callable[[], type]  # returns the estimator class (imported lazily)
    adapter: Callable[[Any, Any, dict], dict]  # (estimator, dataset, params) -> RunResult fields
    views: tuple = ()           # the views this method's results feed, best first
    needs_labels: bool = False
    accepts_sparse: bool = False
    extra_params: tuple = ()    # run-level parameters that are not the estimator's (e.g. alpha)
    # Adapter for data opened out of core (a bigdata.LazyDataset); None: the method needs memory.
    lazy: Callable | None = None
    outlier_rule: OutlierRule | None = None  # how result.flags["outlier"] is decided
    subspace: str = ""          # where the subspace the views draw comes from (axis labels)
    short: str = ""             # a short name for crowded axes ("CoP")
    about: str = ""             # help page: what it does and when to use it (a few sentences)
    reference: str = ""         # the paper
    rank_param: str | None = None  # the parameter that sets the subspace's rank, if any
    # The per-sample score (a key of RunResult.sample_scores, larger = more abnormal) that ranks
    # outliers: what its flags cut and what is evaluated against known outliers.
    outlier_score: str | None = None

    @property
    def estimator_class(self) -> type:
        return self.factory()

    def params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.estimator_class.param_specs() if not p.scriptable_only) + self.extra_params

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params()}

    def validate(self, params: dict) -> dict:
        return validate_params(self.params(), params)

    def data_defaults(self, n_samples: int, n_features: int) -> dict:
        """Declared defaults that need changing for data of this shape to give a useful picture:
        a rank must stay below min(n_samples, n_features) so that a residual is left (SPE, its
        control limit, the SPE/T² map). PCA's default rank 2 on 2-D data is the case in point."""
        if self.rank_param is None:
            return {}
        p = next((p for p in self.params() if p.name == self.rank_param), None)
        cap = max(1, min(n_samples, n_features) - 1)
        if p is None or not isinstance(p.default, int) or p.default <= cap:
            return {}
        return {p.name: cap}

    def run(self, dataset, params: dict | None = None, progress=None) -> RunResult:
        """Validate ``params``, fit on ``dataset`` and return a :class:`RunResult`.

        Raises ``ValueError`` for bad parameters or data, :class:`~robustcore.Cancelled` when the
        progress callback cancels.
        """
        values = self.validate(params or {})
        if self.needs_labels and dataset.labels is None:
            raise ValueError(f"{self.title} needs class labels, and data set '{dataset.name}' has none; "
                             f"load a file with a label column")
        adapter = self.adapter
        if getattr(dataset, "is_lazy", False):
            if self.lazy is None:
                able = ", ".join(m.name for m in METHODS.values() if m.lazy is not None)
                raise ValueError(f"{self.title} needs the data in memory, and '{dataset.name}' is opened out "
                                 f"of core; methods that run out of core: {able}")
            adapter = self.lazy
        est_names = {p.name for p in self.estimator_class.param_specs()}
        est = self.estimator_class(**{k: v for k, v in values.items() if k in est_names})
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fields = adapter(est, dataset, values, Reporter(progress))
        # An out-of-core adapter fits its own (Dask) estimator.
        est = fields.pop("estimator", est)
        fields.setdefault("warnings", [])
        elapsed = time.perf_counter() - t0
        res = RunResult(method=self.name, params=values, data_fingerprint=dataset.fingerprint(),
                        estimator=est, elapsed=elapsed,
                        feature_names=[str(f) for f in dataset.feature_names], **fields)
        res.warnings.extend(str(w.message) for w in caught)
        self._evaluate(res, dataset)
        return res

    def _evaluate(self, res: RunResult, dataset) -> None:
        """With known outliers, say in the summary how well the run's outlier score ranks them
        (robustcore.evaluation) and how many its flags caught."""
        truth = getattr(dataset, "outliers", None)
        score = res.sample_scores.get(self.outlier_score) if self.outlier_score else None
        if truth is None or score is None or not isinstance(score, np.ndarray):
            return
        from .evaluation import evaluation_summary
        res.summary.update(evaluation_summary(truth, score, res.flags.get("outlier")))


# -- adapters ---------------------------------------------------------------------------------

def _X(dataset, accept_sparse=False):
    return dataset.X if accept_sparse else dataset.dense()


from ._outlier import LIMIT_ALPHA as _LIMIT_ALPHA  # false-alarm rate of the pca/cp flags' limits

# Which way each per-sample score runs (written into exports beside the scores). The registry's
# scores keep their own names and directions; scikit-learn's score_samples (higher = more normal)
# is the estimators' API, not what the views draw.
SCORE_DIRECTIONS = {
    "spe": "higher = farther from the subspace (more abnormal)",
    "t2": "higher = farther along the subspace from its centre (more abnormal)",
    "sparse_score": "higher = larger sparse part (more abnormal)",
    "coherence": "higher = more coherent with the other samples (more normal)",
    "outlier_score": "higher = more abnormal (the larger of SPE and T², each in units of its limit; "
                     "above 1 = flagged)",
}

# The outlier rules, declared once (each Method below names its own).
LIMITS_RULE = OutlierRule("SPE or T² above its limit", alpha=_LIMIT_ALPHA)
RESIDUAL_RULE = OutlierRule("SPE or T² above its limit", alpha_param="alpha")
SPARSE_RULE = OutlierRule("sparse-part score above median + 3 MAD", n_mad=3.0)
# How many leading directions of PCP's L are kept as its subspace (every scatter axis and
# principal angle the views show, and the common rank of the comparison, fit in it).
PCP_DIRECTIONS = 10


def _map_arrays(X, components, mean, variances, data_plane) -> dict:
    """What the SPE/T² map draws besides the limits: the variance along each component (T²),
    the principal plane of the data, and the direction of largest residual variance. A plane
    through a component and that direction is one where SPE varies; the principal plane of data
    whose subspace has rank >= 2 lies inside the subspace, where SPE is zero everywhere."""
    from .compare import residual_direction
    return {"component_variances": np.asarray(variances, dtype=float),
            "data_plane": np.asarray(data_plane, dtype=float),
            "residual_direction": residual_direction(X, components, mean)}


def _outlier_map_fields(Z, components, mean, variances, robust: bool) -> tuple[dict, dict]:
    """(arrays, summary) of the outlier map (robustcore.outlier_map) of rows Z in the model's
    units: score and orthogonal distances, their cut-offs and each sample's region. ``robust``:
    the OD cut-off from the median/MAD (robust fits), else from the mean/sd (PCA)."""
    from .outlier_map import REGIONS, outlier_map
    try:
        om = outlier_map(Z, components, mean, variances, robust=robust)
    except ValueError as exc:   # a flat component: no score distance along it
        return {}, {"no outlier map": str(exc)}
    arrays = {"score_distance": om["score_distance"], "orthogonal_distance": om["orthogonal_distance"],
              "map_region": om["region"]}
    summary = {"SD cut-off": om["sd_cutoff"], "OD cut-off": om["od_cutoff"],
               "outlier map": ", ".join(f"{om['counts'][r]} {r}" for r in REGIONS)}
    return arrays, summary


def _model_fields(est, X, rule=LIMITS_RULE, calibration=None, extra_scores=None, values=None):
    """Scores, flags, arrays and summary of a fitted subspace model (PCA, Coherence Pursuit, the
    SPE/T² scorer), all from the estimator's own control limits.

    The estimator's outlier score is max(SPE / spe_limit_, T² / t2_limit_) and its ``predict``
    flags a score above 1 (with contamination "auto"), so ``flags["outlier"]`` here, the
    estimator's ``predict`` and the views' rings are one rule. ``calibration`` (row indices): the
    rows the limits were calibrated on, whose principal plane the SPE/T² map offers.
    """
    Z = est._scaled(X)
    C, m = np.atleast_2d(est.components_), est.mean_
    spe, t2 = est._spe_t2(Z)
    arrays = {"components": C, "mean": m, "projection": (Z - m) @ C.T, **_scaling_arrays(est)}
    # The estimator's own score and cut from the one SPE/T² pass above (score_samples and
    # predict would each compute both again): score = -score_samples, outlier = predict == -1.
    score = np.maximum(spe / est.spe_limit_, t2 / est.t2_limit_)
    scores = {"outlier_score": score, **(extra_scores or {}), "spe": spe, "t2": t2}
    out_spe, out_t2 = spe > est.spe_limit_, t2 > est.t2_limit_
    flags = {"outlier": score > -est.offset_, "outside_spe": out_spe, "outside_t2": out_t2}
    summary, notes = {"outlier rule": rule.describe(values)}, []
    if est.residual_eigenvalues_.size == 0:
        # Full rank: nothing is left off the subspace, so SPE is 0 and only T² can flag.
        why = "the subspace has full rank, so no residual is left: SPE is 0 and has no limit"
        notes.append(f"no SPE limit for this subspace: {why}")
        summary["no limits"] = why
    else:
        Zc = Z if calibration is None else Z[calibration]
        from .compare import principal_plane
        arrays.update(_map_arrays(Zc, C, m, est.variances_, principal_plane(Zc)))
        summary["SPE limit"], summary["T2 limit"] = float(est.spe_limit_), float(est.t2_limit_)
    summary["flagged"] = int(flags["outlier"].sum())
    more, said = _outlier_map_fields(Z, C, m, est.variances_, robust=calibration is not None)
    arrays.update(more)
    summary.update(said)
    return scores, flags, arrays, summary, notes


def _scaling_arrays(est) -> dict:
    """The estimator's scaling ("scale_center", "scale" (d,)) when it scaled its input: the
    subspace arrays are in those units (app/views/_derived.model_units applies them)."""
    c, s = est.scale_center_, est.scale_
    return {} if not c.any() and np.all(s == 1.0) else {"scale_center": c, "scale": s}


def _run_pca(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.9))
    scores, flags, arrays, summary, notes = _model_fields(est, X, values=values)
    arrays["explained_variance"] = est.explained_variance_
    rank = f"{est.n_components_} (scree elbow)" if values.get("n_components") is None else est.n_components_
    summary = {"rank": rank, "explained variance ratio": float(est.explained_variance_ratio_.sum()),
               "scaling": est.scaling_, **summary}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, warnings=notes)


def _run_cop(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.9))
    calibrate = est.calibration_indices_
    scores, flags, arrays, summary, notes = _model_fields(
        est, X, calibration=calibrate, extra_scores={"coherence": est.coherence_}, values=values)
    summary["calibrated on"] = f"{calibrate.size} samples (all but log-SPE outliers)"
    selected = np.zeros(X.shape[0], dtype=bool)
    selected[est.inlier_indices_] = True
    flags["selected"] = selected
    flags["degenerate"] = est.degenerate_.copy()
    rank = f"{est.n_components_} (scree elbow)" if values.get("n_components") is None else est.n_components_
    summary = {"rank": rank, "selected inliers": int(selected.sum()),
               "degenerate samples": int(est.degenerate_.sum()), "scaling": est.scaling_, **summary}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, warnings=notes)


def _run_pcp(est, dataset, values, rep):
    from .compare import lowrank_subspace
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.95))
    h = est.history_
    arrays = {"low_rank": est.low_rank_, "sparse": est.sparse_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.asarray(h["rank"]),
              "history_nnz": np.asarray(h["nnz"])}
    # The subspace of L: its PCP_DIRECTIONS leading directions at most.
    sub = lowrank_subspace(est.low_rank_, n_components=min(max(int(est.rank_), 1), PCP_DIRECTIONS))
    arrays.update(components=sub["components"], mean=sub["mean"], projection=(X - sub["mean"]) @ sub["components"].T)
    # The outlier map of X against L's subspace. The spread along each direction is robust
    # (1.4826 MAD of X's scores): L's own spread understates it along its weak directions (on
    # ODDS cardio every sample then lay beyond the score cut-off).
    T = arrays["projection"]
    mad = 1.4826 * np.median(np.abs(T - np.median(T, axis=0)), axis=0)
    var = np.where(mad > 0, mad ** 2, T.var(axis=0, ddof=1))
    more, said = _outlier_map_fields(X, sub["components"], sub["mean"], var, robust=True)
    arrays.update(more)
    score = est.sample_scores_
    # The estimator's own cut (median + 3 MAD of the training scores, or the contamination's
    # quantile): flags == est.predict(X) == -1.
    outlier = score > -est.offset_
    summary = {"iterations": est.n_iter_, "converged": bool(est.converged_), "rank of L": int(est.rank_),
               "nnz of S": int(np.count_nonzero(est.sparse_)), "lambda": est.lam_, "mu": est.mu_,
               "scaling": est.scaling_, "outlier rule": SPARSE_RULE.describe(values),
               "flagged": int(outlier.sum()), **said}
    flags = {"outlier": outlier}
    return dict(sample_scores={"sparse_score": score}, flags=flags, arrays=arrays, summary=summary)


def _run_residual(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    scores, flags, arrays, summary, notes = _model_fields(est, X, rule=RESIDUAL_RULE, values=values)
    # Its map offers the plane the scorer itself chose (the feature axes of 2-D data).
    arrays["data_plane"] = est.plane_
    arrays["contributions"] = est.contributions(X)
    out_spe, out_t2 = flags["outside_spe"], flags["outside_t2"]
    flags["outside_either"] = out_spe | out_t2
    r = est.components_.shape[0]
    rank = f"{r} (scree elbow)" if values.get("n_components") is None else r
    summary = {"rank": rank, "alpha": est.alpha, "scaling": est.scaling_, **summary,
               "flagged by SPE only": int((out_spe & ~out_t2).sum()),
               "flagged by T2 only": int((out_t2 & ~out_spe).sum())}
    return dict(sample_scores=scores, flags=flags, arrays=arrays, summary=summary, warnings=notes)


def _run_esfs(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    arrays = {"eigenvalues": est.eigenvalues_, "derivatives": est.derivatives_, "ranking": est.ranking_,
              "selected_eigenpairs": np.asarray(est.selected_eigenpairs_)}
    summary = {"sigma": est.sigma_, "graph": est.graph_, "top feature": dataset.feature_names[int(est.ranking_[0])]}
    return dict(feature_scores={"evsc": est.scores_}, arrays=arrays, summary=summary)


def _run_scw(est, dataset, values, rep):
    """One pass over a random order of the training samples, test accuracy measured along the way.

    Online learners see samples in order, and data files are often sorted by class (iris is): the
    stream is a seeded random permutation so the learning curve means something. With
    ``test_fraction`` > 0 a random held-out share is scored after every chunk of the stream.
    """
    X = _X(dataset, accept_sparse=est.covariance == "diagonal")
    y = np.asarray(dataset.labels)
    n = X.shape[0]
    from ._validation import check_random_state
    order = check_random_state(0 if est.random_state is None else est.random_state).permutation(n)
    n_test = int(round(values.get("test_fraction", 0.0) * n))
    test, train = np.sort(order[:n_test]), order[n_test:]
    classes = np.unique(y)
    if np.unique(y[train]).size < 2:
        raise ValueError("test_fraction leaves fewer than 2 classes to train on; lower test_fraction")
    chunks = np.array_split(train, min(100, train.size))
    test_seen, test_acc = [], []
    seen = 0
    for k, idx in enumerate(chunks):
        est.partial_fit(X[idx], y[idx], classes=classes)
        seen += idx.size
        if n_test:
            test_seen.append(seen)
            test_acc.append(float(np.mean(est.predict(X[test]) == y[test])))
        rep((k + 1) / len(chunks), f"{seen} of {train.size} samples")
    h = est.history_
    pred = est.predict(X)
    majority = _majority_baseline(classes, y[train], y[test])
    arrays = {"mean": est.mean_, "history_mistake_rate": np.asarray(h["mistake_rate"]),
              "history_updates": np.asarray(h["updates"]), "order": train,
              "history_majority_rate": majority["online"]}
    summary = {"online mistake rate": float(h["mistake_rate"][-1]), "updates": int(h["updates"][-1]),
               "majority-class online mistake rate": float(majority["online"][-1]),
               "training accuracy": float(np.mean(pred[train] == y[train]))}
    if n_test:
        arrays["history_test_seen"] = np.asarray(test_seen)
        arrays["history_test_accuracy"] = np.asarray(test_acc)
        summary["test accuracy"] = test_acc[-1]
        summary["majority-class test accuracy"] = majority["test"]
        summary["test samples"] = n_test
    # The stream above is shuffled, so the fit is sound; still say when the file itself is sorted
    # by class, which matters to anyone who streams it in file order elsewhere.
    from .online._order import label_changes, looks_sorted
    codes = np.searchsorted(classes, y)
    changes, counts = label_changes(codes, None), np.bincount(codes, minlength=classes.size)
    notes = []
    if looks_sorted(changes, counts):
        summary["sample order"] = (f"the file is sorted by class ({changes} label changes in {n} samples); "
                                   f"streamed in a seeded random order")
        notes.append(f"the labels in the file arrive in long runs of one class ({changes} changes in {n} "
                     f"samples): SCW streamed them in a random order (random_state); in file order an "
                     f"online learner would learn one class at a time")
    return dict(flags={"misclassified": pred != y}, arrays=arrays, summary=summary, warnings=notes)


def _majority_baseline(classes, y_stream, y_test):
    """The learner that always predicts the class seen most so far (the lower one on equal
    counts, SCW's own rule for an exact tie), on the same stream: its cumulative online mistake
    rate (one value per sample) and, on the held-out labels, the accuracy of the stream's
    majority class. An online classifier that does not beat it has learned nothing."""
    from .online._order import tie_broken_predictions
    k = classes.size
    idx = np.searchsorted(classes, y_stream)
    guess = tie_broken_predictions(np.zeros((idx.size, k)), np.zeros(k), idx)
    online = np.cumsum(guess != idx) / np.arange(1, idx.size + 1)
    top = classes[tie_broken_predictions(np.zeros((1, k)), np.bincount(idx, minlength=k), None)[0]]
    test = float(np.mean(y_test == top)) if y_test.size else float("nan")
    return {"online": online, "test": test}


_TEST_FRACTION = Param("test_fraction", float, 0.25,
                       "Share of samples held out at random to measure test accuracy along the stream.",
                       low=0.0, high=0.9)


def _bigdata(name):
    """An adapter of robustcore.bigdata._adapters, imported when first run (it needs Dask only then)."""
    def run(est, dataset, values, rep):
        from .bigdata import _adapters
        return getattr(_adapters, name)(est, dataset, values, rep)
    return run


def _linear_subspace(adapter):
    """An adapter whose components span a linear subspace (through the origin), completed with
    what the views draw: a zero mean and, for data in memory, the projection."""
    def run(est, dataset, values, rep):
        fields = adapter(est, dataset, values, rep)
        a = fields["arrays"]
        if "components" in a and "mean" not in a and not getattr(dataset, "is_lazy", False):
            C = np.atleast_2d(a["components"])
            a["mean"] = np.zeros(C.shape[1])
            a["projection"] = _X(dataset) @ C.T
        return fields
    return run


def _cls(module, name):
    def load():
        import importlib
        return getattr(importlib.import_module(module, __package__), name)
    return load


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("pca", "PCA", "Principal component analysis: the non-robust baseline.",
           _cls(".subspace.pca", "PCA"), _run_pca, views=("scatter", "detail", "contour", "outlier-map", "comparison", "evaluation"),
           outlier_score="outlier_score", outlier_rule=LIMITS_RULE, subspace="PCA", short="PCA", rank_param="n_components",
           about="Finds the directions of largest variance: the best least-squares subspace of the "
                 "given rank. Fast and exact, and the baseline every robust method is compared "
                 "with; but every sample pulls on the fit with the square of its distance, so a "
                 "few gross outliers can tilt the subspace towards themselves. Use it to see how "
                 "much the outliers move the answer (Comparison view), or on clean data. Samples "
                 "are flagged when their SPE or T² exceeds its control limit, calibrated on all "
                 "samples. By default the rank is the elbow of the scree plot (at most half of "
                 "min(samples, features)), and columns in different units are standardised "
                 "(scale = auto).",
           reference="I. T. Jolliffe, Principal Component Analysis, 2nd ed., Springer 2002.",
           lazy=_bigdata("run_pca")),
    Method("coherence-pursuit", "Coherence Pursuit",
           "Robust subspace from the most mutually coherent samples (Rahmani & Atia 2017).",
           _cls(".subspace.coherence_pursuit", "CoherencePursuit"), _run_cop,
           views=("scatter", "detail", "contour", "outlier-map", "comparison", "evaluation"), outlier_score="outlier_score", outlier_rule=LIMITS_RULE,
           subspace="Coherence Pursuit", short="CoP", rank_param="n_components",
           about="Robust subspace recovery when whole samples are outliers. Each sample is "
                 "normalised and scored by how strongly it aligns with all the others: inliers, "
                 "which share a low-dimensional subspace, align with many; outliers, scattered in "
                 "the full space, with few. The subspace is spanned by the most coherent samples. "
                 "Non-iterative, so quick, and it tolerates a large share of outliers when the "
                 "inliers outnumber the rank. Coherence ignores magnitude (samples are "
                 "normalised), so it is kept as a column of its own; the outlier score is the "
                 "larger of SPE and T² against the subspace found, each in units of its limit, "
                 "calibrated on all but the gross outliers. By default the data are not centred "
                 "(the paper's formulation: a linear subspace) and the rank is the elbow of the "
                 "scree plot of the selected samples.",
           reference="M. Rahmani and G. K. Atia, \"Coherence Pursuit: Fast, Simple, and Robust "
                     "Subspace Recovery\", ICML 2017 (PMLR 70).", lazy=_bigdata("run_cop")),
    Method("pcp", "Robust PCA (PCP)",
           "Principal Component Pursuit: split X into low-rank L plus sparse S (Candès et al. 2011).",
           _cls(".subspace.pcp", "PCP"), _run_pcp, views=("decomposition", "detail", "scatter", "outlier-map", "comparison", "evaluation"),
           outlier_score="sparse_score", outlier_rule=SPARSE_RULE, subspace="PCA of L", short="PCP",
           about="Splits the data into a low-rank part L plus a sparse part S by minimising "
                 "‖L‖* + λ‖S‖₁ with X = L + S. Suited to corruption of individual entries rather "
                 "than whole samples: a moving object over a static video background (L is the "
                 "background, S the foreground), scratches on images, sensor glitches. The rank "
                 "of L is found, not chosen. Each sample's score is the size of its row of S; "
                 f"samples far above the median are flagged. Views draw L's {PCP_DIRECTIONS} "
                 "leading directions at most as its subspace.",
           reference="E. J. Candès, X. Li, Y. Ma and J. Wright, \"Robust principal component "
                     "analysis?\", Journal of the ACM 58(3), 2011."),
    Method("residual", "SPE / T² scoring",
           "Reconstruction error (SPE) and Hotelling T² against a subspace, with control limits.",
           _cls(".anomaly", "ResidualScorer"), _run_residual, views=("contour", "scatter", "detail", "outlier-map", "evaluation"),
           outlier_score="outlier_score", outlier_rule=RESIDUAL_RULE, subspace="PCA", short="SPE/T²", rank_param="n_components",
           about="Anomaly scores against a PCA subspace: SPE (the squared distance from the "
                 "subspace) and Hotelling's T² (the distance along it, in units of the spread), "
                 "each with a control limit at false-alarm rate alpha. Each score is blind to what "
                 "the other sees: a sample far out along the subspace has a small SPE. The SPE/T² "
                 "map draws both so the blind spot shows. Use it for process monitoring or as a "
                 "transparent anomaly score; the subspace is fitted on all samples, so outliers in "
                 "the training data widen the limits.",
           reference="J. E. Jackson and G. S. Mudholkar, \"Control procedures for residuals "
                     "associated with principal component analysis\", Technometrics 21(3), 1979.",
           lazy=_bigdata("run_residual")),
    Method("online-rpca", "Online robust PCA (streaming)",
           "Low-rank + sparse one batch of frames at a time, for long videos (OR-PCA, Feng, Xu & Yan 2013).",
           _cls(".subspace.online_rpca", "OnlineRPCA"), _linear_subspace(_bigdata("run_online_rpca")),
           views=("decomposition", "detail", "comparison", "evaluation"), lazy=_bigdata("run_online_rpca"),
           outlier_score="sparse_score", outlier_rule=SPARSE_RULE, subspace="OR-PCA basis", short="OR-PCA",
           about="Robust PCA for videos too long for memory: the frames stream through in batches, "
                 "and each batch is split into a part in a slowly updated low-rank basis (the "
                 "background) and a sparse part (the foreground). Memory does not grow with the "
                 "length of the video, and results can go to disk. Less exact than PCP on a short "
                 "clip, whose background it learns from the whole stack at once; use it when PCP "
                 "would not fit in memory or time. Each frame's score is the size of its sparse "
                 "part; frames far above the median are flagged.",
           reference="J. Feng, H. Xu and S. Yan, \"Online robust PCA via stochastic "
                     "optimization\", NIPS 2013."),
    Method("esfs", "ESFS feature ranking",
           "Eigenvalue Sensitive Feature Selection from Laplacian eigenmaps (Jiang & Ren 2011).",
           _cls(".features.esfs", "ESFS"), _run_esfs, views=("ranking",), short="ESFS",
           about="Ranks features without labels by how much the cluster structure depends on them: "
                 "a similarity graph of the samples is built, and each feature is scored by the "
                 "sensitivity of the graph Laplacian's smallest non-trivial eigenvalues to it. "
                 "Features that carry the clusters come first. Use it to find the few features "
                 "worth plotting or keeping.",
           reference="Y. Jiang and J. Ren, \"Eigenvalue sensitive feature selection\", ICML 2011."),
    Method("scw", "SCW online classifier",
           "Soft Confidence-Weighted online learning, SCW-I / SCW-II (Wang, Zhao & Hoi 2012).",
           _cls(".online.scw", "SCW"), _run_scw, views=("learning-curve",), needs_labels=True,
           accepts_sparse=True, extra_params=(_TEST_FRACTION,), short="SCW",
           about="A linear classifier learned one sample at a time. It keeps a Gaussian belief "
                 "over the weights and, when a sample is misclassified or classified with too "
                 "little confidence, moves the belief just enough to fix it, with a soft margin "
                 "that limits how far one noisy label can push. Use it for streams and large "
                 "sparse data; the learning curve shows how quickly it settles.",
           reference="J. Wang, P. Zhao and S. C. H. Hoi, \"Exact soft confidence-weighted "
                     "learning\", ICML 2012."),
]}

#: Views that draw several methods' results at once, and how many they need.
VIEW_MIN_METHODS = {"comparison": 2}


def methods_for_view(view: str) -> tuple[str, ...]:
    """The methods whose results feed ``view``, in registry order."""
    return tuple(m.name for m in METHODS.values() if view in m.views)


def view_requirement(view: str, have) -> str | None:
    """What ``view`` still needs, given the methods ``have`` results (None: it can be drawn)."""
    feeds = methods_for_view(view)
    got = [m for m in feeds if m in set(have)]
    need = VIEW_MIN_METHODS.get(view, 1)
    if len(got) >= need:
        return None
    if need == 1:
        return f"it draws a result of one of: {', '.join(feeds)}"
    return (f"it compares the results of at least {need} of: {', '.join(feeds)}; "
            f"{'only ' + ', '.join(got) if got else 'none of them'} {'is' if len(got) == 1 else 'are'} there")


# Parameters renamed since 0.1: method -> {old name: (new name, {old value: new value} or None)}.
# Sessions and settings written by 0.1 go through upgrade_params before they are validated.
RENAMED_PARAMS = {
    "esfs": {"standardize": ("scale", {True: "standard", False: "none"})},
    "pcp": {"score": ("score_norm", None)},
}


def upgrade_params(method: str, params: dict) -> dict:
    """``params`` of ``method`` with 0.1's parameter names and values turned into today's."""
    out = dict(params)
    for old, (new, values) in RENAMED_PARAMS.get(method, {}).items():
        if old in out and new not in out:
            v = out.pop(old)
            out[new] = values.get(v, v) if values is not None and isinstance(v, (bool, str)) else v
    return out


def method_names() -> list[str]:
    return list(METHODS)


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of: {', '.join(METHODS)}") from None
