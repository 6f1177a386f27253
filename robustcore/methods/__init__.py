"""The method registry: one entry per method, used by the window, the command line and exports.

Each :class:`Method` names its estimator (whose ``_params`` declaration builds forms and CLI
help), the views it feeds, its outlier rule, where its subspace comes from, which data it takes
out of core, and an adapter that turns a fitted estimator into a :class:`RunResult` -- the
uniform bundle of per-sample scores, flags, arrays and summary numbers that views draw and
exports write.

This is the one place where method -> views -> outlier rule -> data is declared: the views take
their method lists from :func:`methods_for_view`, the adapters apply :attr:`Method.outlier_rule`
and every legend quotes it, and :data:`LAZY_KINDS` declares which data each method takes out of
core (:func:`refusal` says why one cannot run on them). Views never compute: anything they need
(limits, variances along the components, the planes of the SPE/T² map) is put in the result here.

The package: ``registry`` (the table and what is asked of it), ``_method`` (an entry and a run),
``_rules`` (the outlier rules), ``_takes`` (which data each takes out of core), ``_assemble``
(the result, once for every method), the adapters (``_models``: PCA, Coherence Pursuit, ROBPCA,
SPE/T²; ``_pcp``; ``_esfs``; ``_scw``, SCW's stream protocol; ``_streaming``), ``_migration``
(0.1's parameter names) and ``_about`` (the help prose).
"""
from ..result import RunResult
from ._method import Method, View, estimator_params
from ._migration import RENAMED_PARAMS, upgrade_params
from ._rules import (LIMITS_RULE, METHOD_SCORE_DIRECTIONS, PCP_RULE, RESIDUAL_RULE, ROBPCA_RULE,
                     SCORE_DIRECTIONS, SPARSE_RULE, OutlierRule)
from ._takes import LAZY_KINDS, lazy_methods, refusal
from .registry import METHODS, VIEW_MIN_METHODS, get_method, method_names, methods_for_view, view_requirement

__all__ = ["Method", "View", "RunResult", "OutlierRule", "METHODS", "get_method", "method_names", "methods_for_view",
           "view_requirement", "VIEW_MIN_METHODS", "upgrade_params", "RENAMED_PARAMS", "SCORE_DIRECTIONS",
           "METHOD_SCORE_DIRECTIONS", "LAZY_KINDS", "refusal", "lazy_methods", "estimator_params", "LIMITS_RULE",
           "RESIDUAL_RULE", "SPARSE_RULE", "PCP_RULE", "ROBPCA_RULE"]
