"""Smaller bounds of issue 34.10 on sessions and the command line: a replay check that cannot
compare the arrays run.json names fails; a session holds one run per method; --scheduler ""
is an error."""
import json

import numpy as np
import pytest

from app import session as S
from app.cli import main


def _csv(path, n=30):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    np.savetxt(path, X, delimiter=",", fmt="%.17g")
    return path


@pytest.fixture
def run_folder(tmp_path, capsys):
    data = _csv(tmp_path / "d.csv")
    out = tmp_path / "out"
    assert main(["run", "--data", str(data), "--method", "pca", "--out", str(out), "-q"]) == 0
    capsys.readouterr()
    return out


def test_replay_check_fails_when_the_named_arrays_file_is_gone(run_folder, tmp_path, capsys):
    stored = json.loads((run_folder / "run.json").read_text())["runs"][0]["stored"]
    assert stored["file"] == "pca-arrays.npz" and len(stored["sha256"]) == 64
    data = ["--data", str(tmp_path / "d.csv")]
    assert main(["replay", str(run_folder / "run.json"), *data, "--check", "--out", str(tmp_path / "r1"), "-q"]) == 0
    capsys.readouterr()
    (run_folder / "pca-arrays.npz").unlink()
    code = main(["replay", str(run_folder / "run.json"), *data, "--check", "--out", str(tmp_path / "r2"), "-q"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the exported arrays 'pca-arrays.npz' that run.json names (with their sha256) are missing" in err
    assert "no arrays were saved to compare" not in err


@pytest.mark.slow
def test_a_session_with_thousands_of_runs_or_a_repeated_method_is_refused(run_folder):
    doc = json.loads((run_folder / "run.json").read_text())
    run = doc["runs"][0]
    for runs, message in (([run] * 20_000, "holds 20,000 runs; a session holds one run per method, 64 at most"),
                          ([run, run], "run 2 repeats the method 'pca' of run 1")):
        (run_folder / "run.json").write_text(json.dumps({**doc, "runs": runs}))
        with pytest.raises(S.SessionError, match=message):
            S.load_session(run_folder / "run.json")


@pytest.mark.parametrize("address,message", [("", "'' is not a scheduler address"),
                                             ("tcp://" + "h" * 300 + ":8786", "300 characters")])
def test_a_bad_scheduler_address_is_a_usage_error_not_a_run_in_memory(tmp_path, capsys, address, message):
    data = _csv(tmp_path / "d.csv")
    code = main(["run", "--data", str(data), "--method", "pca", "--scheduler", address,
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "argument --scheduler: " in err and message in err and "idna" not in err
    assert not (tmp_path / "o").exists()


BIG = "x" * 100_000


@pytest.mark.parametrize("where", ["method", "option name", "parameter name", "parameter value",
                                   "option value", "stored data name"])
def test_a_100_kb_name_or_value_in_a_session_is_cut_in_its_error(run_folder, tmp_path, capsys, where):
    doc = json.loads((run_folder / "run.json").read_text())
    run, ds = doc["runs"][0], doc["dataset"]
    {"method": lambda: run.update(method=BIG),
     "option name": lambda: ds["options"].update({BIG: 1}),
     "parameter name": lambda: run["params"].update({BIG: 1}),
     "parameter value": lambda: run["params"].update(n_components=BIG),
     "option value": lambda: ds["options"].update(delimiter=BIG),
     "stored data name": lambda: ds.update(snapshot=BIG, path=None, relative_path=None)}[where]()
    (run_folder / "run.json").write_text(json.dumps(doc))
    code = main(["replay", str(run_folder / "run.json"), "--data", str(tmp_path / "d.csv"),
                 "--out", str(tmp_path / "r"), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and len(err) < 600, err[:300]
    assert ("x" * 78 in err) or ("100,000 characters long" in err)
