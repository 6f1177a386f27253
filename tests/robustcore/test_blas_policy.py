"""robustcore's one BLAS thread rule: one thread inside fits unless the user set a thread count,
the user's count never overridden (PCP included), PCP's own threads giving way to a threaded
BLAS, and one module (with one cached controller) that touches BLAS threads at all."""
import ast
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from robustcore import PCA, PCP, SCW
from robustcore._blas_policy import (USER_THREAD_VARIABLES, blas_controller, default_to_one_thread,
                                     user_chose_blas_threads)

threadpoolctl = pytest.importorskip("threadpoolctl")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _blas_threads():
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def _threads_seen_by(fit):
    seen = []
    fit(lambda f, m: seen.append(_blas_threads()))
    return set().union(*seen)


@pytest.fixture
def no_user_choice(monkeypatch):
    for var in USER_THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows and no size floor, so PCP runs its own threads on a small matrix."""
    import robustcore.subspace._pcp_sweep as sweep
    import robustcore.subspace.pcp as pcp
    monkeypatch.setattr(sweep, "_BLOCK", 1 << 11)
    monkeypatch.setattr(pcp, "_THREADS_MIN_SIZE", 0)
    monkeypatch.setattr(pcp, "resolve_n_jobs", lambda n: 2 if n is None else n)


def _planted(seed=23):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((200, 3)) @ rng.standard_normal((3, 50))   # 5 blocks of rows: 2 threads
    S = np.where(rng.random(L.shape) < 0.05, 10 * rng.standard_normal(L.shape), 0.0)
    return L + S


@pytest.mark.slow
@pytest.mark.parametrize("fit", [
    lambda cb: PCA(2).fit(np.random.default_rng(0).standard_normal((50, 5)), progress=cb),
    lambda cb: SCW().partial_fit(np.eye(4), [0, 1, 0, 1], classes=[0, 1], progress=cb),
    lambda cb: PCP(random_state=0, n_jobs=1).fit(_planted(), progress=cb),
], ids=["fit", "partial_fit", "pcp"])
def test_fits_hold_blas_to_one_thread_unless_the_user_chose(monkeypatch, no_user_choice, fit):
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        assert _threads_seen_by(fit) == {1}
        assert _blas_threads() == {2}              # restored after the fit
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        assert _threads_seen_by(fit) == {2}        # the user's choice is left alone


@pytest.mark.slow
def test_pcp_running_its_own_threads_leaves_the_users_blas_count_alone(monkeypatch, no_user_choice,
                                                                      small_blocks):
    """The user set OPENBLAS_NUM_THREADS and asked for two threads of PCP's own: both are used as
    given (PCP once held BLAS to one thread here, overriding the variable)."""
    import threading
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    during, sweepers = [], []

    def record(f, msg):
        if msg.startswith("iter "):
            during.append(_blas_threads())
            sweepers.append(sum(t.name.startswith("pcp-sweep") for t in threading.enumerate()))
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):   # what the variable gives
        PCP(random_state=0, n_jobs=2).fit(_planted(), progress=record)
    assert len(during) > 3 and all(d == {2} for d in during)
    assert max(sweepers) == 2


def test_pcp_without_a_user_choice_runs_its_threads_beside_one_blas_thread(no_user_choice, small_blocks):
    import threading
    during, sweepers = [], []

    def record(f, msg):
        if msg.startswith("iter "):
            during.append(_blas_threads())
            sweepers.append(sum(t.name.startswith("pcp-sweep") for t in threading.enumerate()))
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        PCP(random_state=0).fit(_planted(), progress=record)
        assert _blas_threads() == {2}
    assert len(during) > 3 and all(d == {1} for d in during)
    assert max(sweepers) == 2


def test_pcp_gives_the_cores_to_a_blas_the_user_threaded(monkeypatch, no_user_choice, small_blocks):
    """PCP's exception: with n_jobs=None and more than one BLAS thread chosen by the user, PCP runs
    one thread of its own; the fit is that of n_jobs=1."""
    import robustcore.subspace._pcp_sweep as sweep
    jobs = []
    original = sweep._Sweeper.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        jobs.append(self.rows.n_jobs)
    monkeypatch.setattr(sweep._Sweeper, "__init__", spy)
    X = _planted()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
        threaded_blas = PCP(random_state=0).fit(X)
        monkeypatch.delenv("OMP_NUM_THREADS")
        PCP(random_state=0).fit(X)
    one = PCP(random_state=0, n_jobs=1).fit(X)
    assert jobs == [1, 2, 1]
    np.testing.assert_allclose(threaded_blas.low_rank_, one.low_rank_, atol=1e-8)


def test_the_process_default_sets_one_thread_only_when_the_user_chose_nothing():
    env = {}
    assert default_to_one_thread(env)
    # and says the count is ours, so robustcore's own pass threads keep every core (_lanes)
    assert env == {**{v: "1" for v in USER_THREAD_VARIABLES}, "ROBUSTCORE_THREADS_DEFAULTED": "1"}
    env = {"MKL_NUM_THREADS": "4"}
    assert not default_to_one_thread(env) and env == {"MKL_NUM_THREADS": "4"}
    assert user_chose_blas_threads({"OMP_NUM_THREADS": " 3 "})
    assert not user_chose_blas_threads({"OMP_NUM_THREADS": " "})


def test_the_process_default_can_be_set_before_numpy_loads():
    """app/__init__.py and tests/conftest.py import the policy before numpy: importing it must not
    load numpy (BLAS reads the variables once, when it is loaded)."""
    code = ("import sys; import robustcore._blas_policy as b; assert 'numpy' not in sys.modules; "
            "b.default_to_one_thread(); import numpy, os; print(os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in USER_THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


def test_the_process_default_also_limits_a_blas_loaded_before_it():
    """A script that imports numpy before the window (or a test plugin that does) still gets one
    BLAS thread: the libraries already loaded are limited when the default is set."""
    code = ("import numpy, threadpoolctl; import robustcore._blas_policy as b; b.default_to_one_thread(); "
            "print(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}))")
    env = {k: v for k, v in os.environ.items() if k not in USER_THREAD_VARIABLES}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1]"


def test_one_cached_controller():
    assert blas_controller() is blas_controller() is not None


def test_the_controller_finds_what_threadpoolctl_finds():
    """The cached controller lists the libraries threadpoolctl's own listing finds."""
    def libs(ctl):
        return sorted((lib.filepath, lib.user_api, lib.internal_api, lib.prefix) for lib in ctl.lib_controllers)
    assert libs(blas_controller()) == libs(threadpoolctl.ThreadpoolController())


def test_the_controller_resolves_the_paths_of_known_libraries_only():
    """A fresh process's first fit builds the controller: resolving the path of every loaded file
    (~210 once scikit-learn is imported) cost 8 ms of a fresh process's first fit; only the files whose name
    threadpoolctl recognises need it."""
    code = ("import numpy, scipy.linalg, sklearn.decomposition, threadpoolctl, os\n"
            "calls = []\n"
            "real = threadpoolctl._realpath\n"
            "threadpoolctl._realpath = lambda p: calls.append(p) or real(p)\n"
            "import robustcore._blas_policy as b\n"
            "ctl = b.blas_controller()\n"
            "maps = open('/proc/self/maps').read().count('.so')\n"
            "print(len(calls), len(ctl.lib_controllers), maps)")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("the listing this checks is Linux's")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    calls, found, mapped = (int(v) for v in out.stdout.split())
    assert found >= 1 and mapped > 50
    assert calls <= found + 2


@pytest.mark.slow
def test_only_the_policy_module_touches_blas_threads():
    """One module, one rule: no other module of robustcore or app imports threadpoolctl."""
    offenders = []
    for pkg in ("robustcore", "app"):
        for path in (ROOT / pkg).rglob("*.py"):
            if path.name == "_blas_policy.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                if any(n.split(".")[0] == "threadpoolctl" for n in names):
                    offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
