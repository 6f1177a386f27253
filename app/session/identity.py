"""A cheap identity of data opened out of core, recorded in the session so it can be checked.

Data opened out of core can be 10 GB: hashing it whole on every save and reopen would take
minutes. Its fingerprint (:meth:`robustcore.bigdata.LazyDataset.fingerprint`) is the files' names,
sizes and modification times (for a video also its path), which a copy to another folder or
machine changes although the data is the same. The identity recorded beside it depends only on
the content, cheaply:

- a file (``.npy``, HDF5, a video): its size and the sha256 of its first and last MiB;
- a folder (a Zarr table): every file's relative name and size and the Zarr metadata's bytes
  (:func:`app.session.stores.store_manifest`).

It is not a hash of the whole content: a change inside a large file that keeps its size and
leaves the first and last MiB alone is not seen (the message on a mismatch says so).
"""
from __future__ import annotations

import hashlib
import os

from robustcore.datasets import LoadError, open_regular

__all__ = ["EDGE_BYTES", "data_identity", "describe_identity"]

#: Bytes hashed at each end of a file.
EDGE_BYTES = 1 << 20


def data_identity(path) -> str | None:
    """The identity of the file or folder ``path`` (see the module doc), or None when it cannot
    be computed (unreadable, a folder holding links)."""
    from .stores import StoreError, store_manifest
    p = os.fspath(path)
    try:
        if os.path.isdir(p):
            m = store_manifest(p)
            return f"tree-sha256:{m['files']}:{m['bytes']}:{m['manifest'].split(':', 1)[1]}"
        h = hashlib.sha256()
        with open_regular(p, f"data file {p}") as fh:
            size = os.fstat(fh.fileno()).st_size
            h.update(fh.read(EDGE_BYTES))
            if size > EDGE_BYTES:
                fh.seek(max(EDGE_BYTES, size - EDGE_BYTES))
                h.update(fh.read(EDGE_BYTES))
        return f"edges-sha256:{size}:{h.hexdigest()}"
    except (OSError, LoadError, StoreError):
        return None


def describe_identity(identity: str | None) -> str:
    """What an identity checked, for messages."""
    if identity and identity.startswith("tree-"):
        return "its files' names and sizes and its Zarr metadata"
    return f"its size and its first and last {EDGE_BYTES >> 20} MiB (the file is not hashed whole)"
