"""One command line for data in memory and data read out of core: the run goes out of core by
itself when the data would not fit (and says so in one line), every view of the window is a
--figure, results larger than the budget go to disk and come back the same, and a replay that
could not compare what the session saved does not pass its --check."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.cli import VIEWS
from tests.app.cli.test_cli_lazy import DIGEST_FORMAT, DIGEST_HASH, run_cli

pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 3)) @ rng.standard_normal((3, 6)) + 0.2 * rng.standard_normal((3000, 6))
    X[:100] = 5 * rng.standard_normal((100, 6))
    X *= np.geomspace(1, 1e4, 6)      # mixed units: scale="auto" standardises, in memory and out of core
    path = tmp_path_factory.mktemp("one") / "t.npy"
    np.save(path, X)
    return path


@pytest.mark.slow
def test_data_larger_than_the_budget_go_out_of_core_by_themselves(tmp_path, capsys, table):
    """3000 x 6 doubles = 144 KB: under a 0.1 MB budget the run reads it out of core without
    --lazy, says so in one line, and gives the in-memory numbers."""
    code, _, err = run_cli(capsys, "run", "--data", table, "--method", "coherence-pursuit", "--method", "residual",
                           "--memory-budget", "0.0001", "--out", tmp_path / "lazy")
    assert code == 0, err
    notes = [ln for ln in err.splitlines() if ln.startswith("out of core:")]
    assert len(notes) == 1 and "more than the memory budget" in notes[0] and "--memory-budget" in notes[0]
    code, _, err = run_cli(capsys, "run", "--data", table, "--method", "coherence-pursuit", "--method", "residual",
                           "--out", tmp_path / "mem")
    assert code == 0, err and "out of core" not in err
    for m in ("coherence-pursuit", "residual"):
        store = zarr.open_group(str(tmp_path / "lazy" / f"{m}-results.zarr"), mode="r")
        with np.load(tmp_path / "mem" / f"{m}-arrays.npz") as mem:
            for k in ("score_outlier_score", "score_spe", "score_t2"):
                np.testing.assert_allclose(store[k][:], mem[k], rtol=1e-8)
            for k in [k for k in mem.files if k.startswith("flag_")]:
                np.testing.assert_array_equal(store[k][:], mem[k], err_msg=k)
        facts = json.loads((tmp_path / "lazy" / f"{m}-summary.json").read_text())["facts"]
        mem_facts = json.loads((tmp_path / "mem" / f"{m}-summary.json").read_text())["facts"]
        assert facts["subspace"]["scaling"] == mem_facts["subspace"]["scaling"] == "standard"
        assert facts["storage"]["out_of_core"] is True and mem_facts["storage"]["out_of_core"] is False
        assert facts["limits"]["spe"] == pytest.approx(mem_facts["limits"]["spe"], rel=1e-8)
    # the flags of SPE/T² scoring combined on disk (once a TypeError between two Zarr arrays)
    store = zarr.open_group(str(tmp_path / "lazy" / "residual-results.zarr"), mode="r")
    np.testing.assert_array_equal(store["flag_outside_either"][:],
                                  store["flag_outside_spe"][:] | store["flag_outside_t2"][:])


def test_a_memory_method_on_data_over_the_budget_is_refused_with_the_way_out(tmp_path, capsys, table):
    code, _, err = run_cli(capsys, "run", "--data", table, "--method", "pcp", "--memory-budget", "0.0001",
                           "--out", tmp_path / "o")
    assert code == 2 and "Robust PCA (PCP) needs the data in memory" in err and "raise --memory-budget" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_every_view_of_the_window_is_a_figure_name(tmp_path, capsys, qapp):
    """The names come from one table (app.views.catalog); the window's tabs are the same
    views. outlier-map and evaluation were once refused by the command line."""
    from app.state import AppState
    from app.views import ResultViews
    assert set(ResultViews(AppState(), build_views=False).view_names()) == set(VIEWS)
    code, _, err = run_cli(capsys, "run", "--demo", "cardio", "--method", "pca", "--param", "n_components=3",
                           "--figure", "outlier-map", "--figure", "evaluation", "--out", tmp_path / "f")
    assert code == 0, err
    for name in ("pca-outlier-map", "pca-evaluation"):
        assert (tmp_path / "f" / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / "f" / f"{name}.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_replay_check_fails_when_the_saved_results_cannot_be_compared(tmp_path, capsys):
    """A session whose stored results name /dev/zero: the numbers it saved cannot be compared,
    so --check must not report success (it printed "reproduced" and exited 0)."""
    from app import session as S
    from robustcore.datasets import demo
    from robustcore.methods import get_method
    ds = demo("cardio")
    res = get_method("pca").run(ds, {"n_components": 3})
    path = tmp_path / "w.rss.json"
    S.save_session(path, S.session_from_results(ds, [res]), results=[res])
    doc = json.loads(path.read_text())
    doc["runs"][0]["stored"]["file"] = "/dev/zero"
    path.write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "replay", path, "--out", tmp_path / "o", "--check")
    assert code == 1, err
    assert "reproduced" not in err and "could not compare" in err and "/dev/zero" in err
    # without --check the replay still runs and says what it could not compare
    code, _, err = run_cli(capsys, "replay", path, "--out", tmp_path / "o2")
    assert code == 0 and "could not compare" in err


def test_replay_check_fails_when_the_session_saved_nothing_to_compare(tmp_path, capsys):
    from app import session as S
    from robustcore.datasets import demo
    from robustcore.methods import get_method
    ds = demo("cardio")
    res = get_method("pca").run(ds, {"n_components": 3})
    path = tmp_path / "w.rss.json"
    S.save_session(path, S.session_from_results(ds, [res]))
    doc = json.loads(path.read_text())
    doc["runs"][0]["facts"], doc["runs"][0]["summary"] = {}, {}
    path.write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "replay", path, "--out", tmp_path / "o", "--check")
    assert code == 1 and "saved no numbers of this run to compare" in err


def test_online_rpca_streams_a_video_without_being_told(tmp_path, capsys):
    from tests.app.cli.test_cli_lazy import _clip
    path, truth = _clip(tmp_path / "clip.mkv")
    code, _, err = run_cli(capsys, "run", "--data", path, "--method", "online-rpca", "--param", "batch_size=20",
                           "--out", tmp_path / "v")
    assert code == 0, err
    assert [ln for ln in err.splitlines() if ln.startswith("out of core:")] == [
        "out of core: online-rpca streams the video, a batch of frames at a time"]
    mask = zarr.open_group(str(tmp_path / "v" / "online-rpca-results.zarr"), mode="r")["mask"][:]
    f = 2 * np.sum(mask & truth.reshape(80, -1)) / (mask.sum() + truth.sum())
    assert f > 0.9


@pytest.mark.slow
def test_replay_out_of_core_sees_data_changed_in_the_middle(tmp_path, capsys):
    """A table of 2.5 MB changed in one value in the middle, same size: the cheap identity (size,
    first and last MiB) cannot see it; the digest taken in the fit's first pass does, and the
    replay says so and writes nothing."""
    import os
    X = np.random.default_rng(1).standard_normal((160_000, 2))
    path = tmp_path / "big.npy"
    np.save(path, X)
    code, _, err = run_cli(capsys, "run", "--data", path, "--lazy", "--method", "pca", "--out", tmp_path / "a")
    assert code == 0, err
    doc = json.loads((tmp_path / "a" / "run.json").read_text())
    assert doc["dataset"]["digest"].startswith(DIGEST_FORMAT + ":")   # xxh3 with xxhash installed, else sha256
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", path, "--check",
                           "--out", tmp_path / "b")
    assert code == 0, err
    assert f"the {DIGEST_HASH} of every value" in err
    mtime = os.stat(path).st_mtime_ns
    with open(path, "r+b") as fh:
        fh.seek(1_280_000)
        fh.write(np.float64(123.0).tobytes())
    os.utime(path, ns=(mtime, mtime))
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", path, "--check",
                           "--out", tmp_path / "c")
    assert code == 2 and "the data changed since the session was saved" in err and "Traceback" not in err
    assert "saved parameters" not in err
    assert not (tmp_path / "c" / "pca-arrays.npz").exists()


def test_a_streamed_store_becomes_the_results_store_without_a_copy(tmp_path, capsys):
    """L, S and the mask a streaming fit wrote to disk (results over the budget) are renamed
    into online-rpca-results.zarr, not copied a second time: the store keeps the sink's own
    chunking, and the scores join it."""
    from tests.app.cli.test_cli_lazy import _clip
    path, truth = _clip(tmp_path / "clip.mkv")
    code, _, err = run_cli(capsys, "run", "--data", path, "--method", "online-rpca", "--param", "batch_size=20",
                           "--memory-budget", "0.0001", "--out", tmp_path / "v")
    assert code == 0, err
    g = zarr.open_group(str(tmp_path / "v" / "online-rpca-results.zarr"), mode="r")
    from robustcore.bigdata._sink import _CHUNK_FRAMES
    assert g["mask"].chunks[0] == _CHUNK_FRAMES        # the sink's chunks (a copy would use 16 MB blocks)
    assert {"low_rank", "sparse", "mask", "score_sparse_score", "flag_outlier"} <= set(g.array_keys())
    mask = g["mask"][:]
    f = 2 * np.sum(mask & truth.reshape(80, -1)) / (mask.sum() + truth.sum())
    assert f > 0.9
    assert not (tmp_path / "v" / ".work").exists()
