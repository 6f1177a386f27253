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
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._params import Param, validate_params
from .._progress import Reporter
from ..result import (Decomposition, Learning, Limits, OutlierMap, Outliers, Ranking, RunResult, Selection,
                     Storage, Subspace)

__all__ = ["Method", "RunResult", "OutlierRule", "METHODS", "get_method", "method_names",
           "methods_for_view", "view_requirement", "VIEW_MIN_METHODS", "upgrade_params",
           "SCORE_DIRECTIONS"]


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
from .._contamination import contamination_rule  # noqa: E402


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
    # Whether the adapter also takes data opened out of core (a bigdata.LazyDataset).
    out_of_core: bool = False
    outlier_rule: OutlierRule | None = None  # how result.flags["outlier"] is decided
    subspace: str = ""          # where the subspace the views draw comes from (axis labels)
    short: str = ""             # a short name for crowded axes ("CoP")
    about: str = ""             # help page: what it does and when to use it (a few sentences)
    reference: str = ""         # the paper
    rank_param: str | None = None  # the parameter that sets the subspace's rank, if any
    # The per-sample score (a key of RunResult.sample_scores, larger = more abnormal) that ranks
    # outliers: what its flags cut and what is evaluated against known outliers.
    outlier_score: str | None = None
    # Returns the estimator's parameter declarations from a module that imports neither the
    # estimator nor scikit-learn, so the window's first form costs no 1 s import (issue 25).
    # None: read them from the estimator class.
    declared: Callable[[], tuple] | None = None
    # Sparse input (in memory) is taken as it is only when this parameter has this value (SCW:
    # ("covariance", "diagonal")); None: whenever accepts_sparse.
    sparse_when: tuple | None = None
    # Dense working copies of the rows the fit holds at its peak beside a dense copy of sparse
    # input, charged before that copy is made (robustcore._fit_memory.check_dense_copy): the peak
    # resident memory of `robust-studio run` on the 20-byte LIBSVM file `1 16777216:1` / `-1 1:1`
    # (a 256 MiB dense copy) in units of that copy, rounded up, less the copy itself. Measured:
    # pca 8.9, coherence-pursuit 8.4, pcp 5.9, residual 10.4; esfs 9.5 and growing when stopped
    # at 150 s (the default here).
    dense_copies: float = 10.0

    @property
    def estimator_class(self) -> type:
        return self.factory()

    def params(self) -> tuple[Param, ...]:
        specs = self.declared() if self.declared is not None else self.estimator_class.param_specs()
        return tuple(p for p in specs if not p.scriptable_only) + self.extra_params

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params()}

    def validate(self, params: dict) -> dict:
        return validate_params(self.params(), params)

    def takes_sparse(self, values: dict) -> bool:
        """Whether a fit with the validated ``values`` takes sparse input without a dense copy."""
        if not self.accepts_sparse:
            return False
        return self.sparse_when is None or values.get(self.sparse_when[0]) == self.sparse_when[1]

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
        """Validate ``params``, fit on ``dataset`` (in memory, or opened out of core) and return
        the run's typed :class:`~robustcore.result.RunResult`.

        Raises ``ValueError`` for bad parameters or data, :class:`~robustcore.Cancelled` when the
        progress callback cancels.
        """
        values = self.validate(params or {})
        if self.needs_labels and dataset.labels is None:
            raise ValueError(f"{self.title} needs class labels, and data set '{dataset.name}' has none; "
                             f"load a file with a label column")
        if getattr(dataset, "is_lazy", False) and not self.out_of_core:
            able = ", ".join(m.name for m in METHODS.values() if m.out_of_core)
            raise ValueError(f"{self.title} needs the data in memory, and '{dataset.name}' is opened out "
                             f"of core; methods that run out of core: {able}")
        X = None if getattr(dataset, "is_lazy", False) else getattr(dataset, "X", None)
        if X is not None and not self.takes_sparse(values):
            import scipy.sparse as sp
            if sp.issparse(X):   # before the adapter makes the dense copy
                from .._fit_memory import check_dense_copy
                check_dense_copy(X.shape, self.dense_copies, self.title)
        est = self.estimator_class(**estimator_params(self, values, dataset))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fields = self.adapter(est, dataset, values, Reporter(progress))
        return assemble(self, dataset, values, fields, caught, time.perf_counter() - t0,
                        fields.pop("estimator", est))


def estimator_params(method: "Method", values: dict, dataset) -> dict:
    """The estimator's own parameters out of a run's validated ``values``. On image data
    ``scale`` is resolved here by the one rule (:func:`robustcore._scaling.auto_scaling`: frames
    keep their pixels as they are), since the estimator is given the pixels without their
    image shape."""
    from .._scaling import auto_scaling
    names = {p.name for p in method.estimator_class.param_specs()}
    out = {k: v for k, v in values.items() if k in names}
    if "scale" in out and getattr(dataset, "is_image", False):
        out["scale"] = auto_scaling(out["scale"], frames=True)
    return out


def _names(names):
    """The result's feature names: made on demand when the data's are (a 4 x 2^24 store must not
    cost 16M strings per result), else a plain list of strings."""
    from ..datasets._limits import numbered
    return names if isinstance(names, numbered) else [str(f) for f in names]


def assemble(method: "Method", dataset, values: dict, fields: dict, caught, elapsed: float,
             estimator) -> RunResult:
    """THE one place a run's result is put together: the adapter's typed fields, the run's
    provenance, the warnings the fit raised, the evaluation against known outliers and the
    check of the flagged share against the rule's stated rate."""
    fields = dict(fields)
    notes = [str(w) for w in fields.pop("warnings", [])]
    res = RunResult(method=method.name, params=values, data_fingerprint=dataset.fingerprint(),
                    estimator=estimator, elapsed=elapsed,
                    feature_names=_names(dataset.feature_names), **fields)
    res.warnings = notes + [str(w.message) for w in caught if str(w.message) not in notes]
    scaled = res.decomposition or res.subspace     # the part that records the fit's scaling
    if scaled is not None and getattr(dataset, "is_image", False) and scaled.scaling == "none" \
            and values.get("scale") == "auto":
        scaled.scaling = "none (image data)"
    truth = getattr(dataset, "outliers", None)
    score = res.sample_scores.get(method.outlier_score) if method.outlier_score else None
    if truth is not None and isinstance(score, np.ndarray):
        from ..evaluation import evaluation_summary
        res.evaluation = evaluation_summary(truth, score, res.flags.get("outlier"))
    _check_flag_rate(method, res, values, truth, score)
    return res


def _adjustment(est) -> dict:
    """Limits' ``adjustment`` and ``factor`` from the estimator's ``limit_calibration_``."""
    rec = getattr(est, "limit_calibration_", None) or {}
    return {"adjustment": str(rec.get("action", "kept")), "factor": float(rec.get("factor", 1.0))}


def _check_flag_rate(method: "Method", res: RunResult, values: dict, truth, score) -> None:
    """Say so when the share flagged among the samples believed clean (the known inliers, or
    else the robust core of the scores) is far from the rule's stated false-alarm rate
    (robustcore._calibration.flag_rate_warning): a legend that quotes alpha = 0.01 over 29 %
    of the inliers flagged would mislead. Rules without a rate (a contamination share, the
    median + 3 MAD cut) have nothing to check; results on disk beyond the budget are not read
    back for it."""
    rule = method.outlier_rule
    alpha = rule.alpha_for(values) if rule is not None else None
    flagged = res.flags.get("outlier")
    if alpha is None or values.get("contamination", "auto") != "auto" or res.outliers is None \
            or not isinstance(flagged, np.ndarray) or not isinstance(score, np.ndarray):
        return
    from .._calibration import flag_rate_warning
    msg = flag_rate_warning(flagged, alpha, known_outliers=truth, scores=score,
                            method=f"{method.title}'s {'SPE/T² limits' if 'SPE' in rule.text else 'limit'}")
    if msg:
        res.outliers.flag_rate_warning = msg
        res.warnings.append(msg)


# -- adapters ---------------------------------------------------------------------------------
# Each adapter fits the estimator on the data set and returns the RunResult's fields: per-sample
# dicts and the typed parts of robustcore.result. assemble() above adds the rest.

def _X(dataset, accept_sparse=False):
    """The rows in memory, sparse data densified unless ``accept_sparse``; the dense copy and the
    fit's working copies were charged against the fit budget by :meth:`Method.run` first."""
    import scipy.sparse as sp
    if accept_sparse or not sp.issparse(dataset.X):
        return dataset.X
    return dataset.dense()


from .._contamination import LIMIT_ALPHA as _LIMIT_ALPHA  # false-alarm rate of the pca/cp flags' limits

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
PCP_RULE = OutlierRule("sparse-part score above its limit", alpha=_LIMIT_ALPHA)
from ..subspace._robpca_params import CRIT as _ROBPCA_CRIT  # noqa: E402  (no scikit-learn import)
ROBPCA_RULE = OutlierRule("score or orthogonal distance above its cut-off", alpha=round(1.0 - _ROBPCA_CRIT, 12))
# How many leading directions of PCP's L are kept as its subspace (every scatter axis and
# principal angle the views show, and the common rank of the comparison, fit in it).
PCP_DIRECTIONS = 10


def _rank_rule(values, name="n_components") -> str:
    return "scree elbow" if values.get(name) is None else "given"


def _outlier_map(Z, components, mean, variances, robust: bool) -> tuple[dict, dict]:
    """The outlier map (robustcore.outlier_map) of rows Z in the model's units: (arrays,
    result fields). ``robust``: the OD cut-off from the median/MAD (robust fits), else from the
    mean/sd (PCA)."""
    from ..outlier_map import REGIONS, outlier_map
    try:
        om = outlier_map(Z, components, mean, variances, robust=robust)
    except ValueError as exc:   # a flat component: no score distance along it
        return {}, {"no_outlier_map": str(exc)}
    arrays = {"score_distance": om["score_distance"], "orthogonal_distance": om["orthogonal_distance"],
              "map_region": om["region"]}
    part = OutlierMap(sd_cutoff=float(om["sd_cutoff"]), od_cutoff=float(om["od_cutoff"]),
                      counts={r: int(om["counts"][r]) for r in REGIONS})
    return arrays, {"outlier_map": part}


def _scaling_of(est) -> dict:
    """The estimator's scaling as Subspace fields (its arrays only when it scaled its input)."""
    c, s = est.scale_center_, est.scale_
    scaled = c.any() or not np.all(s == 1.0)
    return {"scaling": est.scaling_, "scale_center": c if scaled else None, "scale": s if scaled else None}


def _rows(dataset):
    """The rows a table method fits: the data in memory, or the table opened out of core (which
    the same estimators fit a block of rows at a time)."""
    if not getattr(dataset, "is_lazy", False):
        return _X(dataset)
    if getattr(dataset, "kind", "table") != "table":
        raise ValueError(f"'{dataset.name}' is a video opened out of core; run the streaming method "
                         f"(online-rpca) on it, or load the video into memory for this method")
    return dataset


def _model_fields(est, X, rows, *, rule, values, source, rank_rule, calibration_text="all samples",
                  explained=None, map_cutoffs=None) -> dict:
    """The result fields of a fitted subspace model (PCA, Coherence Pursuit, the SPE/T² scorer)
    from its per-row results ``rows`` (``fit_row_results``: one pass over X, in memory or out of
    core), all from the estimator's own control limits: ``flags["outlier"]``, the estimator's
    ``predict`` and the views' rings are one rule.

    What needs the rows themselves (the planes the SPE/T² map offers, the outlier map) is made
    when the data and the per-row results are in memory. ``map_cutoffs``: the model's own (SD,
    OD) cut-offs for the outlier map (ROBPCA's), instead of robustcore.outlier_map's rule."""
    from .._passes import count_true
    C, m = np.atleast_2d(est.components_), est.mean_
    lazy = bool(getattr(X, "is_lazy", False))
    fields = {"sample_scores": rows.scores, "flags": rows.flags, "arrays": {"projection": rows.projection},
              "warnings": []}
    fields["subspace"] = Subspace(components=C, mean=m, rank_rule=rank_rule, source=source,
                                  variances=est.variances_, explained_variance_ratio=explained,
                                  **_scaling_of(est))
    calibration = getattr(est, "calibration_indices_", None)
    n = int(X.n_samples if lazy else X.shape[0])
    if est.residual_eigenvalues_.size == 0:
        # Full rank: nothing is left off the subspace, so SPE is 0 and only T² can flag.
        why = "the subspace has full rank, so no residual is left: SPE is 0 and has no limit"
        fields["warnings"].append(f"no SPE limit for this subspace: {why}")
        fields["no_limits"] = why
    else:
        plane = direction = None
        if not lazy:
            from ..compare import principal_plane, residual_direction
            Z = est._scaled(X)
            Zc = Z if calibration is None else Z[calibration]
            plane, direction = principal_plane(Zc), residual_direction(Zc, C, m)
        fields["limits"] = Limits(spe=float(est.spe_limit_), t2=float(est.t2_limit_), alpha=rule.alpha_for(values),
                                  spe_method=str(est.spe_limit_method_),
                                  calibration_rows=n if calibration is None else int(np.size(calibration)),
                                  calibration=calibration_text, data_plane=plane, residual_direction=direction,
                                  **_adjustment(est))
    fields["outliers"] = Outliers(rule=rule.describe(values), score="outlier_score",
                                  n_flagged=count_true(rows.outlier), n_samples=n)
    # in memory or on disk alike (an out-of-core fit's distances are per-row results too)
    from ..outlier_map import outlier_map_of_scores
    try:
        om = outlier_map_of_scores(rows.spe, rows.t2, rows.projection, robust=calibration is not None,
                                   cutoffs=map_cutoffs)
    except ValueError as exc:   # a flat component: no score distance along it
        fields["no_outlier_map"] = str(exc)
    else:
        fields["arrays"].update(score_distance=om["score_distance"], orthogonal_distance=om["orthogonal_distance"],
                                map_region=om["region"])
        fields["outlier_map"] = OutlierMap(sd_cutoff=float(om["sd_cutoff"]), od_cutoff=float(om["od_cutoff"]),
                                           counts=dict(om["counts"]))
    if lazy or not rows.in_memory:
        fields["storage"] = Storage(out_of_core=lazy, results_in=_results_folder(rows),
                                    passes=int(getattr(rows, "passes", 0) or 0))
    return fields


def _results_folder(rows) -> str:
    """"memory", or the folder of the store holding the per-row results."""
    for v in (rows.spe, rows.projection, *rows.extra.values()):
        if not isinstance(v, np.ndarray):
            store = getattr(v, "store", None)
            root = getattr(store, "root", None) or getattr(store, "path", None)
            return str(root) if root is not None else "a Zarr store"
    return "memory"


def _run_pca(est, dataset, values, rep):
    X = _rows(dataset)
    rows = est.fit_row_results(X, progress=rep)
    fields = _model_fields(est, X, rows, rule=LIMITS_RULE, values=values, source="PCA",
                           rank_rule=_rank_rule(values), explained=float(est.explained_variance_ratio_.sum()))
    fields["arrays"]["explained_variance"] = est.explained_variance_
    return fields


def _run_cop(est, dataset, values, rep):
    from .._passes import count_true
    X = _rows(dataset)
    rows = est.fit_row_results(X, progress=rep)
    fields = _model_fields(est, X, rows, rule=LIMITS_RULE, values=values, source="Coherence Pursuit",
                           rank_rule=_rank_rule(values), calibration_text="all but log-SPE outliers")
    fields["selection"] = Selection(selected=count_true(rows.extra["selected"]),
                                    degenerate=count_true(rows.extra["degenerate"]))
    return fields


def _run_robpca(est, dataset, values, rep):
    X = _rows(dataset)
    rows = est.fit_row_results(X, progress=rep)
    fields = _model_fields(est, X, rows, rule=ROBPCA_RULE, values=values, source="ROBPCA",
                           rank_rule="given" if values.get("n_components") is not None else "80 % rule",
                           calibration_text="all samples (robust cut-offs)",
                           explained=float(est.explained_variance_ratio_.sum()),
                           map_cutoffs=(est.sd_cutoff_, est.od_cutoff_))
    fields["arrays"]["explained_variance"] = est.explained_variance_
    return fields


def _run_pcp(est, dataset, values, rep):
    from ..compare import lowrank_subspace
    X = _X(dataset)
    est.fit(X, progress=rep.span(0, 0.95))
    h = est.history_
    arrays = {"low_rank": est.low_rank_, "sparse": est.sparse_,
              "history_residual": np.asarray(h["residual"]), "history_rank": np.asarray(h["rank"]),
              "history_nnz": np.asarray(h["nnz"])}
    score = est.sample_scores_
    # The estimator's own cut (its limit at alpha, median + 3 MAD, or the contamination's
    # quantile): flags == est.predict(X) == -1.
    outlier = score > -est.offset_
    decomposition = Decomposition(rank_of_L=int(est.rank_), lam=float(est.lam_), iterations=int(est.n_iter_),
                                  converged=bool(est.converged_), nnz_S=int(np.count_nonzero(est.sparse_)),
                                  mu=float(est.mu_), scaling=est.scaling_)
    outliers = Outliers(rule=PCP_RULE.describe(values), score="sparse_score",
                        n_flagged=int(outlier.sum()), n_samples=int(X.shape[0]))
    fields = dict(sample_scores={"sparse_score": score}, flags={"outlier": outlier}, arrays=arrays,
                  decomposition=decomposition, outliers=outliers)
    if int(est.rank_) == 0:
        # Nothing low-rank was found: no subspace to project onto or measure distances from.
        fields["no_outlier_map"] = ("robust PCA found no low-rank part (L = 0, S = X), so there is no "
                                    "subspace to measure distances from")
        return fields
    # The subspace of L: its PCP_DIRECTIONS leading directions at most.
    sub = lowrank_subspace(est.low_rank_, n_components=min(int(est.rank_), PCP_DIRECTIONS))
    arrays["projection"] = (X - sub["mean"]) @ sub["components"].T
    # The outlier map of X against L's subspace. The spread along each direction is robust
    # (1.4826 MAD of X's scores): L's own spread understates it along its weak directions (on
    # ODDS cardio every sample then lay beyond the score cut-off).
    T = arrays["projection"]
    mad = 1.4826 * np.median(np.abs(T - np.median(T, axis=0)), axis=0)
    var = np.where(mad > 0, mad ** 2, T.var(axis=0, ddof=1))
    more, said = _outlier_map(X, sub["components"], sub["mean"], var, robust=True)
    arrays.update(more)
    fields["subspace"] = Subspace(components=sub["components"], mean=sub["mean"], rank_rule="rank of L",
                                  source="PCA of L", variances=var)
    fields.update(said)
    return fields


def _run_residual(est, dataset, values, rep):
    from .._passes import count_true
    X = _rows(dataset)
    rows = est.fit_row_results(X, progress=rep)
    fields = _model_fields(est, X, rows, rule=RESIDUAL_RULE, values=values, source="PCA",
                           rank_rule=_rank_rule(values))
    if not getattr(dataset, "is_lazy", False):
        # Its map offers the plane the scorer itself chose (the feature axes of 2-D data).
        if fields.get("limits") is not None:
            fields["limits"].data_plane = np.atleast_2d(np.asarray(est.plane_, dtype=float))
        fields["arrays"]["contributions"] = est.contributions(X)
    flags = fields["flags"]
    out_spe, out_t2 = flags["outside_spe"], flags["outside_t2"]
    flags["outside_either"] = out_spe | out_t2
    fields["outliers"].spe_only = count_true(out_spe & ~out_t2)
    fields["outliers"].t2_only = count_true(out_t2 & ~out_spe)
    return fields


def _run_esfs(est, dataset, values, rep):
    X = _X(dataset)
    est.fit(X, progress=rep)
    arrays = {"eigenvalues": est.eigenvalues_, "derivatives": est.derivatives_, "ranking": est.ranking_,
              "selected_eigenpairs": np.asarray(est.selected_eigenpairs_)}
    ranking = Ranking(sigma=float(est.sigma_), graph=str(est.graph_),
                      top_feature=str(dataset.feature_names[int(est.ranking_[0])]))
    return dict(feature_scores={"evsc": est.scores_}, arrays=arrays, ranking=ranking)


def _run_scw(est, dataset, values, rep):
    """One pass over a random order of the training samples, test accuracy measured along the way.

    Online learners see samples in order, and data files are often sorted by class (iris is): the
    stream is a seeded random permutation so the learning curve means something. With
    ``test_fraction`` > 0 a random held-out share is scored after every chunk of the stream.
    """
    X = _X(dataset, accept_sparse=est.covariance == "diagonal")
    y = np.asarray(dataset.labels)
    n = X.shape[0]
    from .._validation import check_random_state
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
    learning = Learning(online_mistake_rate=float(h["mistake_rate"][-1]), updates=int(h["updates"][-1]),
                        majority_online_mistake_rate=float(majority["online"][-1]),
                        training_accuracy=float(np.mean(pred[train] == y[train])))
    if n_test:
        arrays["history_test_seen"] = np.asarray(test_seen)
        arrays["history_test_accuracy"] = np.asarray(test_acc)
        learning.test_accuracy = float(test_acc[-1])
        learning.majority_test_accuracy = float(majority["test"])
        learning.test_samples = int(n_test)
    # The stream above is shuffled, so the fit is sound; still say when the file itself is sorted
    # by class, which matters to anyone who streams it in file order elsewhere.
    from ..online._order import label_changes, looks_sorted
    codes = np.searchsorted(classes, y)
    changes, counts = label_changes(codes, None), np.bincount(codes, minlength=classes.size)
    notes = []
    if looks_sorted(changes, counts):
        learning.sample_order = (f"the file is sorted by class ({changes} label changes in {n} samples); "
                                 f"streamed in a seeded random order")
        notes.append(f"the labels in the file arrive in long runs of one class ({changes} changes in {n} "
                     f"samples): SCW streamed them in a random order (random_state); in file order an "
                     f"online learner would learn one class at a time")
    return dict(flags={"misclassified": pred != y}, arrays=arrays, learning=learning, warnings=notes)


def _majority_baseline(classes, y_stream, y_test):
    """The learner that always predicts the class seen most so far (the lower one on equal
    counts, SCW's own rule for an exact tie), on the same stream: its cumulative online mistake
    rate (one value per sample) and, on the held-out labels, the accuracy of the stream's
    majority class. An online classifier that does not beat it has learned nothing."""
    from ..online._order import tie_broken_predictions
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
        from ..bigdata import _adapters
        return getattr(_adapters, name)(est, dataset, values, rep)
    return run


def _linear_subspace(adapter):
    """An adapter whose components span a linear subspace (through the origin), completed with
    what the views draw: for data in memory, the projection."""
    def run(est, dataset, values, rep):
        fields = adapter(est, dataset, values, rep)
        sub = fields.get("subspace")
        if sub is not None and not getattr(dataset, "is_lazy", False):
            fields["arrays"]["projection"] = _X(dataset) @ sub.components.T
        return fields
    return run


def _cls(module, name):
    def load():
        import importlib
        return getattr(importlib.import_module(module, "robustcore"), name)
    return load


def _import_params(module):
    import importlib
    return importlib.import_module(module, "robustcore").PARAMS


def _declared(module):
    # a partial of a module-level function, not a closure: a Method travels to the worker
    # process by pickle (a test's own Method, made with dataclasses.replace, does)
    import functools
    return functools.partial(_import_params, module)


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("pca", "PCA", "Principal component analysis: the non-robust baseline.",
           _cls(".subspace.pca", "PCA"), _run_pca, declared=_declared(".subspace._pca_params"), views=("scatter", "detail", "contour", "outlier-map", "comparison", "evaluation"),
           outlier_score="outlier_score", outlier_rule=LIMITS_RULE, subspace="PCA", dense_copies=8, short="PCA", rank_param="n_components",
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
           out_of_core=True),
    Method("coherence-pursuit", "Coherence Pursuit",
           "Robust subspace from the most mutually coherent samples (Rahmani & Atia 2017).",
           _cls(".subspace.coherence_pursuit", "CoherencePursuit"), _run_cop, declared=_declared(".subspace._coherence_pursuit_params"),
           views=("scatter", "detail", "contour", "outlier-map", "comparison", "evaluation"), outlier_score="outlier_score", outlier_rule=LIMITS_RULE,
           subspace="Coherence Pursuit", dense_copies=8, short="CoP", rank_param="n_components",
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
                     "Subspace Recovery\", ICML 2017 (PMLR 70).", out_of_core=True),
    Method("robpca", "ROBPCA",
           "Robust PCA from projection pursuit and the MCD (Hubert, Rousseeuw & Vanden Branden 2005).",
           _cls(".subspace.robpca", "ROBPCA"), _run_robpca, declared=_declared(".subspace._robpca_params"),
           views=("outlier-map", "scatter", "detail", "comparison", "evaluation"), outlier_score="outlier_score",
           outlier_rule=ROBPCA_RULE, subspace="ROBPCA", short="ROBPCA", rank_param="n_components",
           about="The robust PCA statisticians use first (R's rrcov PcaHubert, MATLAB's LIBRA). Each "
                 "sample's outlyingness over directions through pairs of samples picks the least "
                 "outlying 75 %, whose covariance gives the subspace; samples far off it are set "
                 "aside, and a Minimum Covariance Determinant estimate inside the subspace gives "
                 "the robust centre, axes and variances. Its outlier map is the diagnostic it was "
                 "made with: the score distance (robust Mahalanobis distance along the subspace) "
                 "against the orthogonal distance (off it), each with its cut-off at 0.975; a "
                 "sample beyond either is flagged. The rank is the smallest that explains 80 % "
                 "of the robust variance (at most 10) unless given. Out of core the robust stages "
                 "run on a random sample of 100,000 samples and every sample is scored in one "
                 "pass; the data are not rescaled unless asked (scale).",
           reference="M. Hubert, P. J. Rousseeuw and K. Vanden Branden, \"ROBPCA: a new approach to "
                     "robust principal component analysis\", Technometrics 47(1), 2005.", out_of_core=True),
    Method("pcp", "Robust PCA (PCP)",
           "Principal Component Pursuit: split X into low-rank L plus sparse S (Candès et al. 2011).",
           _cls(".subspace.pcp", "PCP"), _run_pcp, declared=_declared(".subspace._pcp_params"), views=("decomposition", "detail", "scatter", "outlier-map", "comparison", "evaluation"),
           outlier_score="sparse_score", outlier_rule=PCP_RULE, subspace="PCA of L", dense_copies=5, short="PCP",
           about="Splits the data into a low-rank part L plus a sparse part S by minimising "
                 "‖L‖* + λ‖S‖₁ with X = L + S. Suited to corruption of individual entries rather "
                 "than whole samples: a moving object over a static video background (L is the "
                 "background, S the foreground), scratches on images, sensor glitches. The rank "
                 "of L is found, not chosen. Each sample's score is the size of its row of S; "
                 "each column's median is taken out first (its zero is arbitrary), and samples "
                 "above a limit at a 1 % false-alarm rate are flagged. "
                 f"Views draw L's {PCP_DIRECTIONS} "
                 "leading directions at most as its subspace.",
           reference="E. J. Candès, X. Li, Y. Ma and J. Wright, \"Robust principal component "
                     "analysis?\", Journal of the ACM 58(3), 2011."),
    Method("residual", "SPE / T² scoring",
           "Reconstruction error (SPE) and Hotelling T² against a subspace, with control limits.",
           _cls(".anomaly", "ResidualScorer"), _run_residual, declared=_declared("._anomaly_params"), views=("contour", "scatter", "detail", "outlier-map", "evaluation"),
           outlier_score="outlier_score", outlier_rule=RESIDUAL_RULE, subspace="PCA", dense_copies=10, short="SPE/T²", rank_param="n_components",
           about="Anomaly scores against a PCA subspace: SPE (the squared distance from the "
                 "subspace) and Hotelling's T² (the distance along it, in units of the spread), "
                 "each with a control limit at false-alarm rate alpha. Each score is blind to what "
                 "the other sees: a sample far out along the subspace has a small SPE. The SPE/T² "
                 "map draws both so the blind spot shows. Use it for process monitoring or as a "
                 "transparent anomaly score; the subspace is fitted on all samples, so outliers in "
                 "the training data widen the limits.",
           reference="J. E. Jackson and G. S. Mudholkar, \"Control procedures for residuals "
                     "associated with principal component analysis\", Technometrics 21(3), 1979.",
           out_of_core=True),
    Method("online-rpca", "Online robust PCA (streaming)",
           "Low-rank + sparse one batch of frames at a time, for long videos (OR-PCA, Feng, Xu & Yan 2013).",
           _cls(".subspace.online_rpca", "OnlineRPCA"), _linear_subspace(_bigdata("run_online_rpca")), declared=_declared(".subspace._online_rpca_params"),
           views=("decomposition", "detail", "comparison", "evaluation"), out_of_core=True,
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
           _cls(".features.esfs", "ESFS"), _run_esfs, declared=_declared(".features._esfs_params"), views=("ranking",), short="ESFS",
           about="Ranks features without labels by how much the cluster structure depends on them: "
                 "a similarity graph of the samples is built, and each feature is scored by the "
                 "sensitivity of the graph Laplacian's smallest non-trivial eigenvalues to it. "
                 "Features that carry the clusters come first. Use it to find the few features "
                 "worth plotting or keeping.",
           reference="Y. Jiang and J. Ren, \"Eigenvalue sensitive feature selection\", ICML 2011."),
    Method("scw", "SCW online classifier",
           "Soft Confidence-Weighted online learning, SCW-I / SCW-II (Wang, Zhao & Hoi 2012).",
           _cls(".online.scw", "SCW"), _run_scw, declared=_declared(".online._scw_params"), views=("learning-curve",), needs_labels=True,
           accepts_sparse=True, extra_params=(_TEST_FRACTION,), sparse_when=("covariance", "diagonal"), dense_copies=2, short="SCW",
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
        raise ValueError(f"unknown method {name!r:.80}; choose one of: {', '.join(METHODS)}") from None
