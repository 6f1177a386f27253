"""Tampered sessions: a session reads only its own side files and the data file the user
confirms, and every malformed or hostile field becomes a SessionError (or a note that a saved
run is fitted again) -- never a raw TypeError, RecursionError, OverflowError or a hang. The
corpus cases and a seeded search run in a child process under a memory cap and a time limit."""
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from app import session as S
from robustcore import datasets
from robustcore.datasets import Dataset, Provenance, file_sha256
from robustcore.methods import get_method
from tests.corpus.harness import corpus, problems, run_child

linux = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux (/proc, rlimit)")


@pytest.mark.slow
@linux
def test_corpus_sessions_are_refused_noted_or_asked_about():
    cases, budget = corpus("reopen")
    lines = run_child({"cases": cases})
    assert not problems(cases, lines, budget), "\n".join(problems(cases, lines, budget))


@pytest.mark.slow
@linux
def test_seeded_search_over_tampered_sessions_gives_only_session_errors():
    lines = run_child({"hypothesis": "session-json", "examples": 150, "seconds": 20})
    # The child exits non-zero (run_child raises, printing the falsifying input) on any failure.
    assert lines == [{"hypothesis": "session-json", "outcome": "ok", "examples": 150}]


def saved(tmp_path, folder="proj"):
    """A session with its stored results and its data file in the same folder."""
    base = tmp_path / folder
    base.mkdir()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    data = base / "points.csv"
    np.savetxt(data, X, delimiter=",", fmt="%.17g")
    ds = datasets.load(data)
    res = get_method("pca").run(ds, {"n_components": 2})
    path = base / "s.rss.json"
    S.save_session(path, S.session_from_results(ds, [res], base_dir=str(base)), results=[res])
    return path, data


def edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_data_outside_the_folder_is_not_touched_until_confirmed(tmp_path, monkeypatch):
    path, data = saved(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = tmp_path / "elsewhere" / "points.csv"
    shutil.move(data, moved)
    edit(path, lambda d: d["dataset"].update(path=str(moved), relative_path="../elsewhere/points.csv"))
    touched = []
    monkeypatch.setattr(datasets, "load", lambda p, **k: touched.append(p))
    monkeypatch.setattr(datasets, "file_sha256", lambda p: touched.append(p))
    need = S.reopen_job(path)
    assert isinstance(need, S.NeedsData) and isinstance(need.error, S.DataNeedsConfirmation)
    assert need.error.path == str(moved) and str(moved) in str(need.error) and "--data" in str(need.error)
    assert not touched  # neither hashed nor loaded
    monkeypatch.undo()
    # Confirmed by the user (or a file the user opened before): read, verified, re-fitted.
    for kwargs in ({"data_path": str(moved)}, {"trusted": [str(moved)]}):
        sess, ds, results, notes = S.reopen_job(path, **kwargs)
        assert ds.provenance.path == str(moved) and set(results) == {"pca"}


@pytest.mark.parametrize("where", ["/etc/passwd", "../../../../../../etc/passwd", "/dev/zero"])
def test_a_tampered_data_path_names_the_path_and_reads_nothing(tmp_path, where):
    path, _ = saved(tmp_path)
    os.remove(tmp_path / "proj" / "points.csv")
    absolute = where.startswith("/")
    edit(path, lambda d: d["dataset"].update(path=where if absolute else "/nonexistent/points.csv",
                                             relative_path=None if absolute else where))
    need = S.reopen_job(path)
    assert isinstance(need.error, S.DataNeedsConfirmation)
    assert os.path.abspath(os.path.join(tmp_path / "proj", where)) in str(need.error)


def test_a_confirmed_device_is_still_refused(tmp_path):
    path, _ = saved(tmp_path)
    need = S.reopen_job(path, data_path="/dev/zero")
    assert isinstance(need, S.NeedsData) and "character device" in str(need.error)


@pytest.mark.parametrize("name, why", [("/dev/zero", "not a plain file name"), ("../s.results.npz", "not a plain"),
                                       ("link", "outside the session's folder"), ("fifo", "FIFO"),
                                       ("dev", "link to /dev/zero")])
def test_results_files_that_leave_the_folder_or_are_not_files_skip_that_run(tmp_path, name, why):
    path, _ = saved(tmp_path)
    base = path.parent
    (base / "link").symlink_to(tmp_path / "outside.npz")
    (tmp_path / "outside.npz").write_bytes((base / "s.results.npz").read_bytes())
    os.mkfifo(base / "fifo")
    (base / "dev").symlink_to("/dev/zero")
    edit(path, lambda d: d["runs"][0]["stored"].update(file=name))
    sess, ds, results, notes = S.reopen_job(path)
    assert results["pca"].estimator is not None  # fitted again
    skipped = [n for n in notes if "saved results" in n]
    assert len(skipped) == 1 and why in skipped[0] and "fitted again" in skipped[0], notes


def test_pickled_or_damaged_results_skip_that_run_with_a_note(tmp_path):
    path, _ = saved(tmp_path)
    base = path.parent
    for name, data in (("pickled.npz", _pickled_npz()), ("cut.npz", (base / "s.results.npz").read_bytes()[:200])):
        (base / name).write_bytes(data)
        edit(path, lambda d: d["runs"][0]["stored"].update(file=name, sha256=hashlib.sha256(data).hexdigest()))
        sess, ds, results, notes = S.reopen_job(path)
        assert results["pca"].estimator is not None
        note = next(n for n in notes if "saved results" in n)
        assert ("Python objects" if name == "pickled.npz" else "damaged") in note


def _pickled_npz():
    import io
    buf = io.BytesIO()
    np.savez(buf, **{"pca|arrays|components": np.array([object()], dtype=object)})
    return buf.getvalue()


@pytest.mark.parametrize("options, message", [
    ({"format": "npy"}, "'format' is not a loader option"),
    ({"path": "/etc/passwd"}, "'path' is not a loader option"),
    ({"delimiter": [","]}, "must be a plain value"),
    ({"no_such": 1}, "'no_such' is not a loader option; the csv loader's options are"),
])
def test_loader_options_that_collide_or_do_not_exist_are_refused(tmp_path, options, message):
    path, _ = saved(tmp_path)
    edit(path, lambda d: d["dataset"].update(options=options))
    with pytest.raises(S.SessionError, match=message) as info:
        S.load_session(path)
    assert not isinstance(info.value, TypeError)


def test_out_of_range_loader_option_is_the_loaders_message(tmp_path):
    path, _ = saved(tmp_path)
    edit(path, lambda d: d["dataset"]["options"].update(max_features=0))
    need = S.reopen_job(path)
    assert isinstance(need.error, S.DataMismatchError)
    assert "'max_features' parameter must be an integer in [1, " in str(need.error)


def test_an_out_of_range_limit_is_lowered_to_the_users_not_used(tmp_path):
    # (a session never raises a limit, app.session.limits: 10**25 is said and replaced)
    path, _ = saved(tmp_path)
    edit(path, lambda d: d["dataset"]["options"].update(max_bytes=10 ** 25))
    session, dataset, results, notes = S.reopen_job(path)
    assert dataset.provenance.options["max_bytes"] == datasets.DEFAULT_MAX_BYTES
    assert any("the session asks for max_bytes=10,000,000,000,000,000,000,000,000" in n for n in notes)


@pytest.mark.parametrize("text, message", [
    ('{"a": ' + "[" * 100000 + "]" * 100000 + "}", "100001 levels deep"),
    ('{"format": "robust-subspace-studio session", "schema_version": ' + "9" * 5000 + "}", "5000-digit number"),
    ('{"format": "robust-subspace-studio session", "schema_version": 1, "x": NaN}', "holds NaN"),
    # A numeral that overflows to infinity is refused as Infinity is (it was read as inf).
    ('{"format": "robust-subspace-studio session", "schema_version": 1e999}', "1e999, which overflows"),
    ('{"format": "robust-subspace-studio session", "schema_version": 1, "x": [1, -1e99999999]}',
     "-1e99999999, which overflows"),
])
def test_nesting_digits_and_constants_are_session_errors(tmp_path, text, message):
    p = tmp_path / "bad.rss.json"
    p.write_text(text)
    with pytest.raises(S.SessionError, match=message):
        S.load_session(p)


def test_parse_cost_is_estimated_before_parsing(tmp_path, monkeypatch):
    from robustcore.datasets import _limits
    # Many small numbers: a few bytes of text each, dozens of bytes each once parsed.
    text = '{"format": "robust-subspace-studio session", "schema_version": 1, "x": [' + ",".join(["1"] * 100_000) + "]}"
    p = tmp_path / "many.rss.json"
    p.write_text(text)
    assert _limits.json_parse_cost(text) >= 64 * 100_000
    monkeypatch.setattr(_limits, "JSON_PARSE_BUDGET", 4 * 1024 ** 2)
    with pytest.raises(S.SessionError, match=r"to parse \(100,00\d values\)"):
        S.load_session(p)


def test_special_and_huge_session_files_are_refused_without_hanging(tmp_path):
    fifo = tmp_path / "pipe.rss.json"
    os.mkfifo(fifo)
    with pytest.raises(S.SessionError, match="FIFO"):
        S.load_session(fifo)
    with pytest.raises(S.SessionError, match="character device"):
        S.load_session("/dev/zero")
    big = tmp_path / "big.rss.json"
    with open(big, "wb") as fh:
        fh.truncate(65 * 1024 ** 2)  # sparse: no disk used
    with pytest.raises(S.SessionError, match="larger than the 64 MB a session may be"):
        S.load_session(big)


def test_stored_data_named_outside_the_folder_is_refused(tmp_path):
    ds = Dataset(X=np.eye(4), name="mem")
    p = tmp_path / "m.rss.json"
    S.save_session(p, S.session_from_results(ds, []), dataset=ds)
    edit(p, lambda d: d["dataset"].update(snapshot="../m.data.npz"))
    with pytest.raises(S.SessionError, match="'../m.data.npz', which is not a plain file name"):
        S.load_session(p)


def test_idx_labels_file_in_a_session_must_be_beside_the_data(tmp_path):
    ref = S.DatasetRef(name="d", loader="idx", fingerprint="0", n_samples=1, n_features=1, path=str(tmp_path / "x"),
                       options={"labels_file": "/etc/passwd"})
    doc = json.loads(S.session_to_json(S.Session(dataset=ref)))
    with pytest.raises(S.SessionError, match="labels_file.*not a plain file name"):
        S.session_from_json(json.dumps(doc))
    doc["dataset"]["options"]["labels_file"] = "t10k-labels-idx1-ubyte"
    assert S.session_from_json(json.dumps(doc)).dataset.options["labels_file"] == "t10k-labels-idx1-ubyte"


def test_cli_replay_with_tampered_stored_file_warns_and_replays(tmp_path, capsys):
    from app.cli import main
    path, _ = saved(tmp_path)
    edit(path, lambda d: d["runs"][0]["stored"].update(file="/dev/zero"))
    code = main(["replay", str(path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "warning: pca: the saved results were not read" in err and "/dev/zero" in err


def test_data_file_of_the_session_is_hashed_by_regular_reads_only(tmp_path):
    # A FIFO where the data file should be: refused at once (no hang), named in the message.
    path, data = saved(tmp_path)
    os.remove(data)
    os.mkfifo(data)
    need = S.reopen_job(path)
    assert isinstance(need, S.NeedsData) and "FIFO" in str(need.error) and str(data) in str(need.error)


def test_provenance_of_a_loaded_file_round_trips_through_the_schema(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    ds = datasets.load(p)
    ref = S.DatasetRef.from_dataset(ds, str(tmp_path))
    back = S.session_from_json(S.session_to_json(S.Session(dataset=ref)))
    assert back.dataset.options == ref.options and back.dataset.sha256 == file_sha256(p)
    assert Provenance.from_dict(ds.provenance.to_dict()) == ds.provenance


def test_window_asks_before_reading_data_outside_the_session_folder(tmp_path, qtbot):
    """Through the window: the session's data lies elsewhere; the box names the file, nothing is
    loaded until the user presses 'Use this file', and then the session opens."""
    from PySide6.QtWidgets import QMessageBox

    from app.main_window import MainWindow
    from app.settings import Settings
    path, data = saved(tmp_path)
    moved = tmp_path / "points.csv"
    shutil.move(data, moved)
    edit(path, lambda d: d["dataset"].update(path=str(moved), relative_path="../points.csv"))
    w = MainWindow(settings=Settings(str(tmp_path / "w.ini")))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.loadFailed, timeout=30000):
        w.open_session(str(path))
    box = w.error_box
    assert isinstance(box, QMessageBox) and box.isVisible() and str(moved) in box.text()
    assert w.state.dataset is None
    use = next(b for b in box.buttons() if b.objectName() == "session_use_file")
    with qtbot.waitSignal(w.datasetLoaded, timeout=60000):
        use.click()
    assert w.state.dataset.provenance.path == str(moved) and set(w.state.results) == {"pca"}
    w.close()
