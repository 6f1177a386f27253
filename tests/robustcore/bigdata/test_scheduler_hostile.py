"""Scheduler checks against hostile peers and addresses (issue 34.10): a peer that trickles its
greeting a byte at a time is judged within one deadline (not a timeout per byte); a 300-character
host, and an empty address, are one-line errors naming what is wrong."""
import socket
import threading

import pytest

from robustcore.bigdata import _dask, check_address, settings

INTERVAL = 0.2   # the trickling peer's pause between bytes


@pytest.fixture
def trickler():
    """Accepts one connection and sends it a byte every INTERVAL seconds until it is closed;
    ``sent`` counts the bytes that went out."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    sent, stop = [0], threading.Event()

    def serve():
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        with conn:
            while not stop.wait(INTERVAL):
                try:
                    conn.sendall(b"\x01")
                except OSError:     # the probe closed the connection: it gave up
                    return
                sent[0] += 1
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], sent
    stop.set()
    srv.close()
    t.join(5)


@pytest.mark.slow
def test_a_trickling_peer_is_judged_within_one_deadline(trickler, monkeypatch):
    port, sent = trickler
    monkeypatch.setattr(_dask, "_PROBE_TIMEOUT", 1.0)
    with pytest.raises(ValueError, match=r"accepts connections but is not a Dask scheduler \(it answered b'\\x01"):
        _dask._probe(f"tcp://127.0.0.1:{port}")
    # One deadline of 1 s lets about 1 / INTERVAL bytes in; a timeout per recv read all 16
    # (the greeting's length), 3.2 s of trickle, before judging (at 2 s a byte: 31 s).
    assert sent[0] <= 1.0 / INTERVAL + 2


@pytest.mark.parametrize("address,why", [
    ("tcp://" + "a" * 300 + ":8786", "300 characters, its longest part 300"),
    ("tcp://" + ".".join(["abcdefgh"] * 40) + ":8786", "359 characters"),
    ("tcp://" + "b" * 64 + ".example.org:8786", "its longest part 64"),
    ("tcp://a..b:8786", "each part between dots 1 to 63"),
])
def test_a_host_the_resolver_cannot_take_is_named(address, why):
    with pytest.raises(ValueError, match=why) as err:
        check_address(address)
    assert "idna" not in str(err.value) and len(str(err.value)) < 300


def test_an_empty_scheduler_address_is_an_error_not_a_run_in_memory():
    with pytest.raises(ValueError, match="'' is not a scheduler address"):
        with settings(scheduler=""):
            pass
