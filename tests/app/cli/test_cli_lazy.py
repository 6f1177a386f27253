"""The command line out of core: --lazy tables and videos, --scheduler, --memory-budget."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from app.cli import main

pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")

#: The format of new content digests and its hash: xxh3 with xxhash installed (the big and test
#: extras), else sha256.
DIGEST_FORMAT, DIGEST_HASH = (("xxh3-blocks", "xxh3_128") if importlib.util.find_spec("xxhash")
                              else ("sha256-blocks", "sha256"))


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4000, 3)) @ rng.standard_normal((3, 7)) + 0.3 * rng.standard_normal((4000, 7))
    X[:150] = 4 * rng.standard_normal((150, 7))
    folder = tmp_path_factory.mktemp("cli")
    np.save(folder / "t.npy", X)
    z = zarr.open_array(str(folder / "t.zarr"), mode="w", shape=X.shape, chunks=(700, 7), dtype="f8")
    z[:] = X
    return folder


@pytest.mark.slow
def test_the_results_store_is_written_around_the_page_cache(tmp_path, capsys, table):
    """The float fields of METHOD-results.zarr that the run read at most once more (copied by
    the command line, or stored by the fit around the cache: projections, distances, outlier
    score) leave nothing in the page cache (their values: the test below)."""
    from robustcore.bigdata import _direct_io
    from tests.page_cache import cached_pages
    if not _direct_io.write_file(str(tmp_path / "probe"), bytes(10)):
        pytest.skip("this file system refuses O_DIRECT")
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--method", "coherence-pursuit",
                           "--param", "n_components=3", "--memory-budget", "0.0001", "--lazy", "--out", tmp_path / "o")
    assert code == 0, err
    g = zarr.open_group(str(tmp_path / "o" / "coherence-pursuit-results.zarr"), mode="r")
    direct = ("score_coherence", "projection", "score_outlier_score", "score_distance", "orthogonal_distance")
    for k in direct:
        files = [f for f in (tmp_path / "o" / "coherence-pursuit-results.zarr" / k / "c").rglob("*") if f.is_file()]
        assert files and all(cached_pages(f) == 0 for f in files), k
        assert g[k].shape[0] == 4000


@pytest.mark.slow
def test_zarr_table_runs_out_of_core_with_the_in_memory_numbers(tmp_path, capsys, table):
    code, out, err = run_cli(capsys, "run", "--data", table / "t.zarr", "--method", "coherence-pursuit",
                             "--method", "pca", "--param", "n_components=3", "--memory-budget", "0.0001",
                             "--out", tmp_path / "lazy")
    assert code == 0, err
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--method", "coherence-pursuit",
                           "--method", "pca", "--param", "n_components=3", "--out", tmp_path / "mem")
    assert code == 0, err
    for m in ("pca", "coherence-pursuit"):
        g = zarr.open_group(str(tmp_path / "lazy" / f"{m}-results.zarr"), mode="r")
        with np.load(tmp_path / "mem" / f"{m}-arrays.npz") as z:
            for k in ("score_spe", "score_t2", "projection"):
                np.testing.assert_allclose(g[k][:], z[k], rtol=1e-8, atol=1e-10)
            # every per-sample field, those copied and those the fit stored and the run moved in
            names = sorted(g.array_keys())
            assert {"flag_outlier", "score_outlier_score"} <= set(names) and set(names) <= set(z.files)
            for k in names:
                np.testing.assert_allclose(g[k][:], z[k], rtol=1e-8, atol=1e-10)
            with np.load(tmp_path / "lazy" / f"{m}-arrays.npz") as small:
                np.testing.assert_allclose(small["components"], z["components"], rtol=1e-8, atol=1e-12)
        summary = json.loads((tmp_path / "lazy" / f"{m}-summary.json").read_text())
        assert summary["method"] == m and summary["data"]["out_of_core"]["samples"] == 4000
        assert summary["data"]["fingerprint"].startswith("shallow:")
    assert not (tmp_path / "lazy" / ".work").exists()
    assert "pca-results.zarr" in out
    # the summary (printed and in the files) names the store the run leaves, not its working folder
    for m in ("pca", "coherence-pursuit"):
        where = str(tmp_path / "lazy" / f"{m}-results.zarr")
        assert json.loads((tmp_path / "lazy" / f"{m}-summary.json").read_text())["summary"]["results in"] == where
        assert f"results in: {where}" in out
    assert ".work" not in out
    # PCA out of core: the column moments with the scatter matrix, then the scores (which also
    # calibrate the limits); the flags come from the stored scores, not from the data
    pca_part = out.split("pca: done")[1].split("coherence-pursuit")[0] if "pca: done" in out else out
    assert "passes over the data: 2" in pca_part
    ref = json.loads((tmp_path / "lazy" / "run.json").read_text())["dataset"]
    assert ref["lazy"] and ref["identity"].startswith("tree-sha256:")   # a Zarr folder: names, sizes, metadata


@pytest.mark.slow
def test_same_numbers_on_a_cluster_given_by_address(tmp_path, capsys, table):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                                  dashboard_address=None, silence_logs=40) as cluster:
        address = cluster.scheduler_address
        code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--lazy", "--method", "residual",
                               "--param", "n_components=3", "--scheduler", address, "--out", tmp_path / "c")
    assert code == 0, err
    assert address.startswith("tcp://") and f"Dask scheduler at {address}" in err
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--lazy", "--method", "residual",
                           "--param", "n_components=3", "--out", tmp_path / "l")
    assert code == 0, err
    a = zarr.open_group(str(tmp_path / "c" / "residual-results.zarr"), mode="r")
    b = zarr.open_group(str(tmp_path / "l" / "residual-results.zarr"), mode="r")
    np.testing.assert_array_equal(a["score_spe"][:], b["score_spe"][:])
    np.testing.assert_array_equal(a["flag_outlier"][:], b["flag_outlier"][:])


@pytest.mark.parametrize("extra,match", [
    (["--method", "pcp"], "Robust PCA (PCP) needs the data in memory, and 't.zarr' is opened out of core; "
                          "methods that run out of core on a table: pca, coherence-pursuit, robpca, residual (Zarr "
                          "tables"),
    (["--method", "pca", "--scheduler", "tcp://127.0.0.1:9"], "cannot reach a Dask scheduler"),
    (["--method", "pca", "--figure", "contour"], "--figure contour cannot be drawn for pca: not available for data "
                                                 "opened out of core"),
])
def test_lazy_errors(tmp_path, capsys, table, extra, match, monkeypatch):
    from robustcore.bigdata import _dask
    monkeypatch.setattr(_dask, "_CONNECT_TIMEOUT", 1)
    code, _, err = run_cli(capsys, "run", "--data", table / "t.zarr", *extra, "--out", tmp_path / "o")
    assert code == 2 and match in err and "Traceback" not in err


def test_the_sample_detail_is_drawn_out_of_core(tmp_path, capsys, table):
    """``--figure detail`` on a table opened out of core: written (it was refused), drawn from
    the one row it reads (the view's draw_now: a command line has no event loop to wait on)."""
    code, _, err = run_cli(capsys, "run", "--data", table / "t.zarr", "--method", "pca", "--param",
                           "n_components=2", "--figure", "detail", "--out", tmp_path / "o")
    assert code == 0, err
    assert (tmp_path / "o" / "pca-detail.png").stat().st_size > 1000

def test_scheduler_reads_the_data_out_of_core(tmp_path, capsys, table, monkeypatch):
    """--scheduler sends the work to a cluster, so the data are read out of core even when they
    would fit in memory; the run says so before it tries the address."""
    from robustcore.bigdata import _dask
    monkeypatch.setattr(_dask, "_CONNECT_TIMEOUT", 1)
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--method", "pca", "--scheduler",
                           "tcp://127.0.0.1:9", "--out", tmp_path / "o")
    assert code == 2 and "out of core: --scheduler" in err and "cannot reach a Dask scheduler" in err
    code, _, err = run_cli(capsys, "run", "--demo", "cardio", "--method", "pca", "--scheduler",
                           "tcp://127.0.0.1:9", "--out", tmp_path / "o")
    assert code == 2 and "--scheduler applies to --data files read out of core" in err


def _clip(path):
    """An 80-frame 32 x 40 grey clip with two planted moving objects (lossless): (path, truth)."""
    av = pytest.importorskip("av")
    from robustcore.bigdata.synthetic import MovingObjects
    frames, truth = MovingObjects(32, 40, n_objects=2, seed=9).frames(0, 80)
    with av.open(str(path), "w") as c:
        s = c.add_stream("ffv1", rate=25)
        s.width, s.height, s.pix_fmt = 40, 32, "gray"
        for a in frames:
            for pk in s.encode(av.VideoFrame.from_ndarray(a, format="gray")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    return path, truth


def test_video_streams_out_of_core(tmp_path, capsys):
    path, truth = _clip(tmp_path / "clip.mkv")
    code, _, err = run_cli(capsys, "run", "--data", path, "--lazy", "--method", "online-rpca",
                           "--param", "batch_size=20", "--option", "step=1", "--out", tmp_path / "v")
    assert code == 0, err
    g = zarr.open_group(str(tmp_path / "v" / "online-rpca-results.zarr"), mode="r")
    mask = g["mask"][:]
    assert mask.shape == (80, 32 * 40)
    f = 2 * np.sum(mask & truth.reshape(80, -1)) / (mask.sum() + truth.sum())
    assert f > 0.9
    summary = json.loads((tmp_path / "v" / "online-rpca-summary.json").read_text())
    assert summary["summary"]["frames"] == 80 and summary["data"]["out_of_core"]["frame rate"] == "25 fps"


# -- run.json, replay and figures of lazy runs ------------------------------------------------------

def _png(path):
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        return np.asarray(im.convert("RGB"), dtype=np.int16), json.loads(im.text["Comment"])


@pytest.mark.slow
def test_lazy_run_writes_run_json_and_replay_repeats_it_out_of_core(tmp_path, capsys, table):
    from app import session as S
    from app.session.stores import store_manifest
    lazy = ["--memory-budget", "0.0001"]   # the per-sample results go to Zarr stores
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--lazy", "--method", "pca", "--method",
                           "coherence-pursuit", "--param", "n_components=3", *lazy, "--select", "3,5-7",
                           "--out", tmp_path / "a")
    assert code == 0, err
    sess = S.load_session(tmp_path / "a" / "run.json")
    assert sess.selection == [3, 5, 6, 7]
    assert sess.dataset.lazy and sess.dataset.fingerprint.startswith("shallow:") and sess.dataset.sha256 is None
    assert sess.dataset.identity.startswith("edges-sha256:224128:")   # size, sha256 of the first and last MiB
    assert [r.method for r in sess.runs] == ["pca", "coherence-pursuit"]
    rec = sess.run_for("pca")
    assert rec.params["n_components"] == 3 and rec.stored["store"]["name"] == "pca-results.zarr"
    assert rec.stored["store"]["manifest"] == store_manifest(str(tmp_path / "a" / "pca-results.zarr"))["manifest"]
    code, out, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", table / "t.npy", "--check",
                             *lazy, "--out", tmp_path / "b")
    assert code == 0, err
    assert "replay reproduced the saved numbers and arrays" in err
    assert f"checked by its size and its first and last 1 MiB and the {DIGEST_HASH} of every value" in err
    for m in ("pca", "coherence-pursuit"):
        a = zarr.open_group(str(tmp_path / "a" / f"{m}-results.zarr"), mode="r")
        b = zarr.open_group(str(tmp_path / "b" / f"{m}-results.zarr"), mode="r")
        assert sorted(a.array_keys()) == sorted(b.array_keys())
        for k in a.array_keys():
            np.testing.assert_allclose(b[k][:], a[k][:], rtol=1e-10, err_msg=f"{m} {k}")
    assert S.load_session(tmp_path / "b" / "run.json").dataset.lazy
    assert not (tmp_path / "b" / ".work").exists()

    # Other numbers in an intact store (its manifest updated to match) are caught, block by block.
    spe = zarr.open_group(str(tmp_path / "a" / "pca-results.zarr"), mode="r+")["score_spe"]
    spe[10:20] = spe[10:20] * 1.5
    doc = json.loads((tmp_path / "a" / "run.json").read_text())
    doc["runs"][0]["stored"]["store"].update(store_manifest(str(tmp_path / "a" / "pca-results.zarr")))
    (tmp_path / "a" / "run.json").write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", table / "t.npy", "--check",
                           *lazy, "--out", tmp_path / "c")
    assert code == 1 and "pca: per-sample 'score_spe': max abs difference" in err
    assert "coherence-pursuit:" not in err

    # A damaged store is not compared, and says so.
    store = tmp_path / "a" / "coherence-pursuit-results.zarr"
    next(p for p in sorted(store.rglob("*")) if p.is_file() and "c" in p.relative_to(store).parts).unlink()
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", table / "t.npy",
                           *lazy, "--out", tmp_path / "d")
    assert code == 0 and "coherence-pursuit: the saved per-sample results were not read" in err
    assert "is damaged or changed" in err


@pytest.mark.slow
def test_hostile_run_json_store_name_is_refused(tmp_path, capsys, table):
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--lazy", "--method", "pca",
                           "--out", tmp_path / "a")
    assert code == 0, err
    doc = json.loads((tmp_path / "a" / "run.json").read_text())
    doc["runs"][0]["stored"]["store"]["name"] = "../../etc"
    (tmp_path / "a" / "run.json").write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", table / "t.npy",
                           "--out", tmp_path / "b")
    assert code == 2 and "'../../etc', which is not a plain file name" in err and "Traceback" not in err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_lazy_scatter_figure_is_the_in_memory_figure(tmp_path, capsys, table, qapp):
    common = ["--method", "pca", "--param", "n_components=3", "--figure", "scatter", "--size", "500x400"]
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--lazy", "--memory-budget", "0.0001",
                           *common, "--out", tmp_path / "lazy")
    assert code == 0, err
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", *common, "--out", tmp_path / "mem")
    assert code == 0, err
    lazy, meta = _png(tmp_path / "lazy" / "pca-scatter.png")
    mem, _ = _png(tmp_path / "mem" / "pca-scatter.png")
    assert meta["view"] == "scatter" and meta["method"] == "pca" and meta["data"]["fingerprint"].startswith("shallow:")
    assert lazy.shape == mem.shape and lazy.std() > 10   # not blank
    assert np.mean(np.abs(lazy - mem).max(axis=2) > 8) < 0.002   # the same picture


@pytest.mark.slow
def test_lazy_decomposition_figure_draws_frames_from_the_stores(tmp_path, capsys, qapp):
    path, _ = _clip(tmp_path / "clip.mkv")
    common = ["--method", "online-rpca", "--param", "batch_size=20", "--figure", "decomposition",
              "--size", "600x400"]
    code, _, err = run_cli(capsys, "run", "--data", path, "--lazy", "--memory-budget", "0.0001", *common,
                           "--out", tmp_path / "lazy")
    assert code == 0, err
    summary = json.loads((tmp_path / "lazy" / "online-rpca-summary.json").read_text())
    assert summary["summary"]["results in"] != "memory"   # L and S were in a Zarr store when drawn
    code, _, err = run_cli(capsys, "run", "--data", path, *common, "--out", tmp_path / "mem")
    assert code == 0, err
    lazy, meta = _png(tmp_path / "lazy" / "online-rpca-decomposition.png")
    mem, _ = _png(tmp_path / "mem" / "online-rpca-decomposition.png")
    assert meta["view"] == "decomposition" and meta["method"] == "online-rpca"
    # The same four pictures (the colour bar's ticks may differ: out of core they are set from a
    # sample of frames).
    assert lazy.shape == mem.shape and lazy.std() > 10
    assert np.mean(np.abs(lazy - mem).max(axis=2) > 8) < 0.01
    code, _, err = run_cli(capsys, "replay", tmp_path / "lazy" / "run.json", "--data", path, "--check",
                           "--memory-budget", "0.0001", "--figure", "decomposition", "--out", tmp_path / "re")
    assert code == 0 and "reproduced the saved numbers and arrays" in err, err
    assert (tmp_path / "re" / "online-rpca-decomposition.png").is_file()


def test_replay_refuses_data_changed_in_the_middle(tmp_path, capsys):
    import os
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40000, 8))   # 2.5 MB: more than the first and last MiB checked at once
    np.save(tmp_path / "t.npy", X)
    code, _, err = run_cli(capsys, "run", "--data", tmp_path / "t.npy", "--lazy", "--method", "pca",
                           "--out", tmp_path / "a")
    assert code == 0, err
    assert json.loads((tmp_path / "a" / "run.json").read_text())["dataset"]["digest"].startswith(DIGEST_FORMAT + ":")
    st = os.stat(tmp_path / "t.npy")
    Y = X.copy()
    Y[20000, 3] += 1.0
    np.save(tmp_path / "t.npy", Y)
    os.utime(tmp_path / "t.npy", ns=(st.st_atime_ns, st.st_mtime_ns))
    code, _, err = run_cli(capsys, "replay", tmp_path / "a" / "run.json", "--data", tmp_path / "t.npy",
                           "--out", tmp_path / "b")
    assert code != 0 and "the data changed since the session was saved" in err and "Traceback" not in err
    assert not (tmp_path / "b" / "pca-results.zarr").exists()
