"""A figure the command line cannot draw costs that figure only: every result it computed is
written, the figure is skipped with a message naming it and saying why, and the exit status is
not 0. (``run --method pcp --method pca --figure scatter`` fitted both, refused the figure for
PCP and wrote nothing, the PCA results with it.)"""
from __future__ import annotations

import json

import numpy as np
import pytest

from app import session as S
from app.cli import main


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_a_figure_that_cannot_be_drawn_is_skipped_and_every_result_written(tmp_path, capsys, qapp):
    # A full-rank subspace has no SPE limit, so no contour map; that is known only after the fit.
    out = tmp_path / "o"
    code, _, err = run_cli(capsys, "run", "--demo", "gaussian-2d", "--method", "pca", "--param", "n_components=2",
                           "--figure", "contour", "--figure", "scatter", "--out", out, "-q")
    assert code != 0
    assert "--figure contour was not drawn for pca: the subspace has full rank" in err
    assert "the other results were written" in err
    # the results exist and are the fit's: the scores file matches the arrays file
    assert {"pca-samples.csv", "pca-arrays.npz", "pca-summary.json", "run.json"} <= {p.name for p in out.iterdir()}
    with np.load(out / "pca-arrays.npz") as z:
        spe = z["score_spe"]
    lines = [line for line in (out / "pca-samples.csv").read_text().splitlines() if not line.startswith("#")]
    col = lines[0].split(",").index("spe")
    table = {"spe": np.array([float(line.split(",")[col]) for line in lines[1:]])}
    np.testing.assert_array_equal(table["spe"], spe)
    assert json.loads((out / "pca-summary.json").read_text())["method"] == "pca"
    assert S.load_session(out / "run.json").runs[0].method == "pca"
    # the figure that could be drawn was; the one that could not left no file behind
    assert (out / "pca-scatter.png").stat().st_size > 1000 and (out / "pca-scatter.svg").exists()
    assert not (out / "pca-contour.png").exists() and not (out / "pca-contour.svg").exists()


@pytest.mark.slow
def test_replay_writes_its_results_and_says_which_figure_it_skipped(tmp_path, capsys, qapp):
    out = tmp_path / "o"
    code, _, err = run_cli(capsys, "run", "--demo", "gaussian-2d", "--method", "pca", "--param", "n_components=2",
                           "--out", out, "-q")
    assert code == 0, err
    again = tmp_path / "again"
    code, _, err = run_cli(capsys, "replay", out / "run.json", "--figure", "contour", "--out", again, "-q")
    assert code != 0
    assert "--figure contour was not drawn for pca" in err
    assert (again / "pca-arrays.npz").exists() and (again / "run.json").exists()
