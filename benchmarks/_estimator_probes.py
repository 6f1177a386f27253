"""Hostile inputs for the estimators (issue 24), each run in a child process by
``soak_hostile.py --only estimators``: constant, all-zero, subnormal, huge, too-wide and
too-tall tables, and sparse data a dense method must densify. A probe passes when the fit ends
in a ValueError naming the problem, or in outputs without NaN; its time and the child's peak
resident memory above the data are reported.

Run one probe by hand: ``python benchmarks/_estimator_probes.py NAME`` (prints one JSON line).
"""
from __future__ import annotations

import json
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rng():
    return np.random.default_rng(0)


def _table(n=60, d=6):
    X = _rng().standard_normal((n, d))
    X[:3] += 8
    return X / np.abs(X).max()


def _wide():
    return _rng().standard_normal((10, 1_000_000))


def _labels(n):
    return np.where(np.arange(n) % 2 == 0, 1, -1)


def _sparse_file(tmp: Path):
    p = tmp / "wide.svm"
    p.write_bytes(b"1 16777216:1\n-1 1:1\n1 5:2\n")
    return p


# name -> (make data, fit and return the outputs to check). Estimators are imported lazily.
def _fit(cls_name, **params):
    def run(X):
        import robustcore as rc
        from robustcore.subspace.online_rpca import OnlineRPCA
        cls = OnlineRPCA if cls_name == "OnlineRPCA" else getattr(rc, cls_name)
        est = cls(**params)
        if cls_name in ("SCW",):
            est.fit(X, _labels(X.shape[0]))
            return [est.decision_function(X)]
        est.fit(X)
        if cls_name == "PCP":
            return [est.low_rank_, est.sample_scores_]
        if cls_name == "OnlineRPCA":
            return [est.sample_scores_]
        if cls_name == "ESFS":
            return [est.scores_]
        return [est.score_samples(X)]
    return run


def _method_on_file(method, budget=None):
    def run(tmp):
        import os
        if budget:
            os.environ["ROBUSTCORE_FIT_MEMORY"] = budget
        from robustcore import datasets, methods
        ds = datasets.load(_sparse_file(tmp))
        res = methods.METHODS[method].run(ds, {})
        return [np.asarray(v, dtype=float) for v in res.sample_scores.values()]
    return run


PROBES = {
    "pca-all-zero": (lambda: np.zeros((50, 5)), _fit("PCA", n_components=2)),
    "pca-constant": (lambda: np.full((50, 5), 3.0), _fit("PCA", n_components=2)),
    "residual-constant": (lambda: np.full((50, 5), -2.5), _fit("ResidualScorer", n_components=2)),
    "pcp-subnormal": (lambda: _table() * 1e-310, _fit("PCP", random_state=0)),
    "pcp-float-max": (lambda: _table() * np.finfo(float).max, _fit("PCP", random_state=0)),
    "cop-float-max": (lambda: _table() * np.finfo(float).max, _fit("CoherencePursuit", n_components=2)),
    "orpca-float-max": (lambda: _table() * np.finfo(float).max, _fit("OnlineRPCA", n_components=2)),
    "orpca-1e200": (lambda: _table() * 1e200, _fit("OnlineRPCA", n_components=2)),
    "scw-10x1M": (_wide, _fit("SCW")),
    "cop-10x1M": (_wide, _fit("CoherencePursuit", n_components=2)),
    "pca-10x1M": (_wide, _fit("PCA", n_components=2)),
    "pcp-10x1M": (_wide, _fit("PCP", random_state=0)),
    "esfs-10x1M": (_wide, _fit("ESFS", n_features_to_select=2)),
    "esfs-200000x3": (lambda: _rng().standard_normal((200_000, 3)), _fit("ESFS", n_features_to_select=2)),
    "libsvm-16777216-pca": (None, _method_on_file("pca")),
    "libsvm-16777216-pca-1G": (None, _method_on_file("pca", "1G")),
}


def _rss(field):
    try:
        return int(re.search(field + r":\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024
    except (OSError, AttributeError):
        return 0


def probe(name: str) -> dict:
    import tempfile
    make, run = PROBES[name]
    # Imports first: the growth measured is the fit's, not the modules'.
    import robustcore as rc
    import robustcore.datasets  # noqa: F401
    import robustcore.methods  # noqa: F401
    import robustcore.subspace.online_rpca  # noqa: F401
    for cls in ("PCA", "PCP", "SCW", "ESFS", "CoherencePursuit", "ResidualScorer"):
        getattr(rc, cls)
    with tempfile.TemporaryDirectory() as tmp:
        data = make() if make is not None else Path(tmp)
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        before = _rss("VmRSS")
        t = time.perf_counter()
        out = {"probe": name}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outputs = run(data)
                nan = any(np.isnan(np.asarray(o, dtype=float)).any() for o in outputs)
                out.update(outcome="NaN" if nan else "fitted")
            except ValueError as exc:
                out.update(outcome="refused", message=str(exc)[:300])
            except BaseException as exc:  # noqa: BLE001 - what the soak reports
                out.update(outcome="crash", message=f"{type(exc).__name__}: {exc}"[:300])
        out["seconds"] = round(time.perf_counter() - t, 2)
        out["peak_growth"] = max(0, _rss("VmHWM") - before)
        out["runtime_warnings"] = sum(issubclass(w.category, RuntimeWarning) for w in caught)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(probe(sys.argv[1])))
