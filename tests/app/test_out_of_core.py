"""Where the window puts results too large for memory before a session is saved."""
import os
import subprocess
import sys

from app import out_of_core


def test_working_folder_in_the_cache_and_left_folders_of_dead_processes_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(out_of_core, "_working", None)
    monkeypatch.setattr(out_of_core, "_cache_root", lambda: str(tmp_path / "cache"))
    registered = []
    monkeypatch.setattr(out_of_core.atexit, "register", lambda *a, **k: registered.append((a, k)))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    host = out_of_core.re.sub(r"[^A-Za-z0-9_.-]", "_", out_of_core.socket.gethostname() or "host")
    left = tmp_path / "cache" / f"window-{host}-{dead}" / "online-rpca-1.zarr"
    left.mkdir(parents=True)
    running = tmp_path / "cache" / f"window-{host}-{os.getppid()}"   # a process that runs
    running.mkdir()
    other_host = tmp_path / "cache" / f"window-elsewhere-{dead}"     # not this machine's to judge
    other_host.mkdir()
    here = out_of_core.working_dir()
    assert here == str(tmp_path / "cache" / f"window-{host}-{os.getpid()}")
    assert out_of_core.results_dir(None) == here and out_of_core.working_dir() == here
    assert not left.parent.exists() and running.exists() and other_host.exists()
    assert registered and registered[0][0][1] == here   # removed when the program exits


def test_session_results_go_beside_the_session():
    assert out_of_core.results_dir("/data/work.rss.json") == os.path.abspath("/data/work.lazy")
