"""Property-based: extreme scales for every estimator (issue 24).

Data of any scale from the smallest subnormal to float64's largest, constant and all-zero
columns and tables: every estimator either fits with finite outputs or refuses with a
ValueError that says what to do. A LinAlgError, an OverflowError, a RuntimeWarning (errors in
robustcore's modules under this suite's warning filter) or a NaN in an output fails.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustcore import ESFS, PCA, PCP, SCW, CoherencePursuit, ResidualScorer
from robustcore.subspace.online_rpca import OnlineRPCA

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scaled_tables(draw):
    n = draw(st.integers(8, 30))
    d = draw(st.integers(3, 6))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    kind = draw(st.sampled_from(["scaled", "scaled", "scaled", "constant", "zero", "constant-column"]))
    if kind == "constant":
        X = np.full((n, d), draw(st.sampled_from([1.0, -3.5, 1e-310, 1e300])))
    elif kind == "zero":
        X = np.zeros((n, d))
    elif kind == "constant-column":
        X[:, 0] = 7.0
    # Powers of two from the subnormals to float64's largest, then the largest value itself.
    e = draw(st.integers(-1070, 1023))
    top = np.abs(X).max()
    if kind != "zero" and top > 0:
        X = X / top
        X = np.ldexp(X, e) if draw(st.booleans()) else X * np.finfo(float).max
    return X


def _outputs(name, est, X, y):
    if name == "PCP":
        return [est.low_rank_, est.sparse_, est.sample_scores_]
    if name == "OnlineRPCA":
        return [est.sample_scores_]
    if name == "ESFS":
        return [est.scores_]
    if name == "SCW":
        return [est.decision_function(X)]
    return [est.score_samples(X), est.components_]


ESTIMATORS = {
    "PCA": lambda: PCA(n_components=2),
    "CoherencePursuit": lambda: CoherencePursuit(n_components=2),
    "ResidualScorer": lambda: ResidualScorer(n_components=2),
    "PCP": lambda: PCP(random_state=0),
    "OnlineRPCA": lambda: OnlineRPCA(n_components=2),
    "ESFS": lambda: ESFS(n_features_to_select=2),
    "SCW": lambda: SCW(),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ESTIMATORS))
@PROPS
@given(X=scaled_tables())
def test_extreme_scales_fit_finite_or_are_refused(name, X):
    y = np.where(np.arange(X.shape[0]) % 2 == 0, 1, -1)
    est = ESTIMATORS[name]()
    try:
        est.fit(X, y) if name == "SCW" else est.fit(X)
    except ValueError as exc:
        message = str(exc)
        assert len(message) > 40 and "nan" not in message.lower().split(), message
        return
    with np.errstate(all="raise"):
        for out in _outputs(name, est, X, y):
            out = np.asarray(out, dtype=np.float64)
            assert not np.isnan(out).any(), f"{name} answered NaN on data of scale {np.abs(X).max():.3g}"
