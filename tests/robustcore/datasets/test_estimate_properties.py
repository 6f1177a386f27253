"""Property-based: a loader's declared cost against what it actually builds (issue 24).

For a generated table written in every in-memory format, ``estimate_memory`` (what a load is
charged before it allocates) is never less than the float64 array the load returns: a charge
below what is built would let a file through that the budget should stop.
"""
import pytest
import io

import numpy as np
import scipy.io as sio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustcore.datasets import estimate_memory, load

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _write(path, fmt, X, end):
    if fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        path.write_bytes(end.join(sep.join(repr(float(v)) for v in row) for row in X).encode() + end.encode())
    elif fmt == "libsvm":
        path.write_bytes(end.join(" ".join(["1"] + [f"{j + 1}:{float(v)!r}" for j, v in enumerate(row)])
                                  for row in X).encode() + end.encode())
    elif fmt == "npy":
        np.save(path, X)
    elif fmt == "npz":
        buf = io.BytesIO()
        np.savez(buf, X=X.astype(np.float32))
        path.write_bytes(buf.getvalue())
    elif fmt == "mat":
        sio.savemat(path, {"X": X})
    return path


@pytest.mark.slow
@PROPS
@given(fmt=st.sampled_from(["csv", "tsv", "libsvm", "npy", "npz", "mat"]), n=st.integers(1, 60),
       d=st.integers(1, 12), end=st.sampled_from(["\n", "\r\n", "\r"]), seed=st.integers(0, 1000))
def test_estimate_covers_what_the_load_builds(tmp_path_factory, fmt, n, d, end, seed):
    X = np.round(np.random.default_rng(seed).normal(size=(n, d)), 3) + 0.5   # no zero (LIBSVM writes all)
    name = {"libsvm": "t.svm", "mat": "t.mat"}.get(fmt, f"t.{fmt}")
    p = _write(tmp_path_factory.mktemp("est") / name, fmt, X, end)
    opts = {"dense": True, "n_features": d} if fmt == "libsvm" else {}
    if fmt in ("csv", "tsv"):
        opts["header"] = False
    ds = load(p, **opts)
    built = np.asarray(ds.dense()).nbytes
    assert ds.X.shape == (n, d)
    assert estimate_memory(p, **opts) >= built, (fmt, estimate_memory(p, **opts), built)
