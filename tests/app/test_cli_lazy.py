"""The command line out of core: --lazy tables and videos, --scheduler, --memory-budget."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.cli import main

pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")


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


def test_zarr_table_runs_out_of_core_with_the_in_memory_numbers(tmp_path, capsys, table):
    code, out, err = run_cli(capsys, "run", "--data", table / "t.zarr", "--method", "coherence-pursuit",
                             "--method", "pca", "--param", "n_components=3", "--memory-budget", "0.00001",
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
            with np.load(tmp_path / "lazy" / f"{m}-arrays.npz") as small:
                np.testing.assert_allclose(small["components"], z["components"], rtol=1e-8, atol=1e-12)
        summary = json.loads((tmp_path / "lazy" / f"{m}-summary.json").read_text())
        assert summary["method"] == m and summary["data"]["out_of_core"]["samples"] == 4000
        assert summary["data"]["fingerprint"].startswith("shallow:")
    assert not (tmp_path / "lazy" / ".work").exists()
    assert "pca-results.zarr" in out


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
    (["--method", "pcp"], "pcp needs the data in memory; methods that run out of core"),
    (["--method", "pca", "--scheduler", "tcp://127.0.0.1:9"], "cannot reach a Dask scheduler"),
    (["--method", "pca", "--figure", "scatter"], "--figure needs the data in memory"),
])
def test_lazy_errors(tmp_path, capsys, table, extra, match, monkeypatch):
    from robustcore.bigdata import _dask
    monkeypatch.setattr(_dask, "_CONNECT_TIMEOUT", 1)
    code, _, err = run_cli(capsys, "run", "--data", table / "t.zarr", *extra, "--out", tmp_path / "o")
    assert code == 2 and match in err and "Traceback" not in err


def test_scheduler_needs_out_of_core_data(tmp_path, capsys, table):
    code, _, err = run_cli(capsys, "run", "--data", table / "t.npy", "--method", "pca", "--scheduler",
                           "tcp://127.0.0.1:9", "--out", tmp_path / "o")
    assert code == 2 and "apply to data opened out of core" in err


def test_video_streams_out_of_core(tmp_path, capsys):
    av = pytest.importorskip("av")
    from robustcore.bigdata.synthetic import MovingObjects
    frames, truth = MovingObjects(32, 40, n_objects=2, seed=9).frames(0, 80)
    path = tmp_path / "clip.mkv"
    with av.open(str(path), "w") as c:
        s = c.add_stream("ffv1", rate=25)
        s.width, s.height, s.pix_fmt = 40, 32, "gray"
        for a in frames:
            for pk in s.encode(av.VideoFrame.from_ndarray(a, format="gray")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
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
