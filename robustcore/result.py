"""The typed result of one run: what the window, the command line, the exports and sessions read.

A run of a registry method (:meth:`robustcore.methods.Method.run`) ends in one :class:`RunResult`,
assembled in one place (``robustcore.methods``). Per-sample and per-feature arrays are in named
dicts (``sample_scores``, ``flags``, ``arrays``, ``feature_scores``); every number the run
reports is a typed field of one of the parts below, grouped by what it describes:

========================  ===================================================================
``subspace``              :class:`Subspace`: basis, centre, rank and how it was chosen, scaling
``limits``                :class:`Limits`: the SPE and T² control limits and their calibration
``outliers``              :class:`Outliers`: the flag rule, its score, how many were flagged
``selection``             :class:`Selection`: Coherence Pursuit's selected and degenerate samples
``decomposition``         :class:`Decomposition`: robust PCA's L + S (rank, sparsity, solver)
``stream``                :class:`Stream`: streaming robust PCA's batches and mask
``outlier_map``           :class:`OutlierMap`: score / orthogonal distance cut-offs and regions
``evaluation``            :class:`Evaluation`: how the outlier score ranks known outliers
``ranking``               :class:`Ranking`: ESFS's graph and top feature
``learning``              :class:`Learning`: SCW's stream, mistakes and test accuracy
``storage``               :class:`Storage`: in memory or out of core, where per-row results live
========================  ===================================================================

Views, exports, the run log and sessions read these fields, never a label. The text people read
(the Summary tab, the command line, ``METHOD-summary.json``) is rendered from them by
:func:`summary_items`, the one place where a field gets its label and format. A session stores
:meth:`RunResult.facts` (the scalar fields, by part) and the arrays; :meth:`RunResult.restore`
builds the same result back from both.

This module imports numpy only: nothing here fits or draws.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["RunResult", "Subspace", "Limits", "Outliers", "Selection", "Decomposition", "Stream",
           "OutlierMap", "Evaluation", "Ranking", "Learning", "Storage", "PARTS", "summary_items",
           "summary_lines", "format_value"]


#: How a fit scaled its input (robustcore._scaling): not at all, by mean and standard deviation,
#: or by median and MAD.
Scaling = Literal["none", "standard", "robust"]
#: How a subspace's rank was chosen: given, the scree plot's elbow, ROBPCA's 80 % of the robust
#: variance, or the rank of robust PCA's L.
RankRule = Literal["given", "scree elbow", "80 % rule", "rank of L"]
#: How the training scores moved Gaussian limits (robustcore.limits.control_limits).
Adjustment = Literal["kept", "raised", "lowered", "uncalibrated", "off"]


def _array(a, ndim=None):
    if a is None:
        return None
    a = np.asarray(a, dtype=np.float64)
    return np.atleast_2d(a) if ndim == 2 else a


@dataclass
class Subspace:
    """The subspace a model measures samples against, in the units it was fitted in.

    ``components`` (r, d) orthonormal rows and ``mean`` (d,) live in the model's units: the data
    scaled by ``(x - scale_center) / scale`` when ``scaling`` is not "none".
    """

    components: np.ndarray
    mean: np.ndarray
    rank_rule: RankRule = "given"
    source: str = ""                  # what spans it, for axis labels ("PCA", "PCA of L", ...)
    scaling: Scaling = "none"
    scaling_reason: str | None = None     # why, when the fit chose it itself ("image data")
    scale_center: np.ndarray | None = None
    scale: np.ndarray | None = None
    variances: np.ndarray | None = None     # spread of the scores along each component (T²)
    explained_variance_ratio: float | None = None

    ARRAYS = {"components": "components", "mean": "mean", "scale_center": "scale_center",
              "scale": "scale", "variances": "component_variances"}

    def __post_init__(self):
        self.components = _array(self.components, 2)
        self.mean = _array(self.mean)
        self.scale_center, self.scale = _array(self.scale_center), _array(self.scale)
        self.variances = _array(self.variances)

    @property
    def rank(self) -> int:
        return int(self.components.shape[0])

    @property
    def scaled(self) -> bool:
        return self.scale is not None and self.scale_center is not None

    def to_model_units(self, X) -> np.ndarray:
        """Rows X (original units) in the units of the model."""
        X = np.asarray(X, dtype=np.float64)
        return (X - self.scale_center) / self.scale if self.scaled else X

    def to_original_units(self, Z) -> np.ndarray:
        return Z * self.scale + self.scale_center if self.scaled else Z

    def in_units(self, center=None, scale=None) -> tuple[np.ndarray, np.ndarray]:
        """``(components, mean)`` of this affine subspace in other units, where a row x of the
        data is ``(x - center) / scale`` (None, None: the data's own units). Rescaling maps the
        subspace onto an affine subspace; its basis is orthonormalised in order, so the first j
        rows still span the image of this subspace's first j directions."""
        C, m = self.components, self.mean
        if self.scaled:
            C, m = C * self.scale, m * self.scale + self.scale_center
        if scale is not None:
            C, m = C / scale, (m - center) / scale
        if C is self.components:
            return C, m
        q, r = np.linalg.qr(C.T)
        q *= np.where(np.diagonal(r) < 0, -1.0, 1.0)      # keep each direction's sense
        return q.T, m


@dataclass
class Limits:
    """SPE and Hotelling T² control limits at false-alarm rate ``alpha``, and what the SPE/T²
    map draws besides them (a plane of the data and the direction of largest residual)."""

    spe: float
    t2: float
    alpha: float
    spe_method: str = "jackson-mudholkar"
    calibration_rows: int = 0
    calibration: str = "all samples"
    # How the training scores moved the Gaussian limits; both were multiplied by ``factor``.
    adjustment: Adjustment = "kept"
    factor: float = 1.0
    data_plane: np.ndarray | None = None          # (2, d), model units
    residual_direction: np.ndarray | None = None  # (d,), model units

    ARRAYS = {"data_plane": "data_plane", "residual_direction": "residual_direction"}

    def __post_init__(self):
        self.data_plane, self.residual_direction = _array(self.data_plane, 2), _array(self.residual_direction)


@dataclass
class Outliers:
    """How ``flags["outlier"]`` was decided and what it found."""

    rule: str                  # in words (robustcore.methods.OutlierRule.describe)
    score: str                 # the sample_scores entry that ranks outliers (larger = more abnormal)
    n_flagged: int
    n_samples: int
    spe_only: int | None = None    # flagged by SPE and not T² (SPE/T² scoring)
    t2_only: int | None = None
    # The share flagged among samples believed clean, when it is far from the stated rate.
    flag_rate_warning: str | None = None

    @property
    def share(self) -> float:
        return self.n_flagged / self.n_samples if self.n_samples else 0.0


@dataclass
class Selection:
    """Coherence Pursuit's samples: the most coherent ones the subspace was taken from."""

    selected: int
    degenerate: int


@dataclass
class Decomposition:
    """Robust PCA's X = L + S."""

    rank_of_L: int
    lam: float
    iterations: int | None = None
    converged: bool | None = None
    nnz_S: int | None = None
    mu: float | None = None
    scaling: Scaling = "none"
    scaling_reason: str | None = None
    # Why the split says nothing (rank 0, L of full rank, S = X), with what to change.
    degenerate: str | None = None


@dataclass
class Stream:
    """Streaming robust PCA (frames in batches)."""

    frames: int
    batches: int
    rank_of_L: int
    lambda1: float
    lambda2: float
    data_scale: float
    mask_threshold: float
    mean_foreground_share: float
    last_basis_change: float


@dataclass
class OutlierMap:
    """Score distance / orthogonal distance cut-offs and how many samples lie in each region
    (the distances themselves are in ``arrays``)."""

    sd_cutoff: float
    od_cutoff: float
    counts: dict = field(default_factory=dict)


@dataclass
class Evaluation:
    """How the method's outlier score ranks the data set's known outliers."""

    roc_auc: float
    average_precision: float
    chance: float               # average precision of a random ranking (the outlier share)
    precision_at_k: float
    k: int
    known: int                  # known outliers
    known_flagged: int | None = None
    inliers: int | None = None
    inliers_flagged: int | None = None


@dataclass
class Ranking:
    """ESFS: the similarity graph and the best feature."""

    sigma: float
    graph: str
    top_feature: str


@dataclass
class Learning:
    """SCW's one pass over the training stream."""

    online_mistake_rate: float
    updates: int
    majority_online_mistake_rate: float
    training_accuracy: float
    test_accuracy: float | None = None
    majority_test_accuracy: float | None = None
    test_samples: int = 0
    sample_order: str | None = None     # set when the file is sorted by class


@dataclass
class Storage:
    """Where the run's data and per-row results are."""

    out_of_core: bool = False
    results_in: str = "memory"          # "memory" or the folder of the store
    passes: int = 0                     # passes over the data the fit and its results took (0: not counted)


#: part name -> class, in the order the summary lists them.
PARTS = {"subspace": Subspace, "selection": Selection, "decomposition": Decomposition, "stream": Stream,
         "limits": Limits, "outliers": Outliers, "outlier_map": OutlierMap, "ranking": Ranking,
         "learning": Learning, "evaluation": Evaluation, "storage": Storage}


@dataclass
class RunResult:
    """Everything one run produced, tagged with what produced it.

    Attributes
    ----------
    method, params, data_fingerprint : what produced it (registry name, validated parameters,
        the data's fingerprint).
    estimator : the fitted estimator (None once restored from a session).
    sample_scores : name -> (n,) float array, larger = more abnormal except "coherence".
    flags : name -> (n,) bool array (``flags["outlier"]`` is ``outliers.rule``'s flag).
    arrays : name -> array (projections, L and S, histories, distances ...).
    feature_scores : name -> (d,) array (ESFS).
    subspace ... storage : the typed parts (module doc); None where the method has none.
    no_limits : why a subspace model has no control limits (full rank), or None.
    warnings : what the user must know about this run, in words.
    elapsed : seconds; feature_names : the data's feature names in column order.
    """

    method: str
    params: dict
    data_fingerprint: str
    estimator: Any = None
    sample_scores: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    feature_scores: dict = field(default_factory=dict)
    subspace: Subspace | None = None
    selection: Selection | None = None
    decomposition: Decomposition | None = None
    stream: Stream | None = None
    limits: Limits | None = None
    outliers: Outliers | None = None
    outlier_map: OutlierMap | None = None
    ranking: Ranking | None = None
    learning: Learning | None = None
    evaluation: Evaluation | None = None
    storage: Storage = field(default_factory=Storage)
    no_limits: str | None = None
    no_outlier_map: str | None = None
    warnings: list = field(default_factory=list)
    elapsed: float = 0.0
    feature_names: list = field(default_factory=list)

    @property
    def primary_score(self) -> str | None:
        if self.outliers is not None:
            return self.outliers.score
        return next(iter(self.sample_scores), None)

    @property
    def rank(self) -> int | None:
        """The rank of the result's own low-rank model: the rank of L for robust PCA, else the
        subspace's number of components."""
        for part in (self.decomposition, self.stream):
            if part is not None:
                return int(part.rank_of_L)
        return self.subspace.rank if self.subspace is not None else None

    @property
    def summary(self) -> dict:
        """The run's numbers in words (label -> value), rendered from the fields
        (:func:`summary_items`); for people and for files people read, never for code."""
        return dict(summary_items(self))

    # -- arrays and facts, for files and sessions ---------------------------------------------
    def all_arrays(self) -> dict:
        """``arrays`` plus the typed parts' arrays under their file names (components, mean,
        scale, component_variances, data_plane, residual_direction): what an export writes."""
        out = dict(self.arrays)
        for part in (self.subspace, self.limits):
            if part is None:
                continue
            for attr, name in part.ARRAYS.items():
                v = getattr(part, attr)
                if v is not None:
                    out[name] = v
        return out

    def fields_of(self, kind: str) -> dict:
        """name -> array of one kind of field as files hold them: "sample_scores", "flags",
        "feature_scores", or "arrays" (:meth:`all_arrays`)."""
        return self.all_arrays() if kind == "arrays" else getattr(self, kind)

    def facts(self) -> dict:
        """The typed parts' scalar fields, by part: ``{"subspace": {"rank_rule": ...}, ...}``
        (JSON-able; arrays are in :meth:`all_arrays`). A session stores this."""
        out = {}
        for name in PARTS:
            part = getattr(self, name)
            if part is None:
                continue
            arrays = getattr(type(part), "ARRAYS", {})
            out[name] = {f.name: _plain(getattr(part, f.name)) for f in dataclasses.fields(part)
                         if f.name not in arrays}
        for key in ("no_limits", "no_outlier_map"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def restore(cls, *, method: str, params: dict, data_fingerprint: str, facts: dict, arrays: dict,
                sample_scores=None, flags=None, feature_scores=None, warnings=(), elapsed: float = 0.0,
                feature_names=()) -> RunResult:
        """The result that :meth:`facts` and :meth:`all_arrays` describe (a saved run, reopened).
        Raises ``ValueError`` naming what does not fit."""
        arrays = dict(arrays)
        parts = {}
        for name, kind in PARTS.items():
            given = facts.get(name)
            if given is None:
                continue
            if not isinstance(given, dict):
                raise ValueError(f"the saved result's '{name}' must be an object")
            names = {f.name for f in dataclasses.fields(kind)}
            unknown = set(given) - names
            if unknown:
                raise ValueError(f"the saved result's '{name}' has unknown field(s) "
                                 f"{', '.join(sorted(unknown))}")
            values = dict(given)
            if isinstance(values.get("scaling"), str) and values["scaling"] in _OLD_SCALING:
                values["scaling"], values["scaling_reason"] = _OLD_SCALING[values["scaling"]]
            for attr, file_name in getattr(kind, "ARRAYS", {}).items():
                values[attr] = arrays.pop(file_name, None)
            try:
                parts[name] = kind(**values)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"the saved result's '{name}' does not fit: {exc}") from None
        if "subspace" in parts and parts["subspace"].components.ndim != 2:
            raise ValueError("the saved subspace's components are not a matrix")
        return cls(method=method, params=dict(params), data_fingerprint=data_fingerprint,
                   sample_scores=dict(sample_scores or {}), flags=dict(flags or {}), arrays=arrays,
                   feature_scores=dict(feature_scores or {}), warnings=list(warnings), elapsed=float(elapsed),
                   feature_names=list(feature_names), no_limits=_str_or_none(facts.get("no_limits")),
                   no_outlier_map=_str_or_none(facts.get("no_outlier_map")), **parts)


# Sessions saved before the scaling's reason had a field of its own wrote it into the scaling.
_OLD_SCALING = {"none (image data)": ("none", "image data")}


def _str_or_none(v):
    return None if v is None else str(v)


def _plain(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


# -- the one place where fields become words --------------------------------------------------

def format_value(v) -> str:
    """A field's value as the summary prints it."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def summary_lines(res: RunResult, indent: str = "  ") -> list[str]:
    """The summary as text lines, ``label: value``, then the warnings: what the Summary tab and
    the command line print."""
    lines = [f"{indent}{k}: {format_value(v)}" for k, v in summary_items(res)]
    return lines + [f"{indent}warning: {w}" for w in res.warnings]


def _scaling_text(part) -> str:
    return f"{part.scaling} ({part.scaling_reason})" if part.scaling_reason else part.scaling


def _rank_text(rank: int, rule: str) -> Any:
    return rank if rule == "given" else f"{rank} ({rule})"


def summary_items(res: RunResult) -> list[tuple[str, Any]]:
    """``[(label, value), ...]``: the run's numbers as the Summary tab, the command line and the
    summary files show them. Values are numbers, booleans or short texts."""
    out: list[tuple[str, Any]] = []
    add = out.append
    s = res.subspace
    if res.decomposition is not None:
        d = res.decomposition
        add(("iterations", d.iterations))
        add(("converged", d.converged))
        add(("rank of L", d.rank_of_L))
        if d.nnz_S is not None:
            add(("nnz of S", d.nnz_S))
        add(("lambda", d.lam))
        if d.mu is not None:
            add(("mu", d.mu))
        add(("scaling", _scaling_text(d)))
        if d.degenerate:
            add(("degenerate split", d.degenerate))
    elif res.stream is not None:
        t = res.stream
        out += [("frames", t.frames), ("batches", t.batches), ("rank of L", t.rank_of_L),
                ("lambda1", t.lambda1), ("lambda2", t.lambda2), ("data scale", t.data_scale),
                ("mask threshold", t.mask_threshold), ("mean foreground share", t.mean_foreground_share),
                ("last basis change", t.last_basis_change)]
    elif s is not None:
        add(("rank", _rank_text(s.rank, s.rank_rule)))
        if s.explained_variance_ratio is not None:
            add(("explained variance ratio", s.explained_variance_ratio))
        add(("scaling", _scaling_text(s)))
    if res.selection is not None:
        add(("selected inliers", res.selection.selected))
        add(("degenerate samples", res.selection.degenerate))
    if res.limits is not None:
        lim = res.limits
        if lim.calibration != "all samples":
            add(("calibrated on", f"{lim.calibration_rows} samples ({lim.calibration})"))
        if "alpha" in res.params:
            add(("alpha", lim.alpha))
    o = res.outliers
    if o is not None:
        add(("outlier rule", o.rule))
    if res.no_limits:
        add(("no limits", res.no_limits))
    if res.limits is not None:
        add(("SPE limit", res.limits.spe))
        add(("T2 limit", res.limits.t2))
        if res.limits.adjustment in ("raised", "lowered"):
            add(("limits", f"{res.limits.adjustment} to {res.limits.factor:.3g}x the Gaussian ones by the "
                           f"training scores' quantiles, so clean samples are flagged near alpha"))
    if o is not None:
        add(("flagged", o.n_flagged))
        if o.spe_only is not None:
            add(("flagged by SPE only", o.spe_only))
            add(("flagged by T2 only", o.t2_only))
        if o.flag_rate_warning:
            add(("flag rate", o.flag_rate_warning))
    m = res.outlier_map
    if m is not None:
        add(("SD cut-off", m.sd_cutoff))
        add(("OD cut-off", m.od_cutoff))
        add(("outlier map", ", ".join(f"{c} {r}" for r, c in m.counts.items())))
    elif res.no_outlier_map:
        add(("no outlier map", res.no_outlier_map))
    if res.ranking is not None:
        r = res.ranking
        out += [("sigma", r.sigma), ("graph", r.graph), ("top feature", r.top_feature)]
    if res.learning is not None:
        g = res.learning
        out += [("online mistake rate", g.online_mistake_rate), ("updates", g.updates),
                ("majority-class online mistake rate", g.majority_online_mistake_rate),
                ("training accuracy", g.training_accuracy)]
        if g.test_samples:
            out += [("test accuracy", g.test_accuracy), ("majority-class test accuracy", g.majority_test_accuracy),
                    ("test samples", g.test_samples)]
        if g.sample_order:
            add(("sample order", g.sample_order))
    if res.storage.out_of_core:
        add(("out of core", True))
        if res.storage.passes:
            add(("passes over the data", res.storage.passes))
        add(("results in", res.storage.results_in))
    elif res.stream is not None:
        add(("results in", res.storage.results_in))
    e = res.evaluation
    if e is not None:
        add(("ROC-AUC (known outliers)", round(e.roc_auc, 4)))
        add(("average precision", f"{e.average_precision:.3f} (chance {e.chance:.3f})"))
        add((f"precision at k = {e.k}", round(e.precision_at_k, 4)))
        if e.known_flagged is not None:
            add(("known outliers flagged", f"{e.known_flagged:,} of {e.known:,}"))
            add(("inliers flagged", f"{e.inliers_flagged:,} of {e.inliers:,}"))
    return out
