"""The command line refuses a value the data's shape refuses as soon as it knows the shape (the
data opened, out of core before a row is read), before any method is fitted, with the
declaration's message (the fit's own: tests/robustcore/test_params_shape.py)."""
import numpy as np

from app.cli import main
from robustcore.methods import METHODS
from robustcore.methods._method import Method


def _fits(monkeypatch):
    started = []
    real = Method.run

    def run(self, dataset, params=None, progress=None):
        started.append(self.name)
        return real(self, dataset, params, progress)
    monkeypatch.setattr(Method, "run", run)
    return started


def test_a_rank_the_shape_refuses_stops_the_command_before_any_fit(tmp_path, capsys, monkeypatch):
    started = _fits(monkeypatch)
    code = main(["run", "--demo", "iris", "--method", "pca", "--method", "robpca",
                 "--param", "robpca:n_components=150", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    m = METHODS["robpca"]
    why = m.shape_errors(m.validate({"n_components": 150}), 150, 4)["n_components"]
    assert code == 2 and f"robpca: {why}" in err
    assert started == []                       # not even PCA, listed first, was fitted
    assert not (tmp_path / "o").exists()


def test_out_of_core_the_shape_is_checked_before_the_rows_are_read(tmp_path, capsys, monkeypatch):
    np.save(tmp_path / "t.npy", np.random.default_rng(0).standard_normal((500, 6)))
    started = _fits(monkeypatch)
    code = main(["run", "--data", str(tmp_path / "t.npy"), "--lazy", "--method", "pca",
                 "--param", "n_components=7", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "must be an integer in [1, 6] (at most min(n_samples, n_features) = 6" in err
    assert started == []
