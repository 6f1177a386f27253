"""Reading overlaps computing: the first pass over a .npy table queues the file's reads ahead,
in file order, on a thread of its own (posix_fadvise WILLNEED), which the end of the pass stops;
the hint changes no value and no error."""
import os
import threading

import numpy as np
import pytest

from robustcore.bigdata import compute, open_table
from robustcore.bigdata import _tables
from robustcore.bigdata._tables import ReadAhead
from robustcore.datasets import LoadError

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")


@pytest.fixture
def table(tmp_path):
    X = np.arange(1000 * 3, dtype=np.float32).reshape(1000, 3)
    p = tmp_path / "t.npy"
    np.save(p, X)
    return p, X


def test_pieces_are_announced_in_file_order(table):
    p, _ = table
    calls = []
    ra = ReadAhead(str(p), 128, 1000, advise=lambda fd, off, n, how: calls.append((off, n, how)))
    ra.PIECE = 300
    ra.start()._thread.join(5)
    assert calls == [(128, 300, os.POSIX_FADV_WILLNEED), (428, 300, os.POSIX_FADV_WILLNEED),
                     (728, 300, os.POSIX_FADV_WILLNEED), (1028, 100, os.POSIX_FADV_WILLNEED)]


def test_stop_ends_the_thread_after_its_piece(table):
    p, _ = table
    entered, release, calls = threading.Event(), threading.Event(), []

    def advise(fd, off, n, how):
        calls.append(off)
        entered.set()
        release.wait(5)
    ra = ReadAhead(str(p), 0, 10_000, advise=advise)
    ra.PIECE = 100
    ra.start()
    assert entered.wait(5)
    stopper = threading.Thread(target=ra.stop)
    stopper.start()
    release.set()
    stopper.join(5)
    assert not ra._thread.is_alive() and calls == [0]      # 99 pieces left unannounced


def test_the_first_pass_reads_ahead_and_a_refused_hint_changes_nothing(table, monkeypatch):
    p, X = table
    calls = []

    def refuse(fd, off, n, how):
        calls.append((off, n))
        raise OSError("refused")
    monkeypatch.setattr(_tables.os, "posix_fadvise", refuse)
    t = open_table(p, chunk_rows=400)
    np.testing.assert_array_equal(compute(t.array)[0], X)    # the first pass: digested, read ahead
    assert calls == [(t.reader.offset, X.nbytes)] and t.content_digest is not None
    compute(t.array)
    assert len(calls) == 1                                   # later passes find it cached


def test_read_errors_still_propagate(table):
    p, _ = table
    t = open_table(p, chunk_rows=400)
    with open(p, "r+b") as fh:           # cut short after opening: the last block's read fails
        fh.truncate(os.path.getsize(p) - 12)
    with pytest.raises(LoadError, match="truncated"):
        compute(t.array)
