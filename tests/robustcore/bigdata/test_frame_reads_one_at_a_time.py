"""A frame source is read by one thread at a time: a video's decoder is one generator, and the
window reads frames from two threads (the L + S view on the GUI thread, the sample detail on a
worker); reading at once failed with "generator already executing"."""
import threading

import numpy as np

from robustcore.bigdata._frames import FrameSource


class _Counting(FrameSource):
    n_frames, frame_shape = 50, (2, 3)

    def __init__(self):
        self.inside = self.most = 0
        self.gate = threading.Event()

    def _read(self, start, stop):
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.gate.wait(0.01)   # let another thread try to come in (no timing is asserted)
        self.inside -= 1
        return np.full((stop - start, self.n_features), float(start))


def test_reads_from_several_threads_never_overlap():
    src = _Counting()
    got = {}

    def read(k):
        got[k] = [src.frame(i)[0] for i in range(k, 50, 5)]

    threads = [threading.Thread(target=read, args=(k,)) for k in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert src.most == 1
    assert all(v == list(map(float, range(k, 50, 5))) for k, v in got.items())
