"""--scheduler ADDRESS: a wrong address fails within 30 s in one line, with no traceback, against
servers this test starts itself (nothing listening, a port that never answers, a web server, a
TCP server that says nothing, a wrong scheme); a worker killed mid-run still gives the result."""
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from robustcore.bigdata import check_address, open_lazy, settings  # noqa: E402
from robustcore.methods import get_method  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
# A hang is caught by this limit (the policy is 30 s); the test does not time anything.
HANG = 60

CONNECT = """
import sys
from robustcore.bigdata import _dask, settings
if len(sys.argv) > 2:                     # the Client's own failure path (no probe first)
    _dask._probe = lambda address: None
    _dask._CONNECT_TIMEOUT = 2
try:
    with settings(scheduler=sys.argv[1]):
        print("connected")
except ValueError as exc:
    print(exc)
    sys.exit(3)
"""


def connect(address, *extra):
    """Run settings(scheduler=address) in a fresh process: (exit code, stdout lines, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", CONNECT, address, *extra], capture_output=True, text=True,
                       timeout=HANG, cwd=str(ROOT), env=env)
    return p.returncode, p.stdout.strip().splitlines(), p.stderr


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def web_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture
def silent_server():
    """Accepts connections and never says a word."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    held = []

    def loop():
        while True:
            try:
                held.append(s.accept()[0])
            except OSError:
                return
    threading.Thread(target=loop, daemon=True).start()
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def black_hole():
    """A port whose accept queue is full: new connections get no answer at all (as an
    unroutable address gives)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(0)
    fillers = []
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(s.getsockname())
        fillers.append(c)
    time.sleep(0.2)
    yield s.getsockname()[1]
    for c in fillers:
        c.close()
    s.close()


def one_line(code, lines, err):
    assert code == 3, (lines, err)
    assert len(lines) == 1, lines
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return lines[0]


@pytest.mark.slow
def test_nothing_listening(tmp_path):
    msg = one_line(*connect(f"tcp://127.0.0.1:{closed_port()}"))
    assert "nothing is listening at 127.0.0.1" in msg and "connection refused" in msg


@pytest.mark.slow
def test_no_answer_at_all(black_hole):
    msg = one_line(*connect(f"tcp://127.0.0.1:{black_hole}"))
    assert "no answer from 127.0.0.1" in msg or "is not a Dask scheduler" in msg


@pytest.mark.slow
def test_a_web_server(web_server):
    msg = one_line(*connect(f"127.0.0.1:{web_server}"))
    assert f"127.0.0.1:{web_server} accepts connections but is not a Dask scheduler" in msg


@pytest.mark.slow
def test_a_server_that_says_nothing(silent_server):
    msg = one_line(*connect(f"tcp://127.0.0.1:{silent_server}"))
    assert "is not a Dask scheduler (it said nothing within 5 s" in msg


@pytest.mark.slow
def test_a_wrong_scheme():
    msg = one_line(*connect("http://127.0.0.1:8787"))
    assert "scheme http://" in msg and "dashboard" in msg and "tcp://HOST:PORT" in msg
    for bad, why in [("tcp://host", "has no port"), ("host:70000", "not a port number"), ("a b", "not a scheduler")]:
        with pytest.raises(ValueError, match=why):
            check_address(bad)
    assert check_address("10.0.0.5:8786") == "tcp://10.0.0.5:8786"


@pytest.mark.slow
def test_a_client_that_fails_to_connect_closes_without_tracebacks():
    # Past the probe (switched off here), distributed's Client itself fails; closing it used to
    # print two tracebacks (Client.close timing out in __del__).
    msg = one_line(*connect(f"tcp://127.0.0.1:{closed_port()}", "no-probe"))
    assert msg.startswith("cannot reach a Dask scheduler at tcp://127.0.0.1:")


# -- a worker killed mid-run --------------------------------------------------------------------

def slow_reads():
    """Run on the cluster's workers: every block read takes 100 ms more, so a fit lasts long
    enough to lose a worker in the middle of it (a restarted worker reads at full speed)."""
    from robustcore.bigdata import _tables
    real = _tables._read_block

    def read(reader, start, stop):
        time.sleep(0.1)
        return real(reader, start, stop)
    _tables._read_block = read


@pytest.mark.slow
def test_a_worker_killed_mid_run_gives_the_same_result(tmp_path):
    import cloudpickle
    import distributed
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rng = np.random.default_rng(8)
    X = rng.standard_normal((20000, 3)) @ rng.standard_normal((3, 12)) + 0.2 * rng.standard_normal((20000, 12))
    X[:300] = rng.standard_normal((300, 12)) * 3
    np.save(tmp_path / "t.npy", X)
    m = get_method("coherence-pursuit")
    params = {"n_components": 3}
    local = m.run(open_lazy(tmp_path / "t.npy", chunk_rows=2000), params)
    killed = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster:
        nanny = next(iter(cluster.workers.values()))

        def progress(fraction, message):
            if not killed and "on the cluster" in str(message):
                pid = nanny.process.process.pid
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        with settings(scheduler=cluster.scheduler_address) as s:
            s.client.run(slow_reads)
            remote = m.run(open_lazy(tmp_path / "t.npy", chunk_rows=2000), params, progress=progress)
    assert killed, "no worker was killed: the fit ended before the first heartbeat"
    for k, v in local.sample_scores.items():
        np.testing.assert_allclose(np.asarray(remote.sample_scores[k][:]), np.asarray(v[:]), rtol=1e-8, err_msg=k)
    for k, v in local.flags.items():
        np.testing.assert_array_equal(np.asarray(remote.flags[k][:]), np.asarray(v[:]), err_msg=k)
