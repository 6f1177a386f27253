"""robustcore's BLAS thread rule inside fits: one thread, unless the user set a thread count."""
import numpy as np
import pytest

from robustcore import PCA, SCW
from robustcore._blas_policy import USER_THREAD_VARIABLES

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads():
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def _threads_seen_by(fit):
    seen = []
    fit(lambda f, m: seen.append(_blas_threads()))
    return set().union(*seen)


@pytest.mark.parametrize("fit", [
    lambda cb: PCA(2).fit(np.random.default_rng(0).standard_normal((50, 5)), progress=cb),
    lambda cb: SCW().partial_fit(np.eye(4), [0, 1, 0, 1], classes=[0, 1], progress=cb),
], ids=["fit", "partial_fit"])
def test_fits_hold_blas_to_one_thread_unless_the_user_chose(monkeypatch, fit):
    for var in USER_THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        assert _threads_seen_by(fit) == {1}
        assert _blas_threads() == {2}              # restored after the fit
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        assert _threads_seen_by(fit) == {2}        # the user's choice is left alone
