"""How a session recognises data opened out of core: a cheap identity, and the content's digest.

Data opened out of core can be 10 GB: hashing it whole on every save and reopen, as in-memory
data is, would add a pass of minutes. Two records stand in for that hash, and both survive a
copy of the data to another folder or machine (unlike the fingerprint, made of file times):

- ``identity``, checked the moment the data is found: for a file (``.npy``, HDF5, a video) its
  size and the sha256 of its first and last MiB; for a folder (a Zarr table) every file's
  relative name and size and the Zarr metadata's bytes (:func:`app.session.stores.store_manifest`).
  Cheap, and it catches a truncated or rewritten file at once; a change in the middle of a large
  file escapes it.
- ``digest``, a hash of the whole content (:mod:`robustcore.bigdata._digest`: xxh3 or sha256 of a
  table, checked in the format it was recorded in; sha256 of a video's packets), taken in the
  pass that a fit makes anyway (a table: every block hashed as it is read; a video: every packet
  of its stream, hashed when it is opened). Reopening arms the data with it
  (:func:`arm`): the first pass of a re-fit fails at once when the content differs, and when no
  fit runs (the saved results are reloaded) :func:`check_content` reads the data once to compare.

Either check failing says "the data changed since the session was saved" and what was compared.
"""
from __future__ import annotations

import hashlib
import os

from robustcore.datasets import LoadError, is_lazy_dataset, open_regular

__all__ = ["EDGE_BYTES", "CHANGED", "data_identity", "describe_identity", "describe_check", "arm",
           "check_content", "reopen_options"]

#: Bytes hashed at each end of a file.
EDGE_BYTES = 1 << 20
#: The words every refusal of changed data starts with.
CHANGED = "the data changed since the session was saved"


def data_identity(path) -> str | None:
    """The cheap identity of the file or folder ``path`` (see the module doc), or None when it
    cannot be computed (unreadable, a folder holding links)."""
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
    """What the cheap identity checked, for messages."""
    if identity and identity.startswith("tree-"):
        return "its files' names and sizes and its Zarr metadata"
    return f"its size and its first and last {EDGE_BYTES >> 20} MiB (the file is not hashed whole)"


def describe_check(ref) -> str:
    """Everything a reopening of ``ref`` (a DatasetRef of data opened out of core) compares."""
    from robustcore.bigdata._digest import describe_digest
    parts = []
    if ref.identity:
        parts.append(describe_identity(ref.identity).replace(" (the file is not hashed whole)", ""))
    if ref.digest:
        parts.append(describe_digest(ref.digest))
    if not parts:
        return "its files' sizes and modification times (the content is not hashed)"
    return " and ".join(parts)


def reopen_options(ref) -> dict:
    """Options to open ``ref``'s data with so its digest can be compared: the block size the
    digest was taken with (a table's digest depends on it)."""
    from robustcore.bigdata._digest import digest_rows
    rows = digest_rows(ref.digest) if ref is not None else None
    if rows is None or (ref.options or {}).get("chunk_rows") is not None:
        return {}
    return {"chunk_rows": rows}


_WAY_OUT = ("Point to the original data, or open the new data as a new data set and run the methods again")


def _mismatch(ref, where, message, expected, actual):
    from .errors import DataMismatchError
    return DataMismatchError(f"{message}. {_WAY_OUT}", ref=ref, path=where, expected=expected, actual=actual)


def arm(ref, dataset, where: str) -> None:
    """Before any fit: make ``dataset`` refuse to be read as the session's data if its content
    differs from ``ref.digest``. A video's digest is known from opening it, so it is compared
    now; a table's is compared by the first pass that reads it whole (the fit's, or
    :func:`check_content`'s). Raises DataMismatchError."""
    from robustcore.bigdata._digest import DataChangedError, DigestFormatError, expect_digest
    from .errors import SessionError
    if not ref.digest or not is_lazy_dataset(dataset):
        return
    try:
        expect_digest(dataset, ref.digest, "the session was saved")
    except DataChangedError as exc:
        raise _mismatch(ref, where, f"{where}: {exc}", exc.expected, exc.actual) from None
    except DigestFormatError as exc:   # not the data's fault: no other file would do
        raise SessionError(f"{where} cannot be checked against the session: {exc}") from None
    except LoadError as exc:   # opened with another block size
        raise _mismatch(ref, where, f"{where} cannot be compared with the session's data: {exc}", ref.digest,
                        None) from None


def check_content(ref, dataset, progress=None, where: str | None = None) -> str | None:
    """Compare ``dataset``'s whole content with the digest the session recorded; return a line
    saying what was compared (None when the session recorded no digest).

    The digest comes from the fit that just read the data when there was one; otherwise the
    data is read once here (``progress`` as for a fit). Raises DataMismatchError saying
    "the data changed since the session was saved: ...".
    """
    from robustcore.bigdata import content_digest
    from robustcore.bigdata._digest import DataChangedError, describe_digest
    if ref is None or not ref.digest or not is_lazy_dataset(dataset):
        return None
    where = where or (dataset.provenance.path or dataset.name)
    try:
        actual = content_digest(dataset, progress=progress, like=ref.digest)
    except DataChangedError as exc:
        raise _mismatch(ref, where, f"{where}: {exc}", exc.expected, exc.actual) from None
    if actual != ref.digest:
        raise _mismatch(ref, where, f"{where}: {CHANGED}: {describe_digest(ref.digest)} differs (now "
                                    f"{(actual or 'none').rsplit(':', 1)[-1][:12]}…, was "
                                    f"{ref.digest.rsplit(':', 1)[-1][:12]}…)", ref.digest, actual)
    return f"verified the data: {describe_digest(ref.digest)}"
