"""A session never raises a limit (issue 34, point 1): the loader limits its data are opened
with are the user's (their --option on replay, or the policy's defaults), never above them from
the session file; a larger value is lowered and the user is told."""
import gzip
import hashlib
import json

import numpy as np
import pytest

from app import session as S
from app.cli import main
from app.session.limits import LIMIT_NAMES, cap_limits, user_limits
from robustcore import datasets
from robustcore.datasets._limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_FEATURES, LIMIT_OPTIONS


def _session_beside(folder, data_name, data: bytes, loader: str, options: dict, n=(1, 1)):
    """A run.json naming ``data_name`` beside it, honestly: the data's real sha256."""
    (folder / data_name).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    doc = {"format": S.FORMAT_NAME, "schema_version": S.SCHEMA_VERSION,
           "dataset": {"name": "data", "loader": loader, "fingerprint": sha, "n_samples": n[0],
                       "n_features": n[1], "options": options, "path": str(folder / data_name),
                       "relative_path": data_name, "sha256": sha},
           "runs": [{"method": "pca", "params": {}, "data_fingerprint": sha}]}
    path = folder / "run.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_limits_are_the_policys_one_declaration():
    assert LIMIT_NAMES == tuple(p.name for p in LIMIT_OPTIONS) == ("max_features", "max_bytes")
    # every loader declares them, so a session may record them as ordinary options
    for name, loader in datasets.LOADERS.items():
        assert set(LIMIT_NAMES) <= {p.name for p in loader.options}, name
    assert user_limits() == {"max_features": DEFAULT_MAX_FEATURES, "max_bytes": DEFAULT_MAX_BYTES}


def test_a_larger_limit_is_lowered_with_a_note_and_a_smaller_one_kept():
    given = {"max_bytes": 1000}
    out, notes = cap_limits({"max_bytes": 10 ** 13, "max_features": 5, "delimiter": ","}, given,
                            how="pass --option {name}=N")
    assert out == {"max_bytes": 1000, "max_features": 5, "delimiter": ","}
    assert len(notes) == 1 and "max_bytes=10,000,000,000,000" in notes[0] and "max_bytes=1000 is used" in notes[0]
    assert notes[0].endswith("(pass --option max_bytes=N)")
    assert cap_limits({"max_bytes": 10}, given) == ({"max_bytes": 10}, [])
    assert cap_limits({}, given) == ({"max_bytes": 1000}, [])   # the user's own, where the session names none
    assert cap_limits({}) == ({}, [])
    with pytest.raises(ValueError, match="not a limit option"):
        user_limits({"delimiter": ";"})


@pytest.mark.slow
def test_replay_refuses_a_session_that_lifts_max_bytes_as_the_default_policy_does(tmp_path, capsys):
    # 16 Mi lines of "1,2\r\n": 80 MB of text that the default policy refuses ("needs about 4 GB")
    data = gzip.compress(b"1,2\r\n" * (16 * 1024 * 1024), 6)
    path = _session_beside(tmp_path, "data.csv.gz", data, "csv", {"max_bytes": 10 ** 13}, (16 * 1024 * 1024, 2))
    code = main(["replay", str(path), "--check", "--out", str(tmp_path / "out"), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "needs about 4.0 GB of memory, more than the limit max_bytes=4294967296" in err
    assert "the session asks for max_bytes=10,000,000,000,000" in err
    assert "pass --option max_bytes=N to replay" in err
    assert not (tmp_path / "out").exists()


def test_replay_takes_the_users_own_limit_from_the_command_line(tmp_path, capsys):
    X = np.arange(40.0).reshape(20, 2)
    text = "\n".join(f"{a:g},{b:g}" for a, b in X).encode()
    path = _session_beside(tmp_path, "d.csv", text, "csv", {"max_bytes": 10 ** 13}, (20, 2))
    code = main(["replay", str(path), "--option", "max_bytes=100", "--out", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "more than the limit max_bytes=100 " in err
    code = main(["replay", str(path), "--option", "delimiter=;", "--out", str(tmp_path / "o"), "-q"])
    assert code == 2 and "takes only its limits (max_features, max_bytes)" in capsys.readouterr().err
    # within the user's limit the session's larger value is lowered, said, and the replay runs
    code = main(["replay", str(path), "--out", str(tmp_path / "o")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "the session asks for max_bytes=10,000,000,000,000" in out.err
    saved = json.loads((tmp_path / "o" / "run.json").read_text())
    assert saved["dataset"]["options"]["max_bytes"] == DEFAULT_MAX_BYTES


def test_window_reopen_lowers_the_session_limits_and_says_so(tmp_path):
    text = b"a,b\n" + b"".join(b"%d,%d\n" % (i, 3 * i % 7) for i in range(30))
    path = _session_beside(tmp_path, "d.csv", text, "csv", {"max_features": 2 ** 40}, (30, 2))
    job = S.reopen_job(path)
    assert not isinstance(job, S.NeedsData), job
    session, dataset, results, notes = job
    assert dataset.provenance.options["max_features"] == DEFAULT_MAX_FEATURES
    assert any("the session asks for max_features=1,099,511,627,776" in n for n in notes)
    # the user's own (lower) limit refuses the data, naming the lowered value
    job = S.reopen_job(path, limits={"max_bytes": 64})
    assert isinstance(job, S.NeedsData)
    assert "more than the limit max_bytes=64 " in str(job.error)
