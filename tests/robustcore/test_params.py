"""The shared contracts: parameter declarations, estimator base, input checks, progress protocol,
and scikit-learn API conventions of the subspace / anomaly estimators."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

import inspect

from robustcore import Cancelled, NotFittedError
from robustcore._base import Estimator, fit_protocol
from robustcore._params import Param, check_range, param_error, validate_params
from robustcore._progress import Reporter
from robustcore._validation import check_random_state, validate_X
from robustcore.anomaly import ResidualScorer
from robustcore.methods import METHODS
from robustcore.subspace.coherence_pursuit import CoherencePursuit
from robustcore.subspace.pca import PCA


# -- Param --------------------------------------------------------------------------------

def test_param_error_style():
    e = param_error("n_components", "an integer in [1, 5] (hint)", 9)
    assert str(e) == "The 'n_components' parameter must be an integer in [1, 5] (hint). Got 9 instead."
    e = param_error("x", "a number", 0.25, "PCA")
    assert str(e) == "The 'x' parameter of PCA must be a number. Got 0.25 instead."
    # the refused value is echoed as its repr, cut: a huge option value stays a one-line error
    assert len(str(param_error("x", "a number", "y" * 10 ** 5))) < 150


def test_check_range():
    assert check_range("k", 3, 1, 5, integer=True) == 3 and isinstance(check_range("k", 3.0, 1, 5, integer=True), int)
    with pytest.raises(ValueError, match=r"^The 'k' parameter must be an integer in \[1, 5\] "
                                         r"\(at most the rank\)\. Got 9 instead\.$"):
        check_range("k", 9, 1, 5, integer=True, hint="at most the rank")
    with pytest.raises(ValueError, match=r"'a' parameter must be a number in \(0, 1\)\. Got 1\.0 instead"):
        check_range("a", 1.0, 0, 1, low_inclusive=False, high_inclusive=False)
    for bad in (2.5, True, "3", float("nan"), float("inf"), None):
        with pytest.raises(ValueError, match="^The 'k' parameter must be"):
            check_range("k", bad, 1, 5, integer=True)
    assert check_range("x", -1e9, high=0) == -1e9
    with pytest.raises(ValueError, match=">= 0"):
        check_range("x", -1, low=0)


def test_param_validate_numbers():
    p = Param("alpha", float, 0.01, "rate", low=0, high=1, low_inclusive=False, high_inclusive=False)
    assert p.validate(0.5) == 0.5 and isinstance(p.validate(np.float32(0.5)), float)
    for bad in (0, 1, -0.1, float("nan"), "0.1", None, True):
        with pytest.raises(ValueError, match=r"^The 'alpha' parameter must be a number in \(0, 1\)\. Got"):
            p.validate(bad)
    q = Param("k", int, 2, "count", low=1, allow_none=True, none_label="half")
    assert q.validate(None) is None and q.validate(3.0) == 3 and isinstance(q.validate(np.int64(4)), int)
    with pytest.raises(ValueError, match=r"'k' parameter must be an integer >= 1 or None \(half\)\. Got 2.5 instead"):
        q.validate(2.5)


def test_param_validate_choices_and_bool():
    c = Param("mode", str, "a", "m", choices=("a", "b"))
    assert c.validate("b") == "b"
    with pytest.raises(ValueError, match="'mode' parameter must be one of 'a', 'b'. Got 'c' instead"):
        c.validate("c")
    n = Param("norm", int, 2, "n", choices=(2, 1))
    with pytest.raises(ValueError, match="norm"):
        n.validate(True)  # True == 1 but is not a norm
    b = Param("flag", bool, False, "f")
    assert b.validate(True) is True and b.validate(np.bool_(False)) is False
    with pytest.raises(ValueError, match="'flag' parameter must be True or False"):
        b.validate(1)


def test_param_parse_text():
    assert Param("k", int, 2, "", low=1).parse(" 3 ") == 3
    assert Param("k", int, 2, "", low=1, allow_none=True).parse("auto") is None
    assert Param("a", float, 0.1, "").parse("1e-3") == 0.001
    assert Param("f", bool, False, "").parse("yes") is True
    assert Param("f", bool, False, "").parse("off") is False
    assert Param("norm", int, 2, "", choices=(2, 1)).parse("1") == 1
    with pytest.raises(ValueError, match="'k' parameter must be"):
        Param("k", int, 2, "", low=1).parse("two")
    with pytest.raises(ValueError, match="'f' parameter must be True or False"):
        Param("f", bool, False, "").parse("maybe")


def test_validate_params_unknown_and_defaults():
    specs = (Param("a", int, 1, "", low=0), Param("b", str, "x", "", choices=("x", "y")))
    assert validate_params(specs, {"a": 3}) == {"a": 3, "b": "x"}
    with pytest.raises(ValueError, match="unknown parameter 'c'.*a, b"):
        validate_params(specs, {"c": 1})


def test_param_special_strings_and_sklearn_constraints():
    from sklearn.utils._param_validation import Interval, StrOptions
    c = Param("contamination", float, "auto", "share", low=0.0, high=0.5, low_inclusive=False,
              special=("auto",))
    assert c.validate("auto") == "auto" and c.validate(0.1) == 0.1 and c.parse(" auto ") == "auto"
    assert c.parse("0.25") == 0.25
    with pytest.raises(ValueError, match=r"'contamination' parameter must be 'auto' or a number in \(0, 0.5\]\. "
                                         r"Got 0.7 instead"):
        c.validate(0.7)
    with pytest.raises(ValueError, match="contamination"):
        c.validate("automatic")
    from robustcore._constraints import constraints
    strs, interval = constraints(c)
    assert isinstance(strs, StrOptions) and strs.options == {"auto"}
    assert isinstance(interval, Interval) and interval.closed == "right"
    q = Param("k", int, 2, "count", low=1, allow_none=True)
    assert constraints(q)[1].is_satisfied_by(None) and constraints(q)[0].closed == "left"
    (b,) = constraints(Param("f", bool, True, ""))
    assert b.is_satisfied_by(np.bool_(True)) and not b.is_satisfied_by(1) and str(b) == "True or False"


def _registered_classes():
    return sorted({m.estimator_class for m in METHODS.values()}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _registered_classes(), ids=lambda c: c.__name__)
def test_declarations_match_init_of_every_registered_estimator(cls):
    """Each default is written in the declaration and in __init__: this keeps them equal, in the
    same order, with every parameter after the first keyword-only."""
    est = cls()
    sig = inspect.signature(cls.__init__)
    params = [p for n, p in sig.parameters.items() if n != "self"]
    assert [p.name for p in params] == [p.name for p in cls.param_specs()]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    for p, spec in zip(params, cls.param_specs()):
        assert p.default == spec.default, spec.name
        assert getattr(est, spec.name) == spec.default, spec.name
        assert spec.help and spec.help.strip() and "\n" not in spec.help
        # every default passes its own validation
        assert spec.validate(spec.default) == spec.default or spec.default is None
    assert set(cls._parameter_constraints) == {p.name for p in cls.param_specs()}


# -- Estimator base -----------------------------------------------------------------------

class Toy(Estimator):
    _params = (Param("k", int, 1, "k", low=1),)

    def __init__(self, k=1):
        self.k = k

    @fit_protocol
    def fit(self, X, y=None, progress=None, *, p):
        X = validate_X(self, X, reset=True)
        progress(0.5, "half")
        self._set_fitted(k_=p["k"], total_=float(np.sum(X)))
        return self

    @fit_protocol(partial=True)
    def partial_fit(self, X, y=None, progress=None, *, p):
        total = getattr(self, "total_", 0.0)
        progress(0.5, "half")
        X = validate_X(self, X, reset=not hasattr(self, "total_"))
        self._set_fitted(k_=p["k"], total_=total + float(np.sum(X)))
        return self


def test_base_get_set_params_and_repr():
    t = Toy()
    assert t.get_params() == {"k": 1}
    assert t.set_params(k=3) is t and t.k == 3
    with pytest.raises(ValueError, match="Invalid parameter 'j' for estimator Toy"):
        t.set_params(j=1)
    assert repr(t) == "Toy(k=3)" and repr(Toy()) == "Toy()"


def test_base_fit_lifecycle():
    from sklearn.utils.validation import check_is_fitted
    t = Toy()
    assert not t.__sklearn_is_fitted__()
    with pytest.raises(NotFittedError, match="not fitted"):
        check_is_fitted(t)
    t.fit(np.ones((3, 2)))
    assert t.__sklearn_is_fitted__() and t.total_ == 6.0 and t.n_features_in_ == 2
    with pytest.raises(Cancelled):
        t.fit(np.ones((3, 2)), progress=lambda f, m: False)
    # validate_data set n_features_in_ before the cancel: the failed fit still leaves nothing
    assert not t.__sklearn_is_fitted__() and not hasattr(t, "k_") and not hasattr(t, "n_features_in_")
    t.k = 0
    with pytest.raises(ValueError, match=r"^The 'k' parameter of Toy must be an integer >= 1\. Got 0 instead\.$"):
        t.fit(np.ones((3, 2)))
    with pytest.raises(AssertionError):
        t._set_fitted(bad=1)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)


def test_fit_protocol_hands_the_body_its_parameters_and_a_reporter():
    """The body gets the validated parameters and a Reporter whether progress comes by keyword
    or by position; callers see the public signature (no ``p``)."""
    assert list(inspect.signature(Toy.fit).parameters) == ["self", "X", "y", "progress"]
    assert list(inspect.signature(Toy().fit).parameters) == ["X", "y", "progress"]
    seen = []
    t = Toy(k=2.0).fit(np.ones((3, 2)), None, lambda f, m: seen.append((f, m)))
    assert t.k_ == 2 and isinstance(t.k_, int) and seen == [(0.5, "half")]
    Toy().fit(np.ones((3, 2)), progress=lambda f, m: seen.append(m))
    assert seen[-1] == "half"
    with pytest.raises(ValueError, match="'progress' parameter must be a callable"):
        t.fit(np.ones((3, 2)), progress=42)
    assert not t.__sklearn_is_fitted__()


def test_partial_fit_keeps_what_it_learned_when_a_call_fails():
    t = Toy().partial_fit(np.ones((3, 2)))
    t.partial_fit(np.ones((1, 2)))
    assert t.total_ == 8.0
    with pytest.raises(Cancelled):
        t.partial_fit(np.ones((1, 2)), progress=lambda f, m: False)
    assert t.total_ == 8.0 and t.n_features_in_ == 2
    t.k = 0     # parameters are validated on every call
    with pytest.raises(ValueError, match="The 'k' parameter of Toy must be an integer >= 1"):
        t.partial_fit(np.ones((1, 2)))
    assert t.total_ == 8.0


@pytest.mark.parametrize("cls", _registered_classes(), ids=lambda c: c.__name__)
def test_every_fit_follows_the_protocol(cls):
    """Every fit of every registered estimator is decorated (no hand-written first lines) and
    shows scikit-learn its public signature."""
    for name in ("fit", "partial_fit", "fit_subspace"):
        fn = getattr(cls, name, None)
        if fn is None:
            continue
        assert hasattr(fn, "__wrapped__"), f"{cls.__name__}.{name} is not decorated with fit_protocol"
        src = inspect.getsource(fn.__wrapped__)
        assert "_start_fit()" not in src and "Reporter(progress)" not in src
        assert "p" not in inspect.signature(fn).parameters


# -- validate_X ----------------------------------------------------------------------------

def test_validate_x_conversions_and_width():
    t = Toy()
    out = validate_X(t, [[1, 2], [3, 4]], reset=True)
    assert out.dtype == np.float64 and out.shape == (2, 2) and t.n_features_in_ == 2
    a = np.ones((3, 2))
    assert validate_X(t, a, reset=False) is a  # no copy when nothing to convert
    s = validate_X(t, sp.coo_matrix(np.eye(2)), reset=False, accept_sparse=True)
    assert sp.isspmatrix_csr(s) or sp.issparse(s) and s.format == "csr"
    with pytest.raises(ValueError, match="X has 3 features, but Toy is expecting 2 features"):
        validate_X(t, np.ones((2, 3)), reset=False)


@pytest.mark.parametrize("X, match", [
    (np.array([1.0, 2.0]), "Expected 2D array"),
    (np.ones((0, 3)), r"0 sample\(s\)"),
    (np.ones((3, 0)), r"0 feature\(s\)"),
    (np.array([[1.0, 2.0], [3.0, np.nan]]), r"1 NaN or infinite value\(s\) \(first: NaN at row 1, column 1\)"),
    (np.array([[np.inf, 2.0]]), "infinite at row 0, column 0"),
    (sp.csr_matrix(np.eye(2)), "[Ss]parse"),
    (np.array([[1 + 2j, 0.0]]), "Complex data not supported"),
])
def test_validate_x_errors(X, match):
    with pytest.raises((ValueError, TypeError), match=match):
        validate_X(Toy(), X, reset=True)


def test_validate_x_sparse_nan():
    m = sp.csr_matrix(np.array([[0.0, np.nan], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="NaN at row 0, column 1"):
        validate_X(Toy(), m, reset=True, accept_sparse=True)
    with pytest.raises(ValueError, match=r"1 sample\(s\) .* minimum of 2"):
        validate_X(Toy(), np.ones((1, 2)), reset=True, min_samples=2)


def test_check_random_state_is_the_one_conversion():
    g = np.random.default_rng(5)
    assert check_random_state(g) is g
    # an int seed gives default_rng(seed)'s stream, as in robustcore 0.1 (sessions replay)
    assert check_random_state(7).random() == np.random.default_rng(7).random()
    a = check_random_state(np.random.RandomState(3)).random()
    assert a == check_random_state(np.random.RandomState(3)).random()
    for bad in (-1, 1.5, "x", True):
        with pytest.raises(ValueError, match="'random_state' parameter must be"):
            check_random_state(bad)


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
    with pytest.raises(ValueError, match="'progress' parameter must be a callable"):
        Reporter(42)


# -- conventions beyond check_estimator for PCA, CoP, ResidualScorer (tests/robustcore/
# test_sklearn_contract.py runs scikit-learn's own checks) ---------------------------------------

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
    assert s.shape == (60,) and np.all(np.isfinite(s)) and np.all(s <= 0)   # minus a squared distance
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
    with pytest.raises(ValueError, match=r"'random_state' parameter must be an integer >= 0.*Got -1"):
        p.validate(-1)
    with pytest.raises(ValueError, match="random_state"):
        p.validate("seed")
