"""Real fits on the bundled demos, computed once per test session and shared by the view tests.

Where a full demo would make the suite slow (robust PCA on video), the data set is the first
frames or rows of the demo: still real data, fitted by the real estimators.
"""
from __future__ import annotations

import os
from functools import cache

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from robustcore.datasets import Dataset, Provenance, demo  # noqa: E402
from robustcore.methods import get_method  # noqa: E402


def head(ds: Dataset, n: int) -> Dataset:
    """The first n samples of a demo, with everything the views use."""
    return Dataset(X=ds.X[:n], name=f"{ds.name}[:{n}]", labels=None if ds.labels is None else ds.labels[:n],
                   class_names=ds.class_names, outliers=None if ds.outliers is None else ds.outliers[:n],
                   feature_names=ds.feature_names, sample_ids=ds.sample_ids[:n], image_shape=ds.image_shape,
                   frame_order=None if ds.frame_order is None else ds.frame_order[:n],
                   description=ds.description,
                   provenance=Provenance(loader="subset", options={"demo": ds.name, "rows": n}))


@cache
def data(name: str) -> Dataset:
    if name == "usps-small":  # 1s and 8s interleaved so both classes are present
        full = demo("usps-1-vs-8")
        keep = np.r_[np.flatnonzero(~full.outliers)[:100], np.flatnonzero(full.outliers)[:40]]
        keep.sort()
        return Dataset(X=full.X[keep], name="usps-1-vs-8 (140)", labels=full.labels[keep],
                       class_names=full.class_names, outliers=full.outliers[keep],
                       feature_names=full.feature_names, sample_ids=[full.sample_ids[i] for i in keep],
                       image_shape=full.image_shape,
                       provenance=Provenance(loader="subset",
                                             options={"demo": full.name, "rows": "100 ones, 40 eights"}))
    if name == "escalator-24":
        return head(demo("escalator"), 24)
    return demo(name)


@cache
def fit(dataset: str, method: str, **params):
    return get_method(method).run(data(dataset), dict(params))


def make_state(dataset: str, *fits):
    """An AppState holding ``dataset`` and the given (method, params) fits."""
    from app.state import AppState

    st = AppState()
    st.set_dataset(data(dataset))
    for spec in fits:
        method, params = (spec, {}) if isinstance(spec, str) else spec
        res = fit(dataset, method, **params)
        assert st.add_result(res)
        st.set_current_method(method)
    return st


@pytest.fixture
def views_for(qtbot):
    """Build a shown ResultViews for a state; closed by qtbot at the end of the test."""
    from app._qt import configure_pyqtgraph
    from app.views import ResultViews

    configure_pyqtgraph()
    made = []   # kept for the test's length: a view read after its helper returned is still there

    def build(state, size=(1100, 720)):
        w = ResultViews(state)
        qtbot.addWidget(w)
        made.append(w)
        w.resize(*size)
        w.show()
        qtbot.waitExposed(w)
        return w

    yield build
    made.clear()
