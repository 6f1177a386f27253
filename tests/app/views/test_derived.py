"""What views read from a result (app.views._derived), checked against the estimator itself."""
import numpy as np
import pytest

from robustcore.datasets import Dataset
from robustcore.methods import get_method
from tests.planted import subspace_with_outliers as planted_subspace_with_outliers


@pytest.mark.parametrize("method", ["pca", "coherence-pursuit", "residual"])
def test_views_reconstruct_scaled_runs_in_original_units(method):
    """With scale set, the views' helpers map the data into the result's scaled units and
    reconstructions back out of them."""
    from app.views import _derived
    X, _, _ = planted_subspace_with_outliers(n_in=300, n_out=10, d=6, seed=5)
    X = X * np.geomspace(1, 1e3, 6) + 3.0
    ds = Dataset(X=X, feature_names=[f"f{j}" for j in range(6)])
    res = get_method(method).run(ds, {"n_components": 2, "scale": "standard"})
    est = res.estimator
    rec = _derived.reconstruction(res, ds, [0, 1, 2])
    np.testing.assert_allclose(rec, est.inverse_transform(est.transform(X[:3])), rtol=1e-9)
    np.testing.assert_allclose(_derived.contributions(res, ds, 4).sum(),
                               est._residual_sq(est._scaled(X[4:5]))[0], rtol=1e-9)
