"""Messages with large arrays over a multiprocessing pipe, without holding the GIL for the copy.

``Connection.send`` pickles a message into one bytes object before writing it: for a 50,000 x
300 table (120 MB) that copy held the GIL of the sending thread for 0.1-0.3 s, and the window's
GUI thread, which needs the GIL to answer, froze at every Run (and, receiving, at every Open;
issue 25, benchmarks/bench_views.py gaps). Here the arrays travel out of band (pickle protocol
5): a small header first, then each buffer in slices of ``SLICE`` bytes, written and read by
the OS with the GIL released between slices; the receiver rebuilds the arrays on the buffers it
read into, without another copy. Small messages go as before. A table mapped from a file of this
program's (:mod:`app.mapped_tables`) travels as its file name, which the receiver maps.
"""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass

from . import mapped_tables

__all__ = ["send", "recv", "SLICE", "OUT_OF_BAND_MIN"]

SLICE = 4 << 20            # bytes per write: a few ms of copying each
OUT_OF_BAND_MIN = 1 << 20  # below this many array bytes a message is sent in one piece


@dataclass
class _Bulk:
    """Header of a message whose buffers follow: ``sizes[i]`` bytes each, in slices."""
    head: bytes
    sizes: list


class _Pickler(pickle.Pickler):
    mapped = False   # a mapped table went as its file name

    def reducer_override(self, obj):
        r = mapped_tables.reduce(obj)
        self.mapped |= r is not NotImplemented
        return r


def _dumps(obj, buffer_callback=None) -> tuple[bytes, bool]:
    out = io.BytesIO()
    p = _Pickler(out, protocol=5, buffer_callback=buffer_callback)
    p.dump(obj)
    return out.getvalue(), p.mapped


def send(conn, obj) -> None:
    buffers: list = []
    head, mapped = _dumps(obj, buffers.append)
    raws = [b.raw() for b in buffers]
    if sum(r.nbytes for r in raws) < OUT_OF_BAND_MIN:
        # In one piece; through our pickler when a mapped table must go as its file name.
        conn.send(_Bulk(_dumps(obj)[0], []) if mapped else obj)
        return
    conn.send(_Bulk(head, [r.nbytes for r in raws]))
    for raw in raws:
        for start in range(0, raw.nbytes, SLICE):
            conn.send_bytes(raw[start:start + SLICE])


def recv(conn):
    msg = conn.recv()
    if not isinstance(msg, _Bulk):
        return msg
    import numpy as np
    buffers = []
    for size in msg.sizes:
        # Not bytearray(size): it zero-fills the whole buffer (120 MB for the 50,000 x 300 table)
        # holding the GIL, and the window froze 90-200 ms at every Open. numpy.empty leaves the
        # pages untouched until the reads below fill them, a slice at a time.
        buf = np.empty(size, dtype=np.uint8)
        view = memoryview(buf)
        got = 0
        while got < size:
            got += conn.recv_bytes_into(view[got:])
        buffers.append(buf)
    return pickle.loads(msg.head, buffers=buffers)
