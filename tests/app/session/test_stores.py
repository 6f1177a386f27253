"""Sessions with results too large for memory: the Zarr stores are saved beside the session,
reopened lazily and verified, and a missing, damaged or hostile store never gives wrong data."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")

from app import session as S  # noqa: E402
from app.session import stores  # noqa: E402


def _table(folder, n=3000, d=6, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) @ rng.standard_normal((2, d)) + 0.2 * rng.standard_normal((n, d))
    X[:40] += 6.0
    np.save(folder / "t.npy", X)
    return folder / "t.npy"


def _fit_out_of_core(data_path, work, method="pca", **params):
    """Open ``data_path`` out of core and fit with a memory budget so small that the per-sample
    results go to a Zarr store in ``work`` (the window's working folder)."""
    from robustcore.bigdata import open_lazy, settings
    from robustcore.methods import get_method
    ds = open_lazy(data_path)
    m = get_method(method)
    with settings(store_dir=str(work), memory_budget=2000):
        res = m.run(ds, S.pin_seed(m, {"n_components": 2, **params}))
    return ds, res


def _values(res):
    return {f"{k} {n}": np.asarray(v[:]) for k in stores.RESULT_KINDS for n, v in getattr(res, k).items()}


def _no_fit(monkeypatch):
    from robustcore import methods

    def refuse(*a, **k):
        raise AssertionError("a fit ran, but the saved results should have been reloaded")
    monkeypatch.setattr(methods.Method, "run", refuse)


@pytest.fixture
def saved(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    data = _table(project)
    work = tmp_path / "working-folder"
    ds, res = _fit_out_of_core(data, work)
    assert not isinstance(res.sample_scores["spe"], np.ndarray), "the fixture must put results on disk"
    before = _values(res)
    path = project / "work.rss.json"
    written = S.save_session(path, S.session_from_results(ds, {"pca": res}), results={"pca": res})
    ds.close()
    return project, path, work, before, res, written


@pytest.mark.slow
def test_saved_then_reopened_without_the_working_folder_and_without_a_fit(saved, monkeypatch):
    project, path, work, before, res, written = saved
    folder = project / "work.lazy"
    assert str(folder) in written and folder.is_dir()
    rec = json.loads(path.read_text())["runs"][0]["stored"]["out_of_core"]
    assert rec["folder"] == "work.lazy" and {f["name"] for f in rec["fields"]} >= {"spe", "t2", "outlier"}
    # (PCA out of core writes two stores: SPE and projections in the pass that calibrates the
    # limits, the flags derived from them afterwards)
    assert set(rec["stores"]) == set(os.listdir(folder))
    assert all((folder / s / "zarr.json").is_file() for s in rec["stores"])
    assert not any(p.name.startswith(".") for p in folder.iterdir())
    # The window's results now read from the session's folder, not the working one.
    assert os.path.dirname(stores.zarr_location(res.sample_scores["spe"])[0]) == str(folder)
    shutil.rmtree(work)   # e.g. after a reboot
    _no_fit(monkeypatch)
    sess, ds, results, notes = S.reopen_job(path)
    again = results["pca"]
    assert "pca: reloaded the saved results" in notes and again.estimator is None
    spe = again.sample_scores["spe"]
    assert not isinstance(spe, np.ndarray)   # opened lazily, read by slices
    assert spe[5:9].shape == (4,)
    after = _values(again)
    assert set(after) == set(before)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


@pytest.mark.slow
def test_session_folder_copied_elsewhere_reopens_the_same(saved, tmp_path, monkeypatch):
    project, path, work, before, _, _ = saved
    moved = tmp_path / "other-machine" / "project"
    shutil.copytree(project, moved)
    shutil.rmtree(project)
    shutil.rmtree(work)
    os.utime(moved / "t.npy", (1e9, 1e9))   # copied without keeping times: another fingerprint
    _no_fit(monkeypatch)
    sess, ds, results, notes = S.reopen_job(moved / "work.rss.json")
    assert ds.fingerprint() != sess.dataset.fingerprint   # recognised by its identity instead
    assert "pca: reloaded the saved results" in notes
    assert results["pca"].data_fingerprint == ds.fingerprint()
    for k, v in _values(results["pca"]).items():
        np.testing.assert_array_equal(v, before[k], err_msg=k)


@pytest.mark.slow
def test_data_changed_under_the_same_size_and_time_is_refused(saved):
    project, path, _, _, _, _ = saved
    data = project / "t.npy"
    st = os.stat(data)
    raw = bytearray(data.read_bytes())
    raw[-8:] = np.float64(123.0).tobytes()   # the last value, in the file's last MiB
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    job = S.reopen_job(path)
    assert isinstance(job, S.NeedsData) and isinstance(job.error, S.DataMismatchError)
    assert "its size and its first and last 1 MiB (the file is not hashed whole) differ" in str(job.error)


@pytest.mark.slow
def test_saving_again_keeps_the_stores_and_save_as_copies_them(saved, tmp_path):
    project, path, _, before, res, _ = saved
    folder = project / "work.lazy"
    names = sorted(os.listdir(folder))
    inodes = [os.stat(folder / s / "zarr.json").st_ino for s in names]
    sess = S.session_from_results(S.reopen_job(path)[1], {"pca": res})
    S.save_session(path, sess, results={"pca": res})   # Save: the same path
    assert sorted(os.listdir(folder)) == names
    assert [os.stat(folder / s / "zarr.json").st_ino for s in names] == inodes
    other = tmp_path / "elsewhere"
    other.mkdir()
    S.save_session(other / "copy.rss.json", sess, results={"pca": res})   # Save as
    assert sorted(os.listdir(other / "copy.lazy")) == names
    shutil.rmtree(folder)   # the first session's stores are gone: the copy has its own
    _, _, results, notes = S.reopen_job(other / "copy.rss.json", data_path=str(project / "t.npy"))
    assert "pca: reloaded the saved results" in notes
    np.testing.assert_array_equal(np.asarray(results["pca"].sample_scores["spe"][:]), before["sample_scores spe"])


def _store_dir(project):
    """The saved store that holds the SPE."""
    folder = project / "work.lazy"
    (store,) = [s for s in os.listdir(folder) if (folder / s / "spe").is_dir()]
    return folder / store


@pytest.mark.slow
@pytest.mark.parametrize("damage,said", [
    ("missing", "is missing"),
    ("chunk", "is damaged or changed"),
    ("truncated", "is damaged or changed"),
    ("link", "is a link"),
])
def test_missing_or_damaged_store_falls_back_to_a_fit_with_a_note(saved, damage, said):
    project, path, _, before, _, _ = saved
    store = _store_dir(project)
    chunks = sorted(p for p in store.rglob("*") if p.is_file() and p.name != "zarr.json")
    if damage == "missing":
        shutil.rmtree(store)
    elif damage == "chunk":
        chunks[0].unlink()   # zarr would read the missing chunk back as zeros
    elif damage == "truncated":
        chunks[-1].write_bytes(chunks[-1].read_bytes()[:-3])
    else:
        chunks[0].unlink()
        os.symlink("/etc/hostname", chunks[0])
    _, _, results, notes = S.reopen_job(path)
    note = next(n for n in notes if "saved results" in n)
    assert said in note and "fitted again" in note and store.name in note
    assert "pca: re-run" in " ".join(notes)
    np.testing.assert_allclose(np.asarray(results["pca"].sample_scores["spe"][:]), before["sample_scores spe"],
                               rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("field,value,said", [
    ("folder", "../../etc", "not a plain file name"),
    ("folder", "/etc", "not a plain file name"),
    ("store", "../outside.zarr", "not a plain file name"),
    ("array", "../../x", "not a plain file name"),
    ("dtype", "O", "not a numeric type"),
    ("shape", [-1], "integers >= 0"),
])
def test_hostile_store_names_refuse_the_session(saved, field, value, said):
    _, path, _, _, _, _ = saved
    doc = json.loads(path.read_text())
    ooc = doc["runs"][0]["stored"]["out_of_core"]
    if field == "folder":
        ooc["folder"] = value
    elif field == "store":
        name = next(iter(ooc["stores"]))
        ooc["stores"] = {value: ooc["stores"].pop(name), **ooc["stores"]}
        for f in ooc["fields"]:
            if f["store"] == name:
                f["store"] = value
    else:
        ooc["fields"][0][field] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(S.SessionError, match="out_of_core") as err:
        S.load_session(path)
    assert said in str(err.value)


@pytest.mark.slow
def test_stores_folder_linked_outside_is_refused(saved, tmp_path):
    project, path, _, _, _, _ = saved
    outside = tmp_path / "outside"
    shutil.move(str(project / "work.lazy"), outside)
    os.symlink(outside, project / "work.lazy")
    _, _, results, notes = S.reopen_job(path)
    note = next(n for n in notes if "saved results" in n)
    assert "not a folder inside the session's folder" in note and "pca: re-run" in " ".join(notes)


@pytest.mark.slow
def test_interrupted_copy_leaves_no_store_a_reopen_would_trust(saved, tmp_path, monkeypatch):
    project, path, _, _, res, _ = saved
    target = tmp_path / "target"
    target.mkdir()
    calls = {"n": 0}
    real = shutil.copy2

    def fail_after_one(src, dst, **kw):
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(28, "No space left on device")
        return real(src, dst, **kw)
    monkeypatch.setattr(os, "link", lambda *a: (_ for _ in ()).throw(OSError(18, "cross-device link")))
    monkeypatch.setattr(shutil, "copy2", fail_after_one)
    sess = S.session_from_results(S.reopen_job(path)[1], {"pca": res})
    with pytest.raises(OSError, match="No space"):
        S.save_session(target / "t.rss.json", sess, results={"pca": res})
    assert not (target / "t.rss.json").exists()
    assert os.listdir(target / "t.lazy") == []   # the partial copy was removed


@pytest.mark.slow
@pytest.mark.parametrize("edit,said", [
    ({"data_type": "string"}, "data type 'string'"),
    ({"codecs": [{"name": "bytes"}, {"name": "numcodecs.pickle"}]}, "numcodecs.pickle"),
])
def test_store_asking_for_other_than_numbers_is_refused_before_zarr_reads_it(saved, edit, said):
    """Older Zarr versions unpickle chunks whose metadata ask for it: such metadata in a store a
    session names is refused (the manifest is made to match, as a hostile author would)."""
    project, path, _, _, _, _ = saved
    _edit_spe(project, path, **edit)
    _, _, results, notes = S.reopen_job(path)
    note = next(n for n in notes if "saved results" in n)
    assert said in note and "a results store holds numbers" in note and "pca: re-run" in " ".join(notes)


def test_zarr_2_filters_and_object_dtypes_are_refused(tmp_path):
    bad = {".zarray": {"zarr_format": 2, "dtype": "|O", "filters": [{"id": "pickle"}], "compressor": None,
                       "shape": [4], "chunks": [4], "order": "C", "fill_value": None}}
    store = tmp_path / "s.zarr"
    (store / "x").mkdir(parents=True)
    (store / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (store / "x" / ".zarray").write_text(json.dumps(bad[".zarray"]))
    (store / "x" / ".zattrs").write_text(json.dumps({"dtype": "anything: attributes are not metadata"}))
    info = stores.store_manifest(str(store))
    with pytest.raises(stores.StoreError, match="filters .*pickle"):
        stores.open_store(str(tmp_path), "s.zarr", info)


@pytest.mark.slow
def test_saving_again_after_a_new_fit_removes_only_the_replaced_store(saved, tmp_path):
    project, path, _, _, _, _ = saved
    first = set(os.listdir(project / "work.lazy"))
    ds, new = _fit_out_of_core(project / "t.npy", tmp_path / "work2", n_components=3)
    stray = project / "work.lazy" / "pca-written-after-save.zarr"   # e.g. a fit still writing there
    shutil.copytree(_store_dir(project), stray)
    S.save_session(path, S.session_from_results(ds, {"pca": new}), results={"pca": new})
    names = set(os.listdir(project / "work.lazy"))
    assert not first & names and stray.name in names and len(names) == len(first) + 1
    _, _, results, notes = S.reopen_job(path)
    assert "pca: reloaded the saved results" in notes and results["pca"].params["n_components"] == 3
    np.testing.assert_array_equal(np.asarray(results["pca"].sample_scores["spe"][:]),
                                  np.asarray(new.sample_scores["spe"][:]))


@pytest.mark.slow
def test_a_reader_that_does_not_know_stores_fits_again(saved):
    """"complete" is false for a run with stores: a version that does not read them (and ignores
    the fields it does not know) fits the run again instead of showing it without them."""
    _, path, _, _, _, _ = saved
    doc = json.loads(path.read_text())
    st = doc["runs"][0]["stored"]
    assert st["complete"] is False and st["skipped"] == [] and st["out_of_core"]
    del st["out_of_core"], st["skipped"]   # what an older reader sees
    path.write_text(json.dumps(doc))
    _, _, _, notes = S.reopen_job(path)
    assert "pca: reloaded the saved results" not in notes and "pca: re-run" in " ".join(notes)


@pytest.mark.slow
def test_store_whose_chunk_would_take_terabytes_is_refused(saved):
    project, path, _, _, _, _ = saved
    # A few bytes of zstd could ask for this much memory when one frame is read.
    _edit_spe(project, path, shape=[10 ** 12],
              chunk_grid={"name": "regular", "configuration": {"chunk_shape": [10 ** 12]}})
    _, _, results, notes = S.reopen_job(path)
    note = next(n for n in notes if "saved results" in n)
    assert "one chunk would take 8,000,000,000,000 bytes" in note and "pca: re-run" in " ".join(notes)


def _edit_spe(project, path, **meta):
    """Edit the saved store's 'spe' metadata as a hostile author would: manifest and record made to match."""
    store = _store_dir(project)
    f = store / "spe" / "zarr.json"
    doc = json.loads(f.read_text())
    doc.update(meta)
    f.write_text(json.dumps(doc))
    sess = json.loads(path.read_text())
    ooc = sess["runs"][0]["stored"]["out_of_core"]
    ooc["stores"][store.name].update(stores.store_manifest(str(store)))
    next(x for x in ooc["fields"] if x["array"] == "spe")["shape"] = doc["shape"]
    path.write_text(json.dumps(sess))


@pytest.mark.slow
def test_per_sample_results_of_another_length_are_refused(saved):
    project, path, _, _, _, _ = saved
    _edit_spe(project, path, shape=[10], chunk_grid={"name": "regular", "configuration": {"chunk_shape": [10]}})
    _, _, results, notes = S.reopen_job(path)
    note = next(n for n in notes if "saved results" in n)
    assert "sample_scores spe holds 10 values, the data set has 3000 samples" in note
    assert results["pca"].sample_scores["spe"].shape == (3000,)


@pytest.mark.slow
def test_a_run_fitted_again_out_of_core_writes_beside_the_session(saved):
    """The window passes its memory budget and the session's stores folder: a run fitted again
    (its store was lost) keeps its large results beside the session, where Save finds them."""
    project, path, _, before, _, _ = saved
    shutil.rmtree(_store_dir(project))
    folder = project / "work.lazy"
    _, ds, results, notes = S.reopen_job(path, bigdata={"store_dir": str(folder), "memory_budget": 2000})
    assert "pca: re-run" in " ".join(notes)
    spe = results["pca"].sample_scores["spe"]
    assert stores.zarr_location(spe)[0].startswith(str(folder))
    np.testing.assert_allclose(np.asarray(spe[:]), before["sample_scores spe"], rtol=1e-10)
    S.save_session(path, S.session_from_results(ds, results), results=results)   # Save: referenced in place
    used = {os.path.basename(stores.zarr_location(v)[0]) for k in stores.RESULT_KINDS
            for v in getattr(results["pca"], k).values() if stores.zarr_location(v) is not None}
    assert os.path.basename(stores.zarr_location(spe)[0]) in used
    assert set(os.listdir(folder)) == used           # the replaced stores are gone
