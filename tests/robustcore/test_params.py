"""The shared contracts: parameter declarations, estimator base, input checks, progress protocol,
and scikit-learn API conventions of the subspace / anomaly estimators."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

from robustcore import Cancelled, NotFittedError
from robustcore._base import Estimator
from robustcore._params import Param, check_range, param_error, validate_params
from robustcore._progress import Reporter
from robustcore._validation import check_array, check_fraction
from robustcore.anomaly import ResidualScorer
from robustcore.subspace.coherence_pursuit import CoherencePursuit
from robustcore.subspace.pca import PCA


# -- Param --------------------------------------------------------------------------------

def test_param_error_style():
    e = param_error("n_components", "an integer in [1, 5] (hint)", 9)
    assert str(e) == "n_components must be an integer in [1, 5] (hint); got 9"
    assert str(param_error("x", "a number", 0.25)) == "x must be a number; got 0.25"


def test_check_range():
    assert check_range("k", 3, 1, 5, integer=True) == 3 and isinstance(check_range("k", 3.0, 1, 5, integer=True), int)
    with pytest.raises(ValueError, match=r"^k must be an integer in \[1, 5\] \(at most the rank\); got 9$"):
        check_range("k", 9, 1, 5, integer=True, hint="at most the rank")
    with pytest.raises(ValueError, match=r"a must be a number in \(0, 1\); got 1"):
        check_range("a", 1.0, 0, 1, low_inclusive=False, high_inclusive=False)
    for bad in (2.5, True, "3", float("nan"), float("inf"), None):
        with pytest.raises(ValueError, match="^k must be"):
            check_range("k", bad, 1, 5, integer=True)
    assert check_range("x", -1e9, high=0) == -1e9
    with pytest.raises(ValueError, match=">= 0"):
        check_range("x", -1, low=0)


def test_param_validate_numbers():
    p = Param("alpha", float, 0.01, "rate", low=0, high=1, low_inclusive=False, high_inclusive=False)
    assert p.validate(0.5) == 0.5 and isinstance(p.validate(np.float32(0.5)), float)
    for bad in (0, 1, -0.1, float("nan"), "0.1", None, True):
        with pytest.raises(ValueError, match=r"^alpha must be a number in \(0, 1\); got"):
            p.validate(bad)
    q = Param("k", int, 2, "count", low=1, allow_none=True, none_label="half")
    assert q.validate(None) is None and q.validate(3.0) == 3 and isinstance(q.validate(np.int64(4)), int)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, or None \(half\); got 2.5"):
        q.validate(2.5)


def test_param_validate_choices_and_bool():
    c = Param("mode", str, "a", "m", choices=("a", "b"))
    assert c.validate("b") == "b"
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'; got 'c'"):
        c.validate("c")
    n = Param("norm", int, 2, "n", choices=(2, 1))
    with pytest.raises(ValueError, match="norm"):
        n.validate(True)  # True == 1 but is not a norm
    b = Param("flag", bool, False, "f")
    assert b.validate(True) is True and b.validate(np.bool_(False)) is False
    with pytest.raises(ValueError, match="flag must be True or False"):
        b.validate(1)


def test_param_parse_text():
    assert Param("k", int, 2, "", low=1).parse(" 3 ") == 3
    assert Param("k", int, 2, "", low=1, allow_none=True).parse("auto") is None
    assert Param("a", float, 0.1, "").parse("1e-3") == 0.001
    assert Param("f", bool, False, "").parse("yes") is True
    assert Param("f", bool, False, "").parse("off") is False
    assert Param("norm", int, 2, "", choices=(2, 1)).parse("1") == 1
    with pytest.raises(ValueError, match="k must be"):
        Param("k", int, 2, "", low=1).parse("two")
    with pytest.raises(ValueError, match="f must be True or False"):
        Param("f", bool, False, "").parse("maybe")


def test_validate_params_unknown_and_defaults():
    specs = (Param("a", int, 1, "", low=0), Param("b", str, "x", "", choices=("x", "y")))
    assert validate_params(specs, {"a": 3}) == {"a": 3, "b": "x"}
    with pytest.raises(ValueError, match="unknown parameter 'c'.*a, b"):
        validate_params(specs, {"c": 1})


@pytest.mark.parametrize("cls", [PCA, CoherencePursuit, ResidualScorer])
def test_declarations_are_complete(cls):
    est = cls()
    for p in cls.param_specs():
        assert p.help and p.help.strip() and "\n" not in p.help
        assert getattr(est, p.name) == p.default, p.name
        # every default passes its own validation
        assert p.validate(p.default) == p.default or p.default is None
    import inspect
    sig = inspect.signature(cls.__init__)
    assert [n for n in sig.parameters if n != "self"] == [p.name for p in cls.param_specs()]


# -- Estimator base -----------------------------------------------------------------------

class Toy(Estimator):
    _params = (Param("k", int, 1, "k", low=1),)

    def __init__(self, k=1):
        self.k = k

    def fit(self, X, progress=None):
        p = self._start_fit()
        rep = Reporter(progress)
        rep(0.5, "half")
        self._set_fitted(k_=p["k"], total_=float(np.sum(X)))
        return self


def test_base_get_set_params_and_repr():
    t = Toy()
    assert t.get_params() == {"k": 1}
    assert t.set_params(k=3) is t and t.k == 3
    with pytest.raises(ValueError, match="unknown parameter 'j' for Toy; valid parameters: k"):
        t.set_params(j=1)
    assert repr(t) == "Toy(k=3)" and repr(Toy()) == "Toy()"


def test_base_fit_lifecycle():
    t = Toy()
    assert not t.__sklearn_is_fitted__()
    with pytest.raises(NotFittedError, match="not fitted"):
        t._check_fitted("k_")
    t.fit(np.ones(3))
    assert t.__sklearn_is_fitted__() and t.total_ == 3.0
    t._check_fitted("k_", "total_")
    with pytest.raises(NotFittedError):
        t._check_fitted("missing_")
    with pytest.raises(Cancelled):
        t.fit(np.ones(3), progress=lambda f, m: False)
    assert not t.__sklearn_is_fitted__() and not hasattr(t, "k_")
    t.k = 0
    with pytest.raises(ValueError, match="k must be an integer >= 1; got 0"):
        t.fit(np.ones(3))
    with pytest.raises(AssertionError):
        t._set_fitted(bad=1)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


# -- check_array ----------------------------------------------------------------------------

def test_check_array_conversions():
    out = check_array([[1, 2], [3, 4]])
    assert out.dtype == np.float64 and out.shape == (2, 2)
    a = np.ones((3, 2))
    assert check_array(a) is a  # no copy when nothing to convert
    c = check_array(a, copy=True)
    assert c is not a and np.array_equal(c, a)
    s = check_array(sp.coo_matrix(np.eye(3)), accept_sparse=True)
    assert sp.isspmatrix_csr(s)


@pytest.mark.parametrize("X, match", [
    (np.array([1.0, 2.0]), "1-D array of length 2"),
    (np.ones((2, 2, 2)), r"got shape \(2, 2, 2\)"),
    (np.ones((0, 3)), "at least 1 sample"),
    (np.ones((3, 0)), "at least 1 feature"),
    ([["x"]], "numeric"),
    (np.array([[1.0, 2.0], [3.0, np.nan]]), r"1 NaN or infinite value\(s\) \(first: NaN at row 1, column 1\)"),
    (np.array([[np.inf, 2.0]]), "infinite at row 0, column 0"),
    (sp.csr_matrix(np.eye(2)), "sparse matrix"),
])
def test_check_array_errors(X, match):
    with pytest.raises(ValueError, match=match):
        check_array(X)


def test_check_array_sparse_nan_and_minimums():
    m = sp.csr_matrix(np.array([[0.0, np.nan], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="NaN at row 0, column 1"):
        check_array(m, accept_sparse=True)
    with pytest.raises(ValueError, match="Y must have at least 2 sample"):
        check_array(np.ones((1, 2)), name="Y", min_samples=2)
    assert check_fraction("f", 0.5) == 0.5
    with pytest.raises(ValueError, match=r"f must be a number in \(0, 1\)"):
        check_fraction("f", 1.0)


# -- Reporter ---------------------------------------------------------------------------------

def test_reporter_maps_spans_and_cancels():
    seen = []
    rep = Reporter(lambda f, m: seen.append((round(f, 6), m)))
    rep(0.5, "a")
    sub = rep.span(0.2, 0.6)
    sub(0.5, "b")
    sub.span(0.5, 1.0)(1.0, "c")
    sub(2.0, "clip")
    assert seen == [(0.5, "a"), (0.4, "b"), (0.6, "c"), (0.6, "clip")]
    Reporter(None)(0.3, "nothing happens")
    with pytest.raises(Cancelled, match="stop here"):
        Reporter(lambda f, m: False)(0.1, "stop here")

    def raiser(f, m):
        raise Cancelled("user")
    with pytest.raises(Cancelled, match="user"):
        Reporter(raiser).span(0, 0.5)(0.2)
    with pytest.raises(ValueError, match="progress must be a callable"):
        Reporter(42)


# -- scikit-learn API conventions for PCA, CoP, ResidualScorer -------------------------------
# sklearn's check_estimator requires inheriting from sklearn's BaseEstimator (__sklearn_tags__),
# which robustcore must not import, so the relevant checks are written out here instead.

ESTIMATORS = [
    lambda: PCA(n_components=2),
    lambda: CoherencePursuit(n_components=2, n_inliers=20, refine=True),
    lambda: CoherencePursuit(n_components=2, selection="adaptive", random_state=0),
    lambda: ResidualScorer(n_components=2),
]


def _X(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((60, 6)) @ np.diag([5, 3, 1, 0.5, 0.3, 0.2]) + 1.0


@pytest.mark.parametrize("make", ESTIMATORS)
def test_sklearn_clone_and_params(make):
    sklearn_base = pytest.importorskip("sklearn.base")
    est = make()
    params = est.get_params()
    cl = sklearn_base.clone(est)
    assert cl is not est and cl.get_params() == params
    est.fit(_X())
    cl2 = sklearn_base.clone(est)
    assert not cl2.__sklearn_is_fitted__()
    assert est.set_params(**params) is est
    assert repr(est).startswith(type(est).__name__ + "(")


@pytest.mark.parametrize("make", ESTIMATORS)
def test_fit_returns_self_is_deterministic_and_does_not_mutate(make):
    X = _X()
    X0 = X.copy()
    est = make()
    assert est.fit(X) is est
    np.testing.assert_array_equal(X, X0)
    a = {k: copy.deepcopy(v) for k, v in vars(est).items() if k.endswith("_")}
    est.fit(X)
    for k, v in a.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(getattr(est, k), v)
    assert est.n_features_in_ == 6
    assert est.components_.shape == (2, 6)
    np.testing.assert_allclose(est.components_ @ est.components_.T, np.eye(2), atol=1e-10)
    s = est.score_samples(X)
    np.testing.assert_array_equal(X, X0)
    assert s.shape == (60,) and np.all(np.isfinite(s)) and np.all(s >= 0)
    # list input gives the same answer as an array
    np.testing.assert_allclose(est.transform(X.tolist()), est.transform(X), rtol=1e-12)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_unfitted_and_width_errors(make):
    est = make()
    for meth in ("transform", "score_samples"):
        with pytest.raises(NotFittedError):
            getattr(est, meth)(_X())
    est.fit(_X())
    with pytest.raises(ValueError, match="features"):
        est.transform(_X()[:, :5])


@pytest.mark.parametrize("make", ESTIMATORS)
def test_refit_after_param_change_and_failed_fit_leaves_unfitted(make):
    est = make().fit(_X())
    est.set_params(n_components=50)
    with pytest.raises(ValueError, match="n_components"):
        est.fit(_X())
    assert not est.__sklearn_is_fitted__()
    est.set_params(n_components=1).fit(_X())
    assert est.components_.shape == (1, 6)


def test_seed_param_takes_none_int_or_generator_and_nothing_else():
    from robustcore._params import SeedParam
    p = SeedParam("Seed of something.")
    assert p.name == "random_state" and p.advanced and p.default is None
    gen = np.random.default_rng(3)
    assert p.validate(None) is None and p.validate(7) == 7 and p.validate(gen) is gen
    assert p.parse("auto") is None and p.parse("12") == 12
    with pytest.raises(ValueError, match=r"random_state must be an integer >= 0.*got -1"):
        p.validate(-1)
    with pytest.raises(ValueError, match="random_state"):
        p.validate("seed")
