"""Which data each method takes, as the registry declares it (Method.lazy_kinds), checked by
running every method on data in memory and opened out of core, tables and frames; a refusal is
the registry's one message (robustcore.methods.refusal), whoever asks."""
import re
import typing

import numpy as np
import pytest

from robustcore.datasets import KINDS, Dataset, Provenance
from robustcore.methods import LAZY_KINDS, METHODS, lazy_methods, refusal

pytest.importorskip("dask.array")

ROWS, SHAPE = 60, (2, 3)
PARAMS = {"pca": {"n_components": 2}, "coherence-pursuit": {"n_components": 2}, "robpca": {"n_components": 2},
          "residual": {"n_components": 2}, "online-rpca": {"n_components": 2, "batch_size": 20}}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """name -> data set: a table and frames, each in memory and opened out of core."""
    from robustcore.bigdata import LazyDataset, open_lazy
    from robustcore.bigdata._frames import ArrayFrames
    rng = np.random.default_rng(0)
    X = rng.normal(size=(ROWS, 6)) + rng.normal(size=(ROWS, 1)) * np.arange(1, 7)
    labels = np.repeat([0, 1], ROWS // 2)
    path = tmp_path_factory.mktemp("requirements") / "rows.npy"
    np.save(path, X)
    return {"table in memory": Dataset(X=X, labels=labels, name="rows"),
            "frames in memory": Dataset(X=X, labels=labels, image_shape=SHAPE, name="clip"),
            "table out of core": open_lazy(path),
            "frames out of core": LazyDataset(ArrayFrames(X, frame_shape=SHAPE), "clip",
                                              Provenance(loader="video", sha256="0" * 64))}


def test_every_method_declares_kinds_of_data():
    for m in METHODS.values():
        assert set(m.lazy_kinds) <= set(KINDS) and len(set(m.lazy_kinds)) == len(m.lazy_kinds)
        assert m.out_of_core == bool(m.lazy_kinds)
    assert set(LAZY_KINDS) <= set(METHODS)
    assert set(lazy_methods()) == {n for n, m in METHODS.items() if m.lazy_kinds}
    assert lazy_methods("frames") == ("online-rpca",)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("where", ["table in memory", "frames in memory", "table out of core", "frames out of core"])
def test_a_method_runs_on_what_it_declares_and_refuses_the_rest_in_one_message(data, name, where):
    m, ds = METHODS[name], data[where]
    takes = not ds.is_lazy or ds.kind in m.lazy_kinds
    why = refusal(m, ds)
    assert (why is None) == takes
    if takes:
        res = m.run(ds, PARAMS.get(name, {}))
        assert res.method == name and res.data_fingerprint == ds.fingerprint()
        assert res.storage.out_of_core == ds.is_lazy
        if res.outliers is not None:   # every adapter words its rule from the declaration
            assert res.outliers.rule == m.outlier_rule.describe(res.params)
        # and fills the fields that have a fixed set of values with one of them
        from robustcore.result import Adjustment, RankRule, Scaling
        for part in (res.subspace, res.decomposition):
            if part is not None:
                assert part.scaling in typing.get_args(Scaling)
        if res.subspace is not None:
            assert res.subspace.rank_rule in typing.get_args(RankRule)
        if res.limits is not None:
            assert res.limits.adjustment in typing.get_args(Adjustment)
        return
    # the run refuses with the registry's message before it fits anything ...
    with pytest.raises(ValueError, match=f"^{re.escape(why)}$"):
        m.run(ds, PARAMS.get(name, {}))
    # ... which says what the method needs, what the data are, and which methods would do
    able = lazy_methods(ds.kind)
    assert why.startswith(f"{m.title} ") and f"'{ds.name}'" in why and why.endswith(", ".join(able))
    assert ("needs the data in memory" in why) == (not m.lazy_kinds)
    # and the command line, asking before the file is open, gets the same words
    assert refusal(m, kind=ds.kind, subject=f"'{ds.name}'") == why


def test_the_views_a_method_feeds_are_declared_names():
    from robustcore.methods import View
    for m in METHODS.values():
        assert set(m.views) <= set(typing.get_args(View)), m.name
