"""Running Dask work: on the local threads by default, on a dask.distributed cluster when an
address is set or the user made a Client current; with progress and Cancel in both cases.

``settings(scheduler=..., store_dir=..., memory_budget=...)`` is a context manager that sets,
for the code inside it (and the thread running it), where out-of-core work runs and where large
results go; the command line sets it from ``--scheduler``, the window from its settings.
``compute(*collections, progress=...)`` is the one way this package runs a Dask graph.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, replace

from .._progress import Cancelled, Reporter
from ..datasets._limits import DEFAULT_MEMORY_BUDGET  # (chunks in flight, gathered values, results kept)

__all__ = ["Settings", "settings", "get_settings", "compute", "require_dask", "check_address", "content_digest",
           "DEFAULT_MEMORY_BUDGET"]



def require_dask():
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError:
        raise ImportError("out-of-core data needs Dask, which is not installed; install the extra: "
                          "pip install -e \".[big]\"   "
                          "(or: pip install \"dask[array]\" distributed zarr h5py)") from None
    _local_rechunks(dask)
    return dask


# Set by this module (not by the user): the rechunk method of computations on local threads.
_RECHUNK = "array.rechunk.method"
_rechunk_set = False


def _local_rechunks(dask) -> None:
    """Name Dask's rechunk method, "tasks", unless the user named one. Unnamed, Dask imports
    dask.distributed at the first rechunk to ask for a default client (1-2.6 s of CPU of every
    out-of-core command), and answers "tasks" when there is none. This module computes on local
    threads unless :func:`settings` names a cluster, and there Dask chooses as it would
    (:func:`settings` unsets the name while it is connected)."""
    global _rechunk_set
    if not _rechunk_set and get_settings().client is None and dask.config.get(_RECHUNK, None) is None:
        dask.config.set({_RECHUNK: "tasks"})
        _rechunk_set = True


@dataclass(frozen=True)
class Settings:
    """Where out-of-core work runs and where its large results go.

    scheduler : None (Dask's local threads on this machine, or the Client the user made current)
        or the address of a running dask.distributed scheduler, e.g. ``"tcp://10.0.0.5:8786"``.
    store_dir : folder for results too large for memory (Zarr stores); None: a temporary folder.
    memory_budget : bytes the out-of-core path plans to hold at once.
    num_workers : threads of the local scheduler (None: one per core).
    """

    scheduler: str | None = None
    store_dir: str | None = None
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    num_workers: int | None = None
    client: object = None


_CURRENT: contextvars.ContextVar[Settings] = contextvars.ContextVar("robustcore_bigdata_settings",
                                                                  default=Settings())  # noqa: B039 - frozen


def get_settings() -> Settings:
    return _CURRENT.get()


@contextlib.contextmanager
def settings(scheduler: str | None = None, store_dir=None, memory_budget: int | None = None,
             num_workers: int | None = None):
    """Use these settings for out-of-core work inside the block.

    With ``scheduler`` set, a dask.distributed Client connects to it on entry and closes on
    exit. A wrong address fails within 30 s with a one-line ValueError and no traceback: a bad
    address or scheme (:func:`check_address`), nothing listening, no route, or a port that
    answers but is not a Dask scheduler (a web server).
    """
    base = get_settings()
    new = replace(base, scheduler=scheduler if scheduler is not None else base.scheduler,
                  store_dir=str(store_dir) if store_dir is not None else base.store_dir,
                  memory_budget=int(memory_budget) if memory_budget is not None else base.memory_budget,
                  num_workers=num_workers if num_workers is not None else base.num_workers)
    client = None
    chosen = contextlib.nullcontext()
    if scheduler is not None:
        client = _connect(scheduler)
        new = replace(new, client=client)
        if _rechunk_set:
            import dask
            chosen = dask.config.set({_RECHUNK: None})     # Dask's own choice on a cluster
    token = _CURRENT.set(new)
    try:
        with chosen:
            yield new
    finally:
        _CURRENT.reset(token)
        if client is not None:
            _close_quietly(client)


# Seconds for each step of reaching a scheduler: the TCP connection, its first words, the
# Client's own connection, and closing a Client that failed. Their sum stays under 30 s.
_CONNECT_TIMEOUT = 10
_PROBE_TIMEOUT = 5
_CLOSE_TIMEOUT = 3
_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_ADDRESS = re.compile(r"(?:([A-Za-z][A-Za-z0-9+.-]*)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::([0-9]{1,5}))?/?")
_EXAMPLE = "tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"


def check_address(address) -> str:
    """A dask.distributed scheduler address in full (``"host:8786"`` -> ``"tcp://host:8786"``), or
    ValueError saying in one line what is wrong (no port, another scheme) and what would do."""
    text = str(address).strip()
    m = _ADDRESS.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r:.80} is not a scheduler address; write it as {_EXAMPLE}")
    scheme, host, port = m.group(1), m.group(2), m.group(3)
    if scheme is not None and scheme.lower() not in _SCHEMES:
        web = scheme.lower() in ("http", "https")
        dash = " (http://HOST:8787 is a scheduler's dashboard, not the scheduler)" if web else ""
        raise ValueError(f"{text!r:.80} uses the scheme {scheme}://, which is not a Dask scheduler's{dash}; write it "
                         f"as {_EXAMPLE}")
    scheme = (scheme or "tcp").lower()
    if scheme == "inproc":
        return text
    _check_host(host, text)
    if port is None:
        raise ValueError(f"{text!r:.80} has no port; a dask scheduler listens on one, e.g. {scheme}://{host}:8786")
    if not 0 < int(port) < 65536:
        raise ValueError(f"port {port} of {text!r:.80} is not a port number (1-65535)")
    return f"{scheme}://{host}:{int(port)}"


def _check_host(host: str, text: str) -> None:
    """A host name the resolver can take (DNS: at most 253 characters, each part between dots at
    most 63, none empty), or ValueError naming the problem (the resolver's own error is
    "encoding with 'idna' codec failed")."""
    if host.startswith("["):
        return
    labels = host.rstrip(".").split(".")
    longest = max(labels, key=len)
    if len(host) > 253 or len(longest) > 63 or not all(labels):
        raise ValueError(f"the host of {text!r:.80} is not a host name ({len(host):,} characters, its longest part "
                         f"{len(longest):,}; a host name has at most 253 characters, each part between dots 1 to "
                         f"63); write the address as {_EXAMPLE}")


@contextlib.contextmanager
def _quiet_distributed():
    """distributed logs (and prints tracebacks for) every failed connection and close; the user
    gets one line from us instead."""
    import logging
    names = [n for n in list(logging.root.manager.loggerDict) if n == "distributed" or n.startswith("distributed.")]
    names += ["distributed", "tornado", "asyncio"]
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)


def _probe(address: str) -> None:
    """For tcp:// and tls://: is something listening, and (tcp) does it speak as a Dask scheduler
    does (on a new connection a scheduler sends its handshake at once: an 8-byte length, then
    the frame count)? ValueError in one line otherwise."""
    import socket
    import struct
    scheme, rest = address.split("://", 1)
    if scheme not in ("tcp", "tls", "ws", "wss"):
        return
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")
    where = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, int(port)), timeout=_PROBE_TIMEOUT)
    except UnicodeError:   # a host name the resolver cannot encode (check_address catches most)
        raise ValueError(f"cannot reach a Dask scheduler at {address!r:.80}: {host!r:.40} is not a host name; "
                         f"check the address ({_EXAMPLE})") from None
    except socket.gaierror as exc:
        raise ValueError(f"cannot reach a Dask scheduler at {address}: the host {host!r} is unknown "
                         f"({exc.strerror or exc}); check the address ({_EXAMPLE})") from None
    except ConnectionRefusedError:
        raise ValueError(f"cannot reach a Dask scheduler at {address}: nothing is listening at {where} (connection "
                         f"refused); start one there (dask scheduler, then dask worker {address}) or check the "
                         f"address") from None
    except TimeoutError:
        raise ValueError(f"cannot reach a Dask scheduler at {address}: no answer from {where} within "
                         f"{_PROBE_TIMEOUT} s (an unroutable address, a firewall, or the machine is down); check "
                         f"the address") from None
    except OSError as exc:
        raise ValueError(f"cannot reach a Dask scheduler at {address}: {exc.strerror or exc}; check the "
                         f"address") from None
    try:
        if scheme != "tcp":
            return
        # One deadline for the whole greeting, not a timeout per recv: a peer that sends a byte
        # every 2 s held the check for 31 s.
        deadline = time.monotonic() + _PROBE_TIMEOUT
        head = b""
        try:
            while len(head) < 16:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                piece = sock.recv(16 - len(head))
                if not piece:
                    break
                head += piece
        except (TimeoutError, OSError):
            pass
        total, frames = struct.unpack("<QQ", head) if len(head) == 16 else (0, 0)
        if not (16 <= total + 8 <= 1 << 20 and 1 <= frames <= 64):
            said = f"it answered {head[:12]!r}" if head else f"it said nothing within {_PROBE_TIMEOUT} s"
            raise ValueError(f"{where} accepts connections but is not a Dask scheduler ({said}; a web server or "
                             f"another service?); give the scheduler's address, {_EXAMPLE} (port 8786 by "
                             f"default)")
    finally:
        sock.close()


def _close_quietly(client) -> None:
    with _quiet_distributed():
        try:
            client.close(timeout=_CLOSE_TIMEOUT)
        except Exception:  # noqa: BLE001 - a client that never connected may fail to close; it is dropped
            pass
        client.status = "closed"   # so its __del__ does not try again (and print a traceback)
        try:
            client._loop_runner.stop()
        except Exception:  # noqa: BLE001
            pass


def _connect(address: str):
    """A dask.distributed Client of the scheduler at ``address``, or ValueError in one line within
    30 s: a bad address, nothing listening, no route, a service that is not a scheduler."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("--scheduler needs dask.distributed, which is not installed; install the extra: "
                          "pip install -e \".[big]\"") from None
    address = check_address(address)
    _probe(address)
    box: dict = {}

    def connect():
        client = Client.__new__(Client)
        box["client"] = client
        try:
            client.__init__(address, timeout=_CONNECT_TIMEOUT, set_as_default=False)
        except BaseException as exc:  # noqa: BLE001 - reported below in one line
            box["error"] = exc
    with _quiet_distributed():
        worker = threading.Thread(target=connect, name="dask-connect", daemon=True)
        worker.start()
        worker.join(_CONNECT_TIMEOUT + _PROBE_TIMEOUT)
    client, error = box.get("client"), box.get("error")
    if worker.is_alive() or error is not None:
        if client is not None and not worker.is_alive():
            _close_quietly(client)
        why = ("it did not finish the Dask handshake in time" if worker.is_alive() else
               str(error).splitlines()[0][:200] if str(error) else type(error).__name__)
        raise ValueError(f"cannot reach a Dask scheduler at {address} ({why}); start one (dask scheduler / "
                         f"dask worker) or check the address, e.g. tcp://HOST:8786") from None
    return client


def compute(*collections, progress=None, message: str = "computing"):
    """Compute Dask collections (sharing the reads they have in common) and return the results.

    ``progress`` (callable or Reporter) gets the share of finished tasks on the local scheduler,
    and a heartbeat every 0.25 s on a cluster; cancelling stops the computation (on a cluster,
    its tasks are cancelled) and raises :class:`~robustcore.Cancelled`.

    The first computation that reads the whole of a table opened from a file also hashes its
    blocks, sharing each block's read (:mod:`._digest`): afterwards the table's
    ``content_digest`` is set, and a table armed with an expected digest raises
    :class:`~robustcore.bigdata.DataChangedError` here when it differs.
    """
    dask = require_dask()
    from . import _digest
    rep = progress if isinstance(progress, Reporter) else Reporter(progress)
    s = get_settings()
    planned = _digest.plan(collections)
    everything = tuple(collections) + tuple(p.hashes for p in planned)
    client = s.client if s.client is not None else _users_client()
    if client is not None:
        out = _compute_distributed(client, everything, rep, message)
    else:
        # the first pass that reads a table whole (the one that digests it) is the one that may
        # find it on disk rather than cached: its reads are queued ahead, in file order
        ahead = [a.start() for a in (_read_ahead(p.table) for p in planned) if a is not None]
        try:
            out = _compute_local(dask, everything, rep, message, s)
        finally:
            for a in ahead:
                a.stop()
            # the blocks' buffers, reused within a pass, are freed between passes
            tables = sys.modules.get("robustcore.bigdata._tables")
            if tables is not None:
                tables._BUFFERS.clear()
                tables._OUTPUTS.clear()
    _digest.finish(planned, out[len(collections):])
    return tuple(out[:len(collections)])


def _users_client():
    """The dask.distributed Client the user made current in this process (``Client()`` in a
    notebook or script), or None. Looked for only when distributed is already imported: a
    process that never imported it has no client, and importing it to find out is what Dask's
    own choice of scheduler does (0.4 s of CPU and 16 MB of every out-of-core command and of
    the window)."""
    if "distributed" not in sys.modules:
        return None
    from distributed import Client
    try:
        return Client.current(allow_global=True)
    except ValueError:   # no client
        return None


def _read_ahead(table):
    make = getattr(getattr(table, "reader", None), "read_ahead", None)
    return make() if make is not None else None


def _compute_local(dask, collections, rep, message, s):
    from dask.callbacks import Callback

    class _Progress(Callback):
        def __init__(self):
            super().__init__()
            self.done = 0
            self.total = 1
            self.last = 0.0

        def _start_state(self, dsk, state):
            self.total = max(1, len(state["ready"]) + len(state["waiting"]) + len(state.get("finished", ())))

        def _posttask(self, key, result, dsk, state, worker_id):
            self.done += 1
            now = time.monotonic()
            if now - self.last > 0.1:
                self.last = now
                rep(self.done / self.total, message)

    from dask.threaded import get as threads
    workers = s.num_workers or os.cpu_count() or 1
    with _Progress():
        # the threaded scheduler itself, not its name: by name Dask first imports
        # dask.distributed to look for a client (1-2 CPU s of imports in every command)
        out = dask.compute(*collections, scheduler=threads, num_workers=workers)
    rep(1.0, message)
    return out


def _compute_distributed(client, collections, rep, message):
    from distributed import wait
    futures = client.compute(list(collections))
    t0 = time.monotonic()
    try:
        with client.as_current():
            while True:
                try:
                    wait(futures, timeout=0.25)
                    break
                except TimeoutError:
                    rep(0.0, f"{message} on the cluster ({time.monotonic() - t0:.0f} s)")
        out = client.gather(futures)
    except (Cancelled, KeyboardInterrupt):
        client.cancel(futures)
        raise
    rep(1.0, message)
    return tuple(out)


def content_digest(data, progress=None, read: bool = True, like: str | None = None) -> str | None:
    """The digest of ``data`` (a LazyDataset, LazyTable or video source).

    The digest recorded by the first computation that read the whole table (or by opening the
    video) is returned at once; without one, ``read=True`` reads the table once to hash it
    (``progress`` as for :func:`compute`), ``read=False`` returns None.
    ``like`` (a recorded digest) asks for the digest in that digest's format: a table whose
    recorded digest is in another format is read again (and keeps the one it has).
    Data held in memory (a Dask array not read from a file) has no digest: None.
    """
    from . import _digest
    src = _digest._source(data)
    digest = getattr(src, "content_digest", None)
    fmt = _digest.digest_format(like)
    if (digest is not None and fmt in (None, _digest.digest_format(digest))) or not read:
        return digest
    if getattr(src, "array", None) is None or getattr(src, "reader", None) is None:
        return None
    if fmt not in _digest.TABLE_FORMATS:
        fmt = _digest.table_format(src)
    if digest is None and fmt == _digest.table_format(src):   # the table's own digest, recorded
        _digest.register(src)
        compute(_digest._digest_array(src, fmt), progress=progress, message="hashing the data")
        return src.content_digest
    hashes, = compute(_digest._digest_array(src, fmt), progress=progress, message="hashing the data")
    return _digest._combine(src, list(hashes), fmt)
