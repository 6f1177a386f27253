"""The scripted tour (docs/screenshots/tour.py) over a small subset: the wide table in mixed
units and the LIBSVM file it writes, at 1280 x 800, views shown and checked by the project's
legibility checker. The whole tour (three kinds of data, three sizes) is run by hand."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from app.main_window import MainWindow
from app.settings import Settings

from .views.test_legible import legibility_problems

ROOT = Path(__file__).resolve().parents[2]


def _tour():
    spec = importlib.util.spec_from_file_location("tour", ROOT / "docs" / "screenshots" / "tour.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_tours_data_are_what_it_says(tmp_path):
    tour = _tour()
    table = tour.wide_table()
    assert table.X.shape == (2000, 40) and int(table.outliers.sum()) == 40
    spread = table.X.std(axis=0)
    assert spread.max() / spread.min() > 1e3          # mixed units
    from robustcore.datasets import load
    svm = load(tour.libsvm_file(str(tmp_path)))
    assert svm.is_sparse and svm.X.shape == (400, 60) and svm.X.nnz == 400 * 8
    assert len(np.unique(svm.labels)) == 2


@pytest.mark.slow
@pytest.mark.parametrize("kind,views", [("table", ("scatter", "decomposition", "evaluation")),
                                        ("libsvm", ("learning-curve", "detail"))])
def test_tour_subset_is_legible_at_1280x800(qtbot, tmp_path, kind, views):
    tour = _tour()
    ds = tour.wide_table() if kind == "table" else tour.datasets(str(tmp_path))["libsvm"]
    results = tour.fits(kind, ds)
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")), isolation="thread")
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    available = tour.show_all(w, ds, results)
    found = []
    for view in views:
        assert view in available, f"{view} has nothing to show for the {kind}"
        v = w.views.show_view(view)
        qtbot.wait(60)
        w.grab()
        found += [f"{view}: {p}" for p in legibility_problems(v)]
    w.close()
    assert not found, "\n".join(found)
