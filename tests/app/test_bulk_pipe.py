"""Large arrays cross the worker pipe out of band, in slices (app.bulk_pipe); what arrives is
what was sent, and small messages still travel as plain pickles."""
import multiprocessing as mp
import threading

import numpy as np

from app import bulk_pipe


def _roundtrip(obj):
    a, b = mp.Pipe(duplex=True)
    # the sender in a thread: a message larger than the pipe's buffer blocks until read
    t = threading.Thread(target=bulk_pipe.send, args=(a, obj))
    t.start()
    got = bulk_pipe.recv(b)
    t.join()
    a.close()
    b.close()
    return got


def test_large_arrays_arrive_equal_in_slices(monkeypatch):
    monkeypatch.setattr(bulk_pipe, "SLICE", 1 << 16)   # many slices, and one that is partial
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 301))            # 2.4 MB, out of band
    y = np.arange(1000, dtype=np.int32)
    got = _roundtrip({"X": X, "y": y, "name": "t", "T": X[:, ::2]})   # the strided view goes in band
    assert got["name"] == "t"
    np.testing.assert_array_equal(got["X"], X)
    np.testing.assert_array_equal(got["y"], y)
    np.testing.assert_array_equal(got["T"], X[:, ::2])
    assert got["X"].flags.writeable


def test_small_messages_are_plain_pickles():
    a, b = mp.Pipe(duplex=True)
    bulk_pipe.send(a, ("progress", 0.5, np.zeros(3)))
    raw = b.recv()   # readable by plain Connection.recv: no header of ours
    assert raw[0] == "progress" and raw[1] == 0.5
    a.close()
    b.close()
