"""One registry entry (:class:`Method`) and a run of it: validate, check the data, fit, assemble."""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .._params import Param, shape_errors, validate_params
from .._progress import Reporter
from ..datasets._kind import Kind
from ..result import RunResult
from ._rules import OutlierRule
from ._takes import lazy_kinds, refusal

__all__ = ["Method", "View", "estimator_params"]

#: The views a method's results can feed (the window's and the command line's ``--figure`` names).
View = Literal["scatter", "detail", "contour", "outlier-map", "comparison", "evaluation", "decomposition",
               "ranking", "learning-curve"]


@dataclass(frozen=True)
class Method:
    name: str                   # stable, lower-case, hyphenated (CLI name)
    title: str                  # shown in the window
    description: str            # one line
    factory: Callable[[], type]  # returns the estimator class (imported lazily)
    adapter: Callable[[Any, Any, dict], dict]  # (estimator, dataset, params) -> RunResult fields
    views: tuple[View, ...] = ()  # the views this method's results feed, best first
    needs_labels: bool = False
    accepts_sparse: bool = False
    extra_params: tuple = ()    # run-level parameters that are not the estimator's (e.g. alpha)
    outlier_rule: OutlierRule | None = None  # how result.flags["outlier"] is decided
    subspace: str = ""          # where the subspace the views draw comes from (axis labels)
    short: str = ""             # a short name for crowded axes ("CoP")
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
    def lazy_kinds(self) -> tuple[Kind, ...]:
        """The kinds of data it takes opened out of core (robustcore.methods._takes); () = in
        memory only."""
        return lazy_kinds(self.name)

    @property
    def out_of_core(self) -> bool:
        """Whether the method takes some data opened out of core."""
        return bool(self.lazy_kinds)

    @property
    def about(self) -> str:
        """The help page's paragraph: what it does and when to use it (robustcore.methods._about)."""
        from ._about import ABOUT
        return ABOUT[self.name].about if self.name in ABOUT else ""

    @property
    def reference(self) -> str:
        from ._about import ABOUT
        return ABOUT[self.name].reference if self.name in ABOUT else ""

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

    def shape_errors(self, values: dict, n_samples: int, n_features: int) -> dict[str, str]:
        """name -> message for the validated ``values`` that data of this shape refuse, by the
        declarations' shape rules (the fit's own): known before the data are read."""
        return shape_errors(self.params(), values, n_samples, n_features)

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
        from ._assemble import assemble
        values = self.validate(params or {})
        why = refusal(self, dataset)   # before the labels: data opened out of core have none
        if why is not None:
            raise ValueError(why)
        if self.needs_labels and dataset.labels is None:
            raise ValueError(f"{self.title} needs class labels, and data set '{dataset.name}' has none; "
                             f"load a file with a label column")
        X = None if dataset.is_lazy else dataset.X
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


def estimator_params(method: Method, values: dict, dataset) -> dict:
    """The estimator's own parameters out of a run's validated ``values``. On image data
    ``scale`` is resolved here by the one rule (:func:`robustcore._scaling.auto_scaling`: frames
    keep their pixels as they are), since the estimator is given the pixels without their
    image shape."""
    from .._scaling import auto_scaling
    names = {p.name for p in method.estimator_class.param_specs()}
    out = {k: v for k, v in values.items() if k in names}
    if "scale" in out and dataset.is_image:
        out["scale"] = auto_scaling(out["scale"], frames=True)
    return out
