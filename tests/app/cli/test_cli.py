"""The command line: every method on a bundled demo writes valid files, a replay reproduces the
numbers, and bad parameters or files give the library's message on stderr with exit code 2."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app import session as S
from app.cli import main
from robustcore.datasets import demos
from robustcore.methods import METHODS, get_method

ROOT = Path(__file__).resolve().parents[3]

# One bundled demo per method, chosen small so the whole file stays fast.
CASES = [
    ("pca", "iris", ["n_components=2"]),
    ("coherence-pursuit", "iris", ["n_components=2"]),
    ("robpca", "iris", ["n_components=2"]),
    ("pcp", "gaussian-2d", ["max_iter=200"]),
    ("residual", "cardio", ["n_components=4"]),
    ("esfs", "clusters-3d", []),
    ("scw", "cardio", []),
    ("online-rpca", "usps-1-vs-8", ["batch_size=100"]),
]


def read_csv(path):
    """Provenance comment lines and the table below them."""
    with open(path, newline="") as fh:
        lines = fh.read().splitlines()
    header = [ln for ln in lines if ln.startswith("#")]
    rows = list(csv.reader(ln for ln in lines if not ln.startswith("#")))
    return header, rows[0], rows[1:]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_method_has_a_case():
    assert {c[0] for c in CASES} == set(METHODS)


@pytest.mark.slow
@pytest.mark.parametrize("method, demo, params", CASES, ids=[c[0] for c in CASES])
def test_run_each_method_on_a_demo_writes_valid_files(tmp_path, capsys, method, demo, params):
    out = tmp_path / "out"
    argv = ["run", "--demo", demo, "--method", method, "--out", out]
    for p in params:
        argv += ["--param", p]
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "Traceback" not in err
    m = get_method(method)
    sess = S.load_session(out / "run.json")
    ds = S.resolve_dataset(sess)
    assert sess.dataset.demo == demo and len(sess.runs) == 1
    rec = sess.runs[0]
    assert rec.method == method and rec.data_fingerprint == ds.fingerprint()
    expected = m.validate(S.pin_seed(m, {k: p.parse(v) for k, v, p in
                                         [(*kv.split("="), next(q for q in m.params() if q.name == kv.split("=")[0]))
                                          for kv in params]}))
    assert rec.params == expected
    if S.seed_param(m) is not None:
        assert rec.seed == S.DEFAULT_SEED == rec.params["random_state"]
    result = m.run(ds, rec.params)  # the same numbers, computed here
    # NPZ: every array, no pickle, with what produced it.
    with np.load(out / f"{method}-arrays.npz", allow_pickle=False) as z:
        meta = json.loads(str(z["metadata"]))
        for name, arr in result.arrays.items():
            np.testing.assert_allclose(z[name], arr, rtol=1e-9, atol=1e-12)
        for name, arr in result.sample_scores.items():
            np.testing.assert_allclose(z[f"score_{name}"], arr, rtol=1e-9, atol=1e-12)
    assert meta["method"] == method and meta["params"] == json.loads(json.dumps(rec.params))
    assert meta["data"]["fingerprint"] == ds.fingerprint() and "numpy" in meta["versions"]
    # CSV: one row per sample, scores and 0/1 flags.
    if result.sample_scores or result.flags:
        header, cols, rows = read_csv(out / f"{method}-samples.csv")
        assert len(rows) == ds.n_samples
        assert any(method in h for h in header) and any("seed" in h for h in header)
        for name, v in result.sample_scores.items():
            got = np.array([float(r[cols.index(name)]) for r in rows])
            np.testing.assert_allclose(got, v, rtol=1e-12)
        for name, v in result.flags.items():
            got = np.array([int(r[cols.index(f"flag_{name}")]) for r in rows])
            np.testing.assert_array_equal(got, np.asarray(v, dtype=int))
    if result.feature_scores:
        header, cols, rows = read_csv(out / f"{method}-features.csv")
        assert len(rows) == ds.n_features and cols[:3] == ["rank", "feature_index", "feature_name"]
    assert str(out / "run.json") in stdout


def test_replay_reproduces_the_numbers(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    code, _, err = run_cli(capsys, "run", "--demo", "cardio", "--method", "coherence-pursuit",
                           "--method", "pca", "--param", "n_components=3",
                           "--param", "coherence-pursuit:n_inliers=1000", "--out", a)
    assert code == 0, err
    code, _, err = run_cli(capsys, "replay", a / "run.json", "--out", b, "--check")
    assert code == 0, err
    assert "reproduced the saved numbers and arrays" in err
    for m in ("pca", "coherence-pursuit"):
        with np.load(a / f"{m}-arrays.npz") as za, np.load(b / f"{m}-arrays.npz") as zb:
            assert set(za.files) == set(zb.files)
            for k in za.files:
                if k != "metadata":
                    np.testing.assert_allclose(za[k], zb[k], rtol=1e-10, atol=1e-12)
    first = S.load_session(a / "run.json")
    again = S.load_session(b / "run.json")
    assert [r.method for r in first.runs] == ["coherence-pursuit", "pca"]
    assert [r.params for r in first.runs] == [r.params for r in again.runs]
    assert first.run_for("coherence-pursuit").params["n_inliers"] == 1000
    assert first.run_for("pca").params["n_components"] == 3


def test_replay_of_a_window_session(tmp_path, capsys):
    """A session saved by the window (with stored results) replays to the same numbers."""
    from robustcore.datasets import demo
    ds = demo("cardio")
    m = get_method("residual")
    res = m.run(ds, {"n_components": 3})
    s = S.session_from_results(ds, [res], selection=[0, 5])
    S.save_session(tmp_path / "w.rss.json", s, results=[res])
    code, _, err = run_cli(capsys, "replay", tmp_path / "w.rss.json", "--out", tmp_path / "o", "--check")
    assert code == 0, err
    assert S.load_session(tmp_path / "o" / "run.json").selection == [0, 5]
    # A replay that does not reproduce the stored numbers says so (and fails with --check).
    doc = json.loads((tmp_path / "w.rss.json").read_text())
    doc["runs"][0]["facts"]["limits"]["spe"] *= 1.01
    (tmp_path / "w.rss.json").write_text(json.dumps(doc))
    code, _, err = run_cli(capsys, "replay", tmp_path / "w.rss.json", "--out", tmp_path / "o2", "--check")
    assert code == 1 and "did not reproduce" in err and "limits.spe" in err


def write_labelled_csv(path, X, labels):
    with open(path, "w") as fh:
        fh.write("a,b,c,d,kind\n")
        for row, lab in zip(X, labels):
            fh.write(",".join(f"{v:.10f}" for v in row) + f",{lab}\n")


def test_run_on_a_data_file_with_options_replay_moved_and_changed(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = tmp_path / "points.csv"
    X = rng.standard_normal((40, 4))
    labels = np.where(np.arange(40) % 3 == 0, "x", "y")
    write_labelled_csv(data, X, labels)
    code, _, err = run_cli(capsys, "run", "--data", data, "--option", "label_column=kind", "--method", "scw",
                           "--out", tmp_path / "o")
    assert code == 0, err
    sess = S.load_session(tmp_path / "o" / "run.json")
    assert sess.dataset.options["label_column"] == "kind" and sess.dataset.loader == "csv"
    assert sess.dataset.sha256 == S.resolve_dataset(sess, path=str(data)).fingerprint()
    # The data lies outside run.json's folder: a replay reads it only when --data confirms it.
    code, _, err = run_cli(capsys, "replay", tmp_path / "o" / "run.json", "--out", tmp_path / "o2")
    assert code == 2 and "outside the session's folder" in err and f"--data {data}" in err
    code, _, err = run_cli(capsys, "replay", tmp_path / "o" / "run.json", "--data", data, "--out", tmp_path / "o2",
                           "--check")
    assert code == 0, err  # SCW needs the labels: the loader options were applied again
    # Moved: not found, then pointed to with --data.
    moved = tmp_path / "moved.csv"
    data.rename(moved)
    code, _, err = run_cli(capsys, "replay", tmp_path / "o" / "run.json", "--out", tmp_path / "o3")
    assert code == 2 and "was not found" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "replay", tmp_path / "o" / "run.json", "--data", moved,
                           "--out", tmp_path / "o3", "--check")
    assert code == 0, err
    # Changed: refused, and nothing is written.
    X[3, 1] += 0.5
    write_labelled_csv(moved, X, labels)
    code, out, err = run_cli(capsys, "replay", tmp_path / "o" / "run.json", "--data", moved,
                             "--out", tmp_path / "o4")
    assert code == 2
    assert "has changed since the session was saved" in err and "Traceback" not in err
    assert not (tmp_path / "o4" / "run.json").exists()
    # A bad loader option gets the loader's own message.
    code, _, err = run_cli(capsys, "run", "--data", moved, "--option", "label_col=kind", "--method", "pca",
                           "--out", tmp_path / "o5")
    assert code == 2 and "unknown option 'label_col'" in err and "label_column" in err


@pytest.mark.parametrize("argv, message", [
    (["run", "--demo", "iris", "--method", "pca", "--param", "n_components=0"],
     "The 'n_components' parameter must be an integer >= 1 or None (elbow of the scree plot). Got 0 instead."),
    (["run", "--demo", "iris", "--method", "pca", "--param", "n_components=9"],
     "'n_components' parameter must be an integer in [1, 4]"),
    (["run", "--demo", "iris", "--method", "pca", "--param", "n_components"], "--param must be KEY=VALUE"),
    (["run", "--demo", "iris", "--method", "pca", "--param", "lam=0.1"], "unknown parameter 'lam'"),
    (["run", "--demo", "iris", "--method", "pcp", "--param", "svd=fast"], "'svd' parameter must be one of"),
    (["run", "--demo", "iris", "--method", "robust"], "unknown method 'robust'"),
    (["run", "--demo", "nope", "--method", "pca"], "unknown demo 'nope'"),
    (["run", "--data", "/no/such/file.csv", "--method", "pca"], "/no/such/file.csv does not exist"),
    (["run", "--demo", "gaussian-2d", "--method", "scw"], "needs class labels"),
    (["run", "--demo", "iris", "--method", "pca", "--figure", "ranking"], "no method in this run draws"),
    (["run", "--method", "pca"], "one of the arguments --data --demo is required"),
    (["run", "--demo", "iris", "--method", "pca", "--select", "3,150"],
     "--select index 150 is outside the data set: it has 150 samples"),
    (["run", "--demo", "iris", "--method", "pca", "--select", "9-2"], "runs backwards"),
    (["run", "--demo", "iris", "--method", "pca", "--size", "10x10"], "size must be WIDTHxHEIGHT"),
])
def test_bad_input_gives_the_library_message_and_exit_2(tmp_path, capsys, argv, message):
    code, out, err = run_cli(capsys, *argv, "--out", tmp_path / "o")
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.startswith("robust-studio: error: ")


def test_bad_session_files_are_refused(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = run_cli(capsys, "replay", tmp_path / "bad.json", "--out", tmp_path / "o")
    assert code == 2 and "not valid JSON" in err
    future = {"format": S.FORMAT_NAME, "schema_version": S.SCHEMA_VERSION + 5, "runs": []}
    (tmp_path / "future.json").write_text(json.dumps(future))
    code, _, err = run_cli(capsys, "replay", tmp_path / "future.json", "--out", tmp_path / "o")
    assert code == 2 and "newer version" in err and "update the application" in err


def test_existing_files_are_kept_unless_forced(tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["run", "--demo", "iris", "--method", "pca", "--out", out, "-q"]
    assert run_cli(capsys, *argv)[0] == 0
    before = (out / "pca-samples.csv").read_bytes()
    code, _, err = run_cli(capsys, *argv, "--param", "n_components=3")
    assert code == 2 and "pass --force to overwrite" in err
    assert (out / "pca-samples.csv").read_bytes() == before
    assert run_cli(capsys, *argv, "--param", "n_components=3", "--force")[0] == 0
    assert S.load_session(out / "run.json").runs[0].params["n_components"] == 3


def test_seed_is_pinned_and_recorded(tmp_path, capsys):
    code, _, err = run_cli(capsys, "run", "--demo", "gaussian-2d", "--method", "pcp", "--seed", "7",
                           "--param", "max_iter=50", "--out", tmp_path / "o", "-q")
    assert code == 0, err
    rec = S.load_session(tmp_path / "o" / "run.json").runs[0]
    assert rec.seed == 7 == rec.params["random_state"]
    code, _, err = run_cli(capsys, "run", "--demo", "gaussian-2d", "--method", "pcp", "--seed", "7",
                           "--param", "random_state=3", "--param", "max_iter=50", "--out", tmp_path / "p", "-q")
    assert S.load_session(tmp_path / "p" / "run.json").runs[0].seed == 3


def test_methods_and_demos_list_everything(capsys):
    code, out, _ = run_cli(capsys, "methods")
    assert code == 0
    for m in METHODS.values():
        assert f"{m.name}  ({m.title})" in out
        for p in m.params():
            assert f"--param {p.name}=" in out and p.help in out
    code, out, _ = run_cli(capsys, "methods", "--json")
    listed = json.loads(out)
    assert [m["name"] for m in listed] == list(METHODS)
    pca = listed[0]
    assert {"name": "n_components", "type": "int", "default": None}.items() <= pca["params"][0].items()
    code, out, _ = run_cli(capsys, "demos")
    assert code == 0 and all(name in out for name in demos())
    code, out, _ = run_cli(capsys, "demos", "--json")
    assert {d["name"] for d in json.loads(out)} == set(demos()) == {
        "usps-1-vs-8", "mnist-3000", "escalator", "iris", "cardio", "clusters-3d", "gaussian-2d"}


def test_help_exits_zero(capsys):
    code, out, _ = run_cli(capsys, "run", "--help")
    assert code == 0 and "--param" in out and "run.json" in out


@pytest.mark.slow
def test_figures_are_written_offscreen(tmp_path, capsys, qapp):
    code, out, err = run_cli(capsys, "run", "--demo", "iris", "--method", "pca", "--method", "coherence-pursuit",
                             "--param", "pca:n_components=2", "--figure", "scatter", "--figure", "comparison",
                             "--select", "0,5-7",
                             "--out", tmp_path / "o", "--size", "400x300")
    assert code == 0, err
    names = sorted(os.listdir(tmp_path / "o"))
    assert [n for n in names if "comparison" in n] == ["comparison.png", "comparison.svg"]
    assert {"pca-scatter.png", "coherence-pursuit-scatter.svg"} <= set(names)
    assert S.load_session(tmp_path / "o" / "run.json").selection == [0, 5, 6, 7]
    import xml.etree.ElementTree as ET

    from PIL import Image
    fingerprint = S.load_session(tmp_path / "o" / "run.json").dataset.fingerprint
    for view in ("scatter",):
        with Image.open(tmp_path / "o" / f"pca-{view}.png") as im:
            im.load()  # checks every chunk's CRC, including the provenance chunk
            assert im.format == "PNG" and im.size[0] > 100
            meta = json.loads(im.text["Comment"])
        assert meta["method"] == "pca" and meta["view"] == view
        assert meta["params"]["n_components"] == 2 and meta["data"]["fingerprint"] == fingerprint
        root = ET.parse(tmp_path / "o" / f"pca-{view}.svg").getroot()
        assert root.tag.endswith("svg")
        meta = json.loads(next(e for e in root if e.tag.endswith("metadata")).text)
        assert meta["method"] == "pca" and meta["view"] == view and "numpy" in meta["versions"]


def test_figure_needs_are_checked_before_anything_is_written(tmp_path, capsys, qapp):
    """--figure comparison with one method used to say "run one of: pca, coherence-pursuit, pcp"
    although pca ran, exit 2 and leave CSV/NPZ behind without run.json."""
    out = tmp_path / "o"
    code, _, err = run_cli(capsys, "run", "--demo", "iris", "--method", "pca", "--figure", "comparison",
                           "--out", out, "-q")
    assert code == 2
    assert ("--figure comparison: it compares the results of at least 2 of: pca, coherence-pursuit, robpca, "
            "pcp, online-rpca; only pca is there; add --method coherence-pursuit or --method robpca or --method "
            "pcp or --method online-rpca; nothing was written") in err
    assert not out.exists()


@pytest.mark.slow
def test_subprocess_run(tmp_path):
    """The installed entry point's way in: a separate Python, exit codes, stderr only for errors."""
    module = "app" if (ROOT / "app" / "__main__.py").exists() else "app.cli"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    cmd = [sys.executable, "-m", module, "run", "--demo", "iris", "--method", "pca", "--out", str(tmp_path / "o")]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "explained variance ratio" in p.stdout
    assert S.load_session(tmp_path / "o" / "run.json").runs[0].method == "pca"
    p = subprocess.run([sys.executable, "-m", module, "run", "--demo", "iris", "--method", "pca",
                        "--param", "center=maybe", "--out", str(tmp_path / "x")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "The 'center' parameter must be True or False. Got 'maybe' instead." in p.stderr
    assert "Traceback" not in p.stderr
