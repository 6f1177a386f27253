"""Session files: schema round trip, refusal of bad files, data verification by hash, and
restoring a window state (results and selection) from a saved session."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from app import session as S
from robustcore import datasets
from robustcore.datasets import Dataset, Provenance, file_sha256
from robustcore.methods import get_method


def planted(n=60, d=6, seed=3):
    """Rank-2 data plus a few far-away rows: PCA must see the planted plane."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) @ rng.standard_normal((2, d))
    X[:5] += 8 * rng.standard_normal((5, d))
    labels = np.array(["a", "b"] * (n // 2), dtype=object)
    return Dataset(X=X, name="planted", labels=labels, outliers=np.arange(n) < 5)


def write_csv(path, X):
    np.savetxt(path, X, delimiter=",", fmt="%.17g")


def csv_dataset(path, options=None):
    """A file-backed data set as a loader makes it (provenance with the file's sha256)."""
    X = np.loadtxt(path, delimiter=",", ndmin=2)
    return Dataset(X=X, name=os.path.basename(path),
                   provenance=Provenance(loader="csv", options=dict(options or {}), path=str(path),
                                         size=os.path.getsize(path), sha256=file_sha256(path)))


@pytest.fixture
def fake_loader(monkeypatch):
    """robustcore.datasets.load reduced to plain numeric CSV, so these tests test the session
    logic alone (the real loaders have their own tests; the CLI tests use them end to end)."""
    calls = []

    def load(path, format=None, **options):
        calls.append((path, options))
        return csv_dataset(path, options)
    monkeypatch.setattr(datasets, "load", load, raising=False)
    return calls


def run(dataset, method="pca", **params):
    return get_method(method).run(dataset, params)


# -- schema --------------------------------------------------------------------------------------

def test_round_trip_keeps_every_field(tmp_path):
    ds = planted()
    res = run(ds, n_components=2)
    s = S.session_from_results(ds, {"pca": res}, view={"name": "scatter", "zoom": [0, 1]},
                               selection=[7, 3, 3, 12])
    path = tmp_path / "a.rss.json"
    written = S.save_session(path, s, dataset=ds)
    assert written[0] == str(path) and (tmp_path / "a.data.npz").is_file()
    back = S.load_session(path)
    assert back.selection == [3, 7, 12]
    assert back.view == {"name": "scatter", "zoom": [0, 1]}
    assert back.current_method == "pca"
    assert back.runs[0].params == {"n_components": 2, "center": True, "scale": "auto",
                                   "contamination": "auto"}
    assert back.runs[0].data_fingerprint == ds.fingerprint() == back.dataset.fingerprint
    assert back.runs[0].summary["explained variance ratio"] == pytest.approx(
        res.summary["explained variance ratio"], rel=1e-15)
    assert back.dataset.n_samples == 60 and back.dataset.n_features == 6
    assert {"numpy", "scipy", "robustcore", "python"} <= set(back.versions)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == S.SCHEMA_VERSION and doc["format"] == S.FORMAT_NAME


def test_non_finite_summary_values_still_give_strict_json(tmp_path):
    ds = planted()
    res = run(ds)
    res.limits.spe = float("inf")
    res.limits.t2 = np.float32(1.5)
    s = S.session_from_results(ds, [res])
    text = S.session_to_json(s)
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert doc["runs"][0]["summary"]["SPE limit"] == "inf" and doc["runs"][0]["facts"]["limits"]["spe"] == "inf"
    assert doc["runs"][0]["summary"]["T2 limit"] == 1.5 and doc["runs"][0]["facts"]["limits"]["t2"] == 1.5


def test_sessions_of_0_1_open_with_renamed_parameters(tmp_path):
    """0.1 wrote schema 1 with ESFS's standardize and PCP's score; they open as scale and
    score_norm, and the runs validate against today's methods."""
    ds = planted()
    doc = json.loads(S.session_to_json(S.session_from_results(ds, [run(ds)])))
    esfs_run = dict(doc["runs"][0], method="esfs",
                    params={"n_eigenpairs": 1, "standardize": False, "random_state": 0})
    pcp_run = dict(doc["runs"][0], method="pcp", params={"score": "l2", "random_state": 0})
    doc.update(schema_version=1, runs=[esfs_run, pcp_run])
    back = S.session_from_json(json.dumps(doc))
    assert back.schema_version == S.SCHEMA_VERSION
    assert back.runs[0].params == {"n_eigenpairs": 1, "scale": "none", "random_state": 0}
    assert back.runs[1].params == {"score_norm": "l2", "random_state": 0}
    for r in back.runs:
        assert get_method(r.method).validate(r.params)


@pytest.mark.parametrize("lazy, rule", [(False, "all"), (True, "auto")])
def test_robpca_runs_saved_before_max_samples_replay_as_they_were_fitted(lazy, rule):
    """Schema 2 had no max_samples: ROBPCA then fitted every row in memory and a 100,000-row
    sample out of core; such a run opens with the rule it was fitted by, and validates."""
    ds = planted()
    doc = json.loads(S.session_to_json(S.session_from_results(ds, [run(ds)])))
    robpca_run = dict(doc["runs"][0], method="robpca", params={"n_components": 2, "random_state": 0})
    doc.update(schema_version=2, runs=[robpca_run, doc["runs"][0]])
    if doc.get("dataset") is not None:
        doc["dataset"]["lazy"] = lazy
    back = S.session_from_json(json.dumps(doc))
    assert back.schema_version == S.SCHEMA_VERSION == 3
    assert back.runs[0].params["max_samples"] == rule
    assert "max_samples" not in back.runs[1].params            # other methods are untouched
    assert get_method("robpca").validate(back.runs[0].params)
    # a value saved with the parameter is kept
    doc["runs"][0]["params"]["max_samples"] = 500
    assert S.session_from_json(json.dumps(doc)).runs[0].params["max_samples"] == 500


# -- refusing bad files --------------------------------------------------------------------------

def good_doc(tmp_path):
    ds = planted()
    s = S.session_from_results(ds, [run(ds)], selection=[1])
    return json.loads(S.session_to_json(s))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema_version=S.SCHEMA_VERSION + 1), "newer version"),
    (lambda d: d.update(schema_version="1"), "schema_version must be a positive integer"),
    (lambda d: d.pop("format"), "not a Robust Subspace Studio session"),
    (lambda d: d.pop("runs"), "missing the field 'runs'"),
    (lambda d: d["runs"][0].pop("method"), "run 1 is missing the field 'method'"),
    (lambda d: d["runs"][0].update(params=[1, 2]), "field 'params' must be dict"),
    (lambda d: d["dataset"].update(n_samples="60"), "field 'n_samples' must be int"),
    (lambda d: d.update(selection=[0, -1]), "selection must be a list of sample indices"),
    (lambda d: d.update(selection=[60]), "selection holds sample index 60"),
    (lambda d: d.update(dataset=None), "has runs but no dataset"),
])
def test_malformed_or_future_session_is_refused_with_a_clear_message(tmp_path, mutate, message):
    doc = good_doc(tmp_path)
    mutate(doc)
    path = tmp_path / "bad.rss.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(S.SessionError, match=message) as info:
        S.load_session(path)
    assert str(path) in str(info.value)


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "cut.rss.json"
    path.write_text('{"format": "robust-subspace-studio session",\n "runs": [')
    with pytest.raises(S.SessionError, match=r"not valid JSON \(line 2, column"):
        S.load_session(path)


def test_missing_binary_and_folder_sessions_are_refused(tmp_path):
    with pytest.raises(S.SessionError, match="does not exist"):
        S.load_session(tmp_path / "nope.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(S.SessionError, match="not a text"):
        S.load_session(tmp_path / "bin.json")
    with pytest.raises(S.SessionError, match="is a folder"):
        S.load_session(tmp_path)
    assert issubclass(S.SessionError, ValueError)


# -- seeds ---------------------------------------------------------------------------------------

def test_pin_seed_fixes_random_methods_only():
    pcp, pca = get_method("pcp"), get_method("pca")
    assert S.pin_seed(pcp, {})["random_state"] == S.DEFAULT_SEED
    assert S.pin_seed(pcp, {"random_state": None}, seed=9)["random_state"] == 9
    assert S.pin_seed(pcp, {"random_state": 4}, seed=9)["random_state"] == 4
    assert S.pin_seed(pca, {"n_components": 3}) == {"n_components": 3}


def test_unseeded_random_run_is_marked_not_reproducible():
    ds = planted()
    res = run(ds, "coherence-pursuit", n_components=2)
    rec = S.run_record(res)
    assert rec.seed is None and not rec.reproducible
    rec2 = S.run_record(run(ds, "coherence-pursuit", **S.pin_seed(get_method("coherence-pursuit"), {})))
    assert rec2.seed == S.DEFAULT_SEED and rec2.reproducible


# -- data verification ---------------------------------------------------------------------------

def file_session(tmp_path, fake_loader, folder="proj"):
    base = tmp_path / folder
    base.mkdir()
    X = planted().X
    data = base / "points.csv"
    write_csv(data, X)
    ds = csv_dataset(data)
    s = S.session_from_results(ds, [run(ds)], base_dir=str(base))
    S.save_session(base / "s.rss.json", s)
    return base, data


def test_file_data_is_found_verified_and_loaded_with_its_options(tmp_path, fake_loader):
    base, data = file_session(tmp_path, fake_loader)
    s = S.load_session(base / "s.rss.json")
    ds = S.resolve_dataset(s)
    assert ds.fingerprint() == file_sha256(data) == s.dataset.sha256
    assert s.dataset.relative_path == "points.csv"


def test_changed_data_file_is_detected(tmp_path, fake_loader):
    base, data = file_session(tmp_path, fake_loader)
    X = np.loadtxt(data, delimiter=",")
    X[10, 2] += 1e-9  # the smallest change still changes the bytes
    write_csv(data, X)
    s = S.load_session(base / "s.rss.json")
    with pytest.raises(S.DataMismatchError, match="has changed since the session was saved") as info:
        S.resolve_dataset(s)
    err = info.value
    assert err.path == str(data) and err.expected == s.dataset.sha256 and err.actual == file_sha256(data)
    assert "point to the original file" in str(err).lower()
    assert not fake_loader  # refused on the hash, before parsing anything


def test_moved_folder_is_found_by_relative_path(tmp_path, fake_loader):
    base, data = file_session(tmp_path, fake_loader)
    moved = tmp_path / "elsewhere"
    shutil.move(str(base), str(moved))
    s = S.load_session(moved / "s.rss.json")
    ds = S.resolve_dataset(s)
    assert ds.provenance.path == str(moved / "points.csv")


def test_missing_file_message_and_locating_it(tmp_path, fake_loader):
    base, data = file_session(tmp_path, fake_loader)
    other = tmp_path / "stash"
    other.mkdir()
    shutil.move(str(data), str(other / "renamed.csv"))
    s = S.load_session(base / "s.rss.json")
    with pytest.raises(S.DataMissingError, match="was not found") as info:
        S.resolve_dataset(s)
    assert str(data) in info.value.searched
    # The user points to the file (the window's file dialog); its hash is checked.
    ds = S.resolve_dataset(s, path=str(other / "renamed.csv"))
    assert ds.fingerprint() == s.dataset.sha256
    # A search folder holding a same-named file also works.
    shutil.copy(other / "renamed.csv", other / "points.csv")
    assert S.resolve_dataset(s, search_dirs=[str(other)]).n_samples == 60
    # Pointing to the wrong file is refused.
    write_csv(other / "wrong.csv", np.ones((3, 2)))
    with pytest.raises(S.DataMismatchError):
        S.resolve_dataset(s, path=str(other / "wrong.csv"))


def test_in_memory_data_is_stored_beside_the_session(tmp_path):
    ds = planted()
    s = S.session_from_results(ds, [run(ds)])
    S.save_session(tmp_path / "m.rss.json", s, dataset=ds)
    back = S.resolve_dataset(S.load_session(tmp_path / "m.rss.json"))
    np.testing.assert_array_equal(back.X, ds.X)
    assert back.labels.tolist() == ds.labels.tolist() and back.labels.dtype == object
    np.testing.assert_array_equal(back.outliers, ds.outliers)
    assert back.sample_ids == ds.sample_ids and back.feature_names == ds.feature_names
    os.remove(tmp_path / "m.data.npz")
    with pytest.raises(S.DataMissingError, match="which is missing"):
        S.resolve_dataset(S.load_session(tmp_path / "m.rss.json"))


def test_demo_session_resolves_and_a_changed_demo_is_refused(tmp_path):
    ds = datasets.demo("gaussian-2d")
    s = S.session_from_results(ds, [run(ds, n_components=1)])
    S.save_session(tmp_path / "d.rss.json", s)
    back = S.load_session(tmp_path / "d.rss.json")
    assert back.dataset.demo == "gaussian-2d"
    np.testing.assert_array_equal(S.resolve_dataset(back).X, ds.X)
    back.dataset.fingerprint = "0" * 64
    with pytest.raises(S.DataMismatchError, match="bundled demo 'gaussian-2d' has changed"):
        S.resolve_dataset(back)
    back.dataset.demo = "no-such-demo"
    with pytest.raises(S.DataMissingError, match="no-such-demo"):
        S.resolve_dataset(back)


# -- results: re-run or reload -------------------------------------------------------------------

def test_stored_results_reload_and_match_a_rerun(tmp_path):
    ds = planted()
    params = S.pin_seed(get_method("coherence-pursuit"), {"n_components": 2})
    results = {"pca": run(ds, "pca", n_components=3), "coherence-pursuit": run(ds, "coherence-pursuit", **params)}
    s = S.session_from_results(ds, results)
    S.save_session(tmp_path / "r.rss.json", s, results=results, dataset=ds)
    back = S.load_session(tmp_path / "r.rss.json")
    data = S.resolve_dataset(back)
    stored, notes = S.rerun(back, data)
    assert all(r.estimator is None for r in stored.values())
    assert any("reloaded" in n for n in notes)
    fresh, notes = S.rerun(back, data, use_stored=False)
    assert all(r.estimator is not None for r in fresh.values())
    for m in results:
        assert S.compare_results(stored[m], results[m], rtol=0, atol=0) == []
        assert S.compare_results(fresh[m], results[m]) == []
    # A damaged results file is not trusted: the fit is run again.
    with open(tmp_path / "r.results.npz", "ab") as fh:
        fh.write(b"tampered")
    again, notes = S.rerun(S.load_session(tmp_path / "r.rss.json"), data)
    assert all(r.estimator is not None for r in again.values())


def test_compare_results_reports_a_real_difference():
    ds = planted()
    a, b = run(ds, n_components=2), run(ds, n_components=2)
    assert S.compare_results(a, b) == []
    b.sample_scores["spe"] = b.sample_scores["spe"] * (1 + 1e-4)
    diffs = S.compare_results(a, b)
    assert len(diffs) == 1 and "spe" in diffs[0]


def test_saved_parameters_that_no_longer_fit_give_the_library_message(tmp_path):
    ds = planted()
    s = S.session_from_results(ds, [run(ds)])
    s.runs[0].params["n_components"] = 99
    with pytest.raises(ValueError,
                       match="pca: the saved parameters do not fit this data: The 'n_components' parameter"):
        S.rerun(s, ds)


# -- restoring a window state --------------------------------------------------------------------

def test_saved_closed_and_reopened_state_shows_the_same_results_and_selection(tmp_path, qapp):
    from app.state import AppState
    ds = planted()
    state = AppState()
    state.set_dataset(ds)
    for m in ("pca", "residual"):
        state.add_result(run(ds, m, n_components=2))
    state.set_current_method("residual")
    state.set_selection([4, 9, 1])
    s = S.session_from_state(state, view="contour")
    S.save_session(tmp_path / "w.rss.json", s, results=state.results, dataset=ds)
    old = state.results
    del state

    for use_stored in (True, False):     # the window's one reopen path: reopen_job, apply_to_state
        fresh = AppState()
        seen = []
        fresh.selectionChanged.connect(lambda idx: seen.append(idx))
        session, dataset, results, notes = S.reopen_job(tmp_path / "w.rss.json", use_stored=use_stored)
        view = S.apply_to_state(session, fresh, dataset, results)
        assert view == {"name": "contour"}
        assert set(fresh.results) == {"pca", "residual"}
        assert fresh.current_method == "residual"
        assert fresh.selection.tolist() == [1, 4, 9] and seen[-1].tolist() == [1, 4, 9]
        np.testing.assert_array_equal(fresh.dataset.X, ds.X)
        for m in old:
            assert S.compare_results(fresh.results[m], old[m]) == []
        how = "reloaded the saved results" if use_stored else "re-run"
        assert sorted(n.split(":")[0] for n in notes if how in n) == ["pca", "residual"]


def test_cancelled_reopening_leaves_the_state_alone(tmp_path, qapp):
    from app.state import AppState
    from robustcore import Cancelled
    ds = planted()
    s = S.session_from_results(ds, [run(ds)], selection=[2])
    S.save_session(tmp_path / "c.rss.json", s, dataset=ds)
    state = AppState()
    other = Dataset(X=np.eye(3), name="other")
    state.set_dataset(other)

    def cancel(fraction, message):
        return False
    with pytest.raises(Cancelled):
        S.reopen_job(tmp_path / "c.rss.json", progress=cancel)
    assert state.dataset is other and state.results == {} and state.selection.size == 0


@pytest.mark.slow
def test_window_session_saved_closed_and_reopened_in_a_fresh_window(tmp_path, qtbot):
    """Through the real window: Save (session API as the File menu calls it), close, open the
    session in a new window; results, parameters, current method and selection come back."""
    from app.main_window import MainWindow
    from app.settings import Settings
    ds = datasets.demo("cardio")
    w = MainWindow(settings=Settings(str(tmp_path / "a.ini")))
    qtbot.addWidget(w)
    w.set_dataset(ds)
    results = {m: run(ds, m, n_components=3) for m in ("pca", "residual")}
    for r in results.values():
        w.state.add_result(r)
    w.state.set_current_method("residual")
    w.state.set_selection([11, 3, 500])
    path = tmp_path / "cardio.rss.json"
    S.save_session(path, S.session_from_state(w.state, view="contour"), results=w.state.results,
                   dataset=w.state.dataset)
    w.close()

    w2 = MainWindow(settings=Settings(str(tmp_path / "b.ini")))
    qtbot.addWidget(w2)
    with qtbot.waitSignal(w2.datasetLoaded, timeout=60000):
        w2.open_session(str(path))
    assert w2.state.dataset.fingerprint() == ds.fingerprint()
    assert set(w2.state.results) == {"pca", "residual"}
    for m, r in results.items():
        assert S.compare_results(w2.state.results[m], r) == []
    assert w2.state.current_method == "residual"
    assert w2.state.selection.tolist() == [3, 11, 500]
    assert w2.views.current_view_name() == "contour"
    w2.close()


def test_reopen_job_asks_for_moved_data_and_the_dialog_returns_the_chosen_file(tmp_path, fake_loader,
                                                                             qtbot, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    from app import session_dialogs as D
    base, data = file_session(tmp_path, fake_loader)
    moved = tmp_path / "moved.csv"
    shutil.move(str(data), str(moved))
    need = S.reopen_job(base / "s.rss.json")
    assert isinstance(need, S.NeedsData) and isinstance(need.error, S.DataMissingError)
    box, button = D.locate_box(None, need.error)
    assert button is not None and "was not found" in box.text()
    box.deleteLater()
    # The user presses "Locate…" and picks the moved file.
    monkeypatch.setattr(QMessageBox, "exec", lambda self: 0)
    monkeypatch.setattr(QMessageBox, "clickedButton",
                        lambda self: next(b for b in self.buttons() if b.text().startswith("Locate")))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(moved), "")))
    chosen = D.ask_to_locate(None, need.error)
    assert chosen == str(moved)
    sess, ds, results, notes = S.reopen_job(base / "s.rss.json", data_path=chosen)
    assert ds.fingerprint() == sess.dataset.fingerprint and set(results) == {"pca"}
    # A demo that changed cannot be located: no button is offered.
    err = S.DataMismatchError("demo changed", ref=S.DatasetRef("d", "demo", "0", 1, 1, demo="iris"))
    box, button = D.locate_box(None, err)
    assert button is None
    box.deleteLater()


def test_sparse_in_memory_data_round_trips(tmp_path):
    import scipy.sparse as sp
    X = sp.random(30, 8, density=0.3, random_state=1, format="csr")
    ds = Dataset(X=X, name="sparse", labels=np.arange(30) % 2)
    s = S.session_from_results(ds, [], selection=[29])
    S.save_session(tmp_path / "sp.rss.json", s, dataset=ds)
    back = S.resolve_dataset(S.load_session(tmp_path / "sp.rss.json"))
    assert back.is_sparse and (back.X != ds.X).nnz == 0
    assert back.labels.dtype.kind == "i" and back.labels.tolist() == ds.labels.tolist()
    assert back.fingerprint() == ds.fingerprint()


def test_saved_settings_of_0_1_restore_renamed_parameters(tmp_path):
    from app.settings import Settings
    s = Settings(str(tmp_path / "s.ini"))
    s.set_method_params("esfs", {"standardize": False, "n_eigenpairs": 2})
    values, messages = s.restore_params("esfs", get_method("esfs").params())
    assert values == {"scale": "none", "n_eigenpairs": 2} and messages == []
