"""Bounds the data's shape sets on a parameter are declared once (``Param.shape_rule``): the
message a form or the command line gives from the shape alone is the one the estimator's fit
gives on data of that shape."""
import numpy as np
import pytest

from robustcore._params import Param, check_range, shape_errors
from robustcore.methods import METHODS

# (method, values, shape, the parameter the shape refuses)
CASES = [
    ("pca", {"n_components": 6}, (20, 5), "n_components"),
    ("residual", {"n_components": 5}, (20, 5), "n_components"),
    ("coherence-pursuit", {"n_components": 5}, (20, 5), "n_components"),
    ("coherence-pursuit", {"n_components": 2, "n_inliers": 21}, (20, 5), "n_inliers"),
    ("coherence-pursuit", {"n_components": 2, "n_inliers": 2, "center": "affine"}, (20, 5), "n_inliers"),
    ("coherence-pursuit", {"n_components": 3, "selection": "fraction", "outlier_fraction": 0.9}, (20, 5),
     "outlier_fraction"),
    ("coherence-pursuit", {"n_components": 2, "selection": "fraction", "outlier_fraction": 0.9,
                           "center": "affine"}, (20, 5), "outlier_fraction"),
    ("robpca", {"n_components": 20}, (20, 30), "n_components"),
    ("robpca", {"n_components": 6}, (20, 5), "n_components"),
    ("esfs", {"n_eigenpairs": 20}, (20, 5), "n_eigenpairs"),
    ("esfs", {"n_features_to_select": 6}, (20, 5), "n_features_to_select"),
    ("esfs", {"n_neighbors": 20, "graph": "knn"}, (20, 5), "n_neighbors"),
    ("online-rpca", {"n_components": 5}, (20, 5), "n_components"),
]


def _fit_refusal(method, values, shape):
    m = METHODS[method]
    X = np.random.default_rng(0).standard_normal(shape)
    est = m.estimator_class(**{k: v for k, v in m.validate(values).items()
                               if k in {p.name for p in m.estimator_class.param_specs()}})
    with pytest.raises(ValueError) as info:
        est.fit(X)
    return str(info.value)


@pytest.mark.parametrize("method, values, shape, name", CASES,
                         ids=[f"{c[0]}-{c[3]}-{c[2][0]}x{c[2][1]}" for c in CASES])
def test_the_declared_shape_rule_and_the_fit_refuse_with_the_same_message(method, values, shape, name):
    m = METHODS[method]
    errors = m.shape_errors(m.validate(values), *shape)
    assert list(errors) == [name]
    assert errors[name] == _fit_refusal(method, values, shape)


@pytest.mark.parametrize("method, values, shape", [
    ("pca", {"n_components": 5}, (20, 5)),
    ("residual", {"n_components": 4}, (20, 5)),
    ("coherence-pursuit", {"n_components": 4, "n_inliers": 20}, (20, 5)),
    ("coherence-pursuit", {"n_components": 3, "selection": "fraction", "outlier_fraction": 0.89}, (20, 5)),
    # n_inliers is not read with selection="fraction"
    ("coherence-pursuit", {"n_inliers": 50, "selection": "fraction"}, (20, 5)),
    ("robpca", {"n_components": 19}, (20, 30)),
    ("esfs", {"n_eigenpairs": 19, "n_features_to_select": 5, "n_neighbors": 19, "graph": "knn"}, (20, 5)),
    # a dense graph has no neighbours: n_neighbors is not bounded by the rows then
    ("esfs", {"n_neighbors": 50, "graph": "dense"}, (20, 5)),
    ("esfs", {"n_neighbors": 50}, (20, 5)),              # "auto" is dense on 20 rows
    ("online-rpca", {"n_components": 4}, (20, 5)),
    # automatic values are resolved by the fit, not bounded here
    ("pca", {"n_components": None}, (20, 5)),
    ("robpca", {"max_samples": "auto", "n_components": None}, (3, 2)),
])
def test_values_the_shape_allows_pass(method, values, shape):
    m = METHODS[method]
    assert m.shape_errors(m.validate(values), *shape) == {}


def test_the_auto_graph_bounds_n_neighbors_where_it_is_knn():
    from robustcore.features._esfs_params import AUTO_DENSE_MAX_SAMPLES
    m = METHODS["esfs"]
    n = AUTO_DENSE_MAX_SAMPLES + 1
    assert m.shape_errors(m.validate({"n_neighbors": n}), n, 3) == {
        "n_neighbors": f"The 'n_neighbors' parameter must be an integer in [1, {n - 1}] (fewer than "
                       f"n_samples = {n}). Got {n} instead."}


def test_the_robpca_rule_says_it_is_the_shape_s_bound_and_the_fit_still_checks_the_rank():
    m = METHODS["robpca"]
    assert m.shape_errors(m.validate({"n_components": 300}), 39, 226) == {
        "n_components": "The 'n_components' parameter must be an integer in [1, 38] (at most "
                        "min(n_samples - 1, n_features) = 38, the largest rank of centred data of this "
                        "shape; here n_samples = 39, n_features = 226). Got 300 instead."}


def test_check_shape_uses_check_range_and_passes_names_and_none():
    p = Param("k", int, None, "k", low=1, allow_none=True, special=("auto",),
              shape_rule=lambda n, d, values: (1, min(n, d), f"here {n} x {d}"))
    assert p.check_shape(3, 10, 4) == 3
    assert p.check_shape(None, 10, 4) is None and p.check_shape("auto", 10, 4) == "auto"
    with pytest.raises(ValueError) as info:
        p.check_shape(5, 10, 4)
    with pytest.raises(ValueError) as same:
        check_range("k", 5, 1, 4, integer=True, hint="here 10 x 4")
    assert str(info.value) == str(same.value)
    assert p.shape_allowed(10, 4) == "an integer in [1, 4] (here 10 x 4)"
    assert shape_errors([p], {"k": 5}, 10, 4) == {"k": str(same.value)}
    assert shape_errors([p], {}, 10, 4) == {}
