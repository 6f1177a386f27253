"""Sessions of data opened out of core notice a change anywhere in the data: the content's digest
is recorded from the fit's own pass, and reopening compares it (by the re-fit's first pass, or by
a pass of its own when the saved results are reloaded); a copy of the data elsewhere is accepted."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("dask")

from app import session as S  # noqa: E402
from app.session.identity import describe_check  # noqa: E402
from robustcore.bigdata import _tables  # noqa: E402

#: New digests: xxh3 with xxhash installed (the big and test extras), else sha256.
FMT, HASH = (("xxh3-blocks", "xxh3_128") if importlib.util.find_spec("xxhash") else ("sha256-blocks", "sha256"))


def _save(folder, stored: bool, n=40000, d=8):
    """A 2.5 MB table (more than the first and last MiB the cheap identity hashes), fitted out of
    core in blocks of 5000 rows, and its session saved (with its results, or without)."""
    from robustcore.bigdata import open_lazy
    from robustcore.methods import get_method
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, 2)) @ rng.standard_normal((2, d)) + 0.1 * rng.standard_normal((n, d))
    np.save(folder / "t.npy", X)
    ds = open_lazy(folder / "t.npy", chunk_rows=5000)
    m = get_method("pca")
    res = m.run(ds, S.pin_seed(m, {"n_components": 2}))
    path = folder / "work.rss.json"
    S.save_session(path, S.session_from_results(ds, {"pca": res}), results={"pca": res} if stored else None)
    ds.close()
    return path, X


def _change_the_middle(data):
    """One value in the middle of the file, keeping its size and modification time: neither the
    cheap identity (size, first and last MiB) nor the fingerprint (sizes, times) can see it."""
    st = os.stat(data)
    raw = bytearray(data.read_bytes())
    at = len(raw) // 2 - len(raw) // 2 % 8
    raw[at:at + 8] = np.float64(42.0).tobytes()
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.fixture
def reads(monkeypatch):
    count = {"n": 0}
    real = _tables._read_block

    def read(*a):
        count["n"] += 1
        return real(*a)
    monkeypatch.setattr(_tables, "_read_block", read)
    return count


@pytest.mark.slow
def test_the_digest_is_recorded_and_described(tmp_path):
    path, X = _save(tmp_path, stored=True)
    ref = S.load_session(path).dataset
    assert ref.digest.startswith(f"{FMT}:5000:40000x8:<f8:") and ref.identity.startswith("edges-sha256:")
    assert describe_check(ref) == (f"its size and its first and last 1 MiB and the {HASH} of every value of the "
                                   "table (40,000 x 8, float64), hashed in blocks of 5,000 rows in the pass that "
                                   "read it")


@pytest.mark.slow
def test_a_change_in_the_middle_is_found_when_the_results_are_reloaded(tmp_path, reads):
    path, X = _save(tmp_path, stored=True)
    reads["n"] = 0
    sess, ds, results, notes = S.reopen_job(path)      # unchanged: reloaded, then verified in one pass
    assert "pca: reloaded the saved results" in notes
    assert any(n.startswith(f"verified the data: the {HASH} of every value") for n in notes)
    assert reads["n"] == 8     # 40000 rows in blocks of 5000: read once
    _change_the_middle(tmp_path / "t.npy")
    job = S.reopen_job(path)
    assert isinstance(job, S.NeedsData) and isinstance(job.error, S.DataMismatchError)
    msg = str(job.error)
    assert f"the data changed since the session was saved: the {HASH} of every value of the table" in msg
    assert "Point to the original data" in msg


def test_a_change_in_the_middle_stops_a_refit_after_its_first_pass(tmp_path, reads):
    path, X = _save(tmp_path, stored=False)
    _change_the_middle(tmp_path / "t.npy")
    reads["n"] = 0
    job = S.reopen_job(path)
    assert isinstance(job, S.NeedsData) and "the data changed since the session was saved" in str(job.error)
    # the fit's first pass (which hashed it; 8 blocks), and the block holding the first row,
    # which the column moments are taken relative to: nothing after
    assert reads["n"] <= 9


def _record_digest(path, digest):
    doc = json.loads(path.read_text())
    doc["dataset"]["digest"] = digest
    path.write_text(json.dumps(doc))


@pytest.mark.slow
@pytest.mark.parametrize("stored", [True, False])
def test_a_session_with_a_sha256_digest_is_still_verified_with_sha256(tmp_path, stored):
    """A session saved before xxh3 digests (or where xxhash was missing): its sha256 digest,
    computed here with hashlib, is checked in sha256 whatever is installed, and still sees a change."""
    path, X = _save(tmp_path, stored=stored)
    h = hashlib.sha256(b"robust-studio table 40000x8 <f8 5000\n")
    for s in range(0, len(X), 5000):
        h.update(hashlib.sha256(X[s:s + 5000].tobytes()).digest())
    _record_digest(path, f"sha256-blocks:5000:40000x8:<f8:{h.hexdigest()}")
    sess, ds, results, notes = S.reopen_job(path)
    assert ds.content_digest == sess.dataset.digest
    if stored:
        assert "verified the data: the sha256 of every value of the table (40,000 x 8, float64), hashed in " \
               "blocks of 5,000 rows in the pass that read it" in notes
    else:
        assert "pca: re-run" in " ".join(notes)
    ds.close()
    _change_the_middle(tmp_path / "t.npy")
    job = S.reopen_job(path)
    assert isinstance(job, S.NeedsData) and isinstance(job.error, S.DataMismatchError)
    assert "the data changed since the session was saved: the sha256 of every value of the table" in str(job.error)


def test_an_xxh3_session_without_xxhash_says_to_install_it(tmp_path, monkeypatch):
    path, X = _save(tmp_path, stored=True)
    _record_digest(path, "xxh3-blocks:5000:40000x8:<f8:" + "5" * 32)
    monkeypatch.setitem(sys.modules, "xxhash", None)
    with pytest.raises(S.SessionError) as err:
        S.reopen_job(path)
    assert not isinstance(err.value, S.DataMismatchError)     # not the data's fault: another file won't do
    msg = str(err.value)
    assert "\n" not in msg and msg.endswith("cannot be checked against the session: a digest in xxh3-blocks "
                                             "format needs the xxhash package: pip install xxhash (or the "
                                             "project's extra: pip install -e \".[big]\")")


def test_a_copy_elsewhere_reopens(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    path, X = _save(project, stored=True)
    moved = tmp_path / "elsewhere"
    shutil.copytree(project, moved)
    os.utime(moved / "t.npy", (1e9, 1e9))
    sess, ds, results, notes = S.reopen_job(moved / "work.rss.json")
    assert ds.content_digest == sess.dataset.digest
    assert "pca: reloaded the saved results" in notes


def test_a_video_session_checks_its_stream_when_it_is_opened(tmp_path):
    av = pytest.importorskip("av")
    from robustcore.bigdata import open_lazy
    from robustcore.methods import get_method
    p = tmp_path / "v.avi"
    with av.open(str(p), "w") as c:
        s = c.add_stream("rawvideo", rate=10)
        s.width, s.height, s.pix_fmt = 16, 8, "gray"
        for i in range(12):
            for pk in s.encode(av.VideoFrame.from_ndarray(np.full((8, 16), 20 * i, np.uint8), format="gray")):
                c.mux(pk)
        for pk in s.encode():
            c.mux(pk)
    ds = open_lazy(p)
    m = get_method("online-rpca")
    res = m.run(ds, S.pin_seed(m, {"batch_size": 4}))
    S.save_session(tmp_path / "v.rss.json", S.session_from_results(ds, {"online-rpca": res}))
    ds.close()
    # This small file is hashed whole by the cheap identity too: drop it, to see the digest at work.
    doc = json.loads((tmp_path / "v.rss.json").read_text())
    assert doc["dataset"].pop("identity").startswith("edges-sha256:")
    (tmp_path / "v.rss.json").write_text(json.dumps(doc))
    assert S.load_session(tmp_path / "v.rss.json").dataset.digest.startswith("sha256-packets:12:")
    raw = bytearray(p.read_bytes())
    raw[raw.index(bytes([100] * 16))] = 101     # a pixel of the sixth frame
    p.write_bytes(bytes(raw))
    job = S.reopen_job(tmp_path / "v.rss.json")
    assert isinstance(job, S.NeedsData)
    assert ("the data changed since the session was saved: the sha256 of the video stream's 12 compressed"
            in str(job.error))
