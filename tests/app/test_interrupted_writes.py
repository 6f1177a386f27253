"""Interrupted outputs say so, and leave no temporary file (issue 34.10, app.writing): a run
folder, a results export and a folder of PNG frames hold WHAT.INCOMPLETE.txt from their first
file to their last; SIGTERM during an export removes its temporaries (the MP4's too); the next
export into a folder removes those an earlier, killed one left there.

The processes here are stopped at a known point (a writer patched to block at frame k or before
a file, after touching a 'ready' file), then killed: nothing depends on timing."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from app.writing import MARKER_SUFFIX, TEMP_PREFIX, incomplete_sets, sweep_stale

ROOT = Path(__file__).resolve().parents[2]
posix = pytest.mark.skipif(os.name != "posix", reason="signals to a child process (POSIX)")
WAIT = 120   # a hang bound, not a timing


def start(code: str, *args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], cwd=str(ROOT),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_when_ready(proc, ready: Path, sig) -> int:
    """Wait until the child touched ``ready`` (it is blocked where the test wants it), then
    send ``sig``; the child's exit status."""
    limit = time.monotonic() + WAIT
    while not ready.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the child ended before it was ready ({proc.returncode}):\n{out}\n{err}")
        if time.monotonic() > limit:
            proc.kill()
            pytest.fail("the child never got ready")
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.communicate(timeout=WAIT)
    return proc.returncode


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.startswith((TEMP_PREFIX, ".tmp-")) or p.name.endswith(".tmp")]


# The children's data: eight 12 x 16 frames, a still background and a square moving over it.
VIDEO = """
import sys, time, threading
import numpy as np
from robustcore.datasets import Dataset
from robustcore.methods import get_method
rng = np.random.default_rng(0)
bg = rng.uniform(40, 160, (12, 16))
frames = []
for t in range(8):
    f = bg.copy(); f[3:6, 2 * t:2 * t + 3] = 250.0; frames.append(f.ravel())
ds = Dataset(X=np.array(frames), name="square", image_shape=(12, 16))
res = get_method("pcp").run(ds, {})
"""

# Block at frame k of the composition, after touching the ready file.
BLOCK_AT_FRAME = """
import app.video as V
real, seen = V.compose_frame, [0]
def compose(*a, **k):
    seen[0] += 1
    if seen[0] == K:
        open(READY, "w").close()
        time.sleep(600)
    return real(*a, **k)
V.compose_frame = compose
"""

# As the window does: the export on a worker thread, the main thread idle in its event loop
# (here a sleep loop in place of Qt's timer tick), the SIGTERM cleanup installed.
WINDOW_EXPORT = VIDEO + """
OUT, READY, K = sys.argv[1], sys.argv[2], int(sys.argv[3])
""" + BLOCK_AT_FRAME + """
from app.writing import install_termination_cleanup
install_termination_cleanup()
threading.Thread(target=V.export_video, args=(OUT, ds, res), daemon=True).start()
while True:
    time.sleep(0.1)
"""


@pytest.mark.slow
@posix
def test_sigterm_during_a_png_export_leaves_a_folder_that_says_it_is_incomplete(tmp_path):
    out, ready = tmp_path / "frames", tmp_path / "ready"
    code = kill_when_ready(start(WINDOW_EXPORT, out, ready, 6), ready, signal.SIGTERM)
    assert code == -signal.SIGTERM
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == [f"frame_{k:04d}.png" for k in range(1, 6)]     # 5 of 8: looks finished without the marker
    assert incomplete_sets(out) == ["frames"]
    assert "the writing was interrupted" in (out / f"frames{MARKER_SUFFIX}").read_text()
    assert temporaries(tmp_path) == []


@pytest.mark.slow
@posix
def test_sigterm_during_an_mp4_export_removes_its_temporary(tmp_path):
    pytest.importorskip("av")
    folder = tmp_path / "videos"
    folder.mkdir()
    out, ready = folder / "d.mp4", tmp_path / "ready"
    proc = start(WINDOW_EXPORT, out, ready, 5)
    limit = time.monotonic() + WAIT
    while not ready.exists() and proc.poll() is None and time.monotonic() < limit:
        time.sleep(0.05)
    assert len([n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX) and n.endswith(".mp4")]) == 1
    assert kill_when_ready(proc, ready, signal.SIGTERM) == -signal.SIGTERM
    assert os.listdir(folder) == []     # no d.mp4, no hidden .rss-tmp-*.mp4


RUN = """
import sys, time
OUT, READY, DATA, HOW = sys.argv[1:5]
from app.cli import _outputs
import app.export as E
if HOW == "between-methods":          # block after the first method's files
    real, calls = _outputs.write_result, [0]
    def write_result(*a, **k):
        calls[0] += 1
        if calls[0] == 2:
            open(READY, "w").close()
            time.sleep(600)
        return real(*a, **k)
    _outputs.write_result = write_result
else:                                 # block in a result's files: after its samples, before its arrays
    suffix, make, mode = E._KINDS["arrays"]
    def arrays(*a, **k):
        open(READY, "w").close()
        time.sleep(600)
    E._KINDS["arrays"] = (suffix, arrays, mode)
from app.cli import main
sys.exit(main(["run", "--data", DATA, "--method", "pca", "--method", "pcp", "--out", OUT, "-q"]))
"""


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    p = tmp_path / "d.csv"
    np.savetxt(p, rng.standard_normal((40, 4)), delimiter=",", fmt="%.17g")
    return p


@pytest.mark.slow
@posix
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "SIGTERM"])
def test_a_run_killed_between_two_methods_says_it_is_incomplete(tmp_path, table, sig):
    out, ready = tmp_path / "out", tmp_path / "ready"
    assert kill_when_ready(start(RUN, out, ready, table, "between-methods"), ready, sig) == -sig
    names = set(os.listdir(out))
    assert {"pca-samples.csv", "pca-arrays.npz", "pca-summary.json"} <= names      # the first method: complete-looking
    assert "run.json" not in names and "pcp-samples.csv" not in names
    assert incomplete_sets(out) == ["run"]
    assert "not a complete set" in (out / f"run{MARKER_SUFFIX}").read_text()
    assert temporaries(out) == []


@pytest.mark.slow
@posix
def test_sigterm_inside_a_results_export_leaves_samples_without_arrays_said_incomplete(tmp_path, table):
    out, ready = tmp_path / "out", tmp_path / "ready"
    assert kill_when_ready(start(RUN, out, ready, table, "in-a-result"), ready, signal.SIGTERM) == -signal.SIGTERM
    names = set(os.listdir(out))
    assert "pca-samples.csv" in names and "pca-arrays.npz" not in names
    assert incomplete_sets(out) == ["pca-results", "run"]
    assert temporaries(out) == []


def test_a_finished_run_and_export_leave_no_marker(tmp_path, table, capsys):
    from app.cli import main
    out = tmp_path / "out"
    assert main(["run", "--data", str(table), "--method", "pca", "--method", "pcp", "--out", str(out), "-q"]) == 0
    assert incomplete_sets(out) == [] and temporaries(out) == []
    assert {"run.json", "pca-arrays.npz", "pcp-arrays.npz"} <= set(os.listdir(out))


def test_an_export_that_fails_midway_keeps_its_marker_and_no_temporary(tmp_path, monkeypatch):
    from app.video import export_video
    import app.video as V
    from robustcore.datasets import Dataset
    from robustcore.methods import get_method
    rng = np.random.default_rng(0)
    ds = Dataset(X=rng.uniform(0, 255, (6, 64)), name="noise", image_shape=(8, 8))
    res = get_method("pcp").run(ds, {})
    real, seen = V.compose_frame, [0]

    def compose(*a, **k):
        seen[0] += 1
        if seen[0] == 4:
            raise OSError(28, "No space left on device")
        return real(*a, **k)
    monkeypatch.setattr(V, "compose_frame", compose)
    with pytest.raises(OSError):
        export_video(tmp_path / "f", ds, res)
    assert incomplete_sets(tmp_path / "f") == ["frames"] and temporaries(tmp_path) == []
    monkeypatch.setattr(V, "compose_frame", real)
    export_video(tmp_path / "f", ds, res, overwrite=True)       # written again: complete, said so
    assert incomplete_sets(tmp_path / "f") == [] and len(list((tmp_path / "f").glob("*.png"))) == 6


def _gone_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except OSError:
            pass
        pid += 1


@posix
def test_the_next_export_removes_temporaries_a_killed_one_left(tmp_path):
    tmp_path = tmp_path / "exports"
    tmp_path.mkdir()
    gone = tmp_path / f"{TEMP_PREFIX}{_gone_pid()}-abcd1234.mp4"           # its process is gone
    running = tmp_path / f"{TEMP_PREFIX}{os.getppid()}-efgh5678.mp4"        # another export, still running
    older = tmp_path / ".tmp-k2j4h5g6.mp4"                                  # an earlier version's, old
    fresh = tmp_path / ".tmp-a1b2c3d4.mp4"                                  # ... and one still being written
    mine = tmp_path / "notes.tmp"                                           # not a temporary of ours
    for p in (gone, running, older, fresh, mine):
        p.write_bytes(b"x")
    os.utime(older, (time.time() - 3600, time.time() - 3600))
    removed = sweep_stale(tmp_path)
    assert sorted(removed) == sorted([str(gone), str(older)])
    assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in (running, fresh, mine))


def test_replay_and_reopen_say_when_the_run_folder_was_interrupted(tmp_path, table, capsys):
    from app import session as S
    from app.cli import main
    out = tmp_path / "out"
    assert main(["run", "--data", str(table), "--method", "pca", "--out", str(out), "-q"]) == 0
    (out / f"run{MARKER_SUFFIX}").write_text("left by a run that was killed\n")   # a later --force run, cut short
    assert main(["replay", str(out / "run.json"), "--data", str(table), "--out", str(tmp_path / "r"), "-q"]) == 0
    assert "the writing of run into this folder was interrupted" in capsys.readouterr().err
    notes = S.reopen_job(out / "run.json", data_path=str(table))[3]
    assert any("the writing of run into this folder was interrupted" in n for n in notes)


def test_a_sweep_keeps_this_processs_live_temporaries_however_the_folder_is_named(tmp_path, monkeypatch):
    from app import writing
    monkeypatch.chdir(tmp_path)
    fd, path = writing.new_temp(str(tmp_path), ".mp4")      # a write in progress (absolute folder)
    os.close(fd)
    assert writing.sweep_stale(".") == [] and os.path.exists(path)      # swept by a relative name
    writing.forget_temp(path)                                           # its writer is gone, it stayed
    assert writing.sweep_stale(".") == [os.path.join(".", os.path.basename(path))]
    assert not os.path.exists(path)
