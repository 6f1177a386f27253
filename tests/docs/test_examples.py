"""Every gallery example runs, draws its figures, and finds the answer it was built to find.

The examples in docs/examples are the scripts the Sphinx gallery shows with their output; here
they run as plain scripts (no Sphinx needed), in a temporary folder, with matplotlib's
non-interactive backend. Each example asserts its own result; the checks below read the same
numbers from the script's namespace, so an example cannot lose its check unnoticed.
"""
from __future__ import annotations

import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg", force=True)
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

# What each example must have found, against the ground truth it planted or was given.
CHECKS = {
    # planted rank-3 L0 + 5 % gross sparse S0: exact recovery (Candès et al. 2011, Thm 1.1)
    "plot_pcp_planted": lambda g: g["pcp"].rank_ == 3 and g["rel_err_L"] < 1e-4 and g["rel_err_S"] < 1e-4,
    # planted 3-D subspace, 300 outliers to 200 inliers: CoP exact, PCA tilted
    "plot_coherence_pursuit_planted": lambda g: (g["angle_cop"] < 1e-6 and g["angle_pca"] > 10
                                                 and g["chosen_outliers"] == 0),
    # a probe far along the axis: inside the SPE limit, outside the T² limit; the other way round
    "plot_spe_t2_blind_spot": lambda g: (g["spe"][0] < g["scorer"].spe_limit_ < g["spe"][1]
                                         and g["t2"][1] < g["scorer"].t2_limit_ < g["t2"][0]),
    # clusters differ in x and y; z is noise
    "plot_esfs_clusters": lambda g: g["names"][g["esfs"].ranking_[-1]] == "z",
    # linear labels, 10 % flipped in training; accuracy on the clean test labels
    "plot_scw_online": lambda g: g["acc_scw"] > 0.9 and g["acc_scw"] >= g["acc_perc"],
    # cardio's 176 known outliers ranked above chance by -score_samples; contamination honoured
    "plot_outlier_api": lambda g: min(g["auc"].values()) > 0.7 and abs(g["share"] - 0.1) < 0.01,
    # the planted moving square
    "plot_video_background": lambda g: g["f1_pcp"] > 0.95 and g["f1_or"] > 0.8,
    # out of core == in memory
    "plot_out_of_core_pca": lambda g: g["var_err"] < 1e-8 and g["proj_err"] < 1e-8,
}

SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def test_every_example_has_a_check():
    assert {p.stem for p in SCRIPTS} == set(CHECKS)


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_runs_and_finds_its_answer(script, tmp_path, monkeypatch):
    if script.stem == "plot_out_of_core_pca":
        pytest.importorskip("dask")
    monkeypatch.chdir(tmp_path)
    plt.close("all")
    with warnings.catch_warnings():
        # plt.show() on the Agg backend says it cannot show; that is the point here
        warnings.filterwarnings("ignore", message=".*non-interactive.*", category=UserWarning)
        g = runpy.run_path(str(script), run_name="__main__")
    try:
        assert CHECKS[script.stem](g), f"{script.name} did not find its answer"
        figs = [plt.figure(n) for n in plt.get_fignums()]
        assert figs, f"{script.name} drew no figure"
        for k, fig in enumerate(figs):
            out = tmp_path / f"{script.stem}_{k}.png"
            fig.savefig(out)
            assert out.stat().st_size > 5_000
            pixels = mpimg.imread(out)[..., :3]
            # something was drawn: more than a blank canvas, and every axes holds artists
            assert np.std(pixels) > 0.05
            for ax in fig.axes:
                assert ax.has_data() or ax.images or ax.collections, f"empty axes in {script.name}"
    finally:
        plt.close("all")
