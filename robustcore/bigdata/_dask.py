"""Running Dask work: on the local threads by default, on a dask.distributed cluster when an
address is set; with progress and Cancel in both cases.

``settings(scheduler=..., store_dir=..., memory_budget=...)`` is a context manager that sets,
for the code inside it (and the thread running it), where out-of-core work runs and where large
results go; the command line sets it from ``--scheduler``, the window from its settings.
``compute(*collections, progress=...)`` is the one way this package runs a Dask graph.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import time
from dataclasses import dataclass, replace

from .._progress import Cancelled, Reporter

__all__ = ["Settings", "settings", "get_settings", "compute", "require_dask", "DEFAULT_MEMORY_BUDGET"]

#: Memory the out-of-core path plans to stay within (chunks in flight, gathered values, results
#: kept in memory rather than written to a store).
DEFAULT_MEMORY_BUDGET = 1 << 30


def require_dask():
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError:
        raise ImportError("out-of-core data needs Dask, which is not installed; install the extra: "
                          "pip install -e \".[big]\"   (or: pip install \"dask[array]\" distributed zarr h5py)") from None
    return dask


@dataclass(frozen=True)
class Settings:
    """Where out-of-core work runs and where its large results go.

    scheduler : None (Dask's local threads on this machine) or the address of a running
        dask.distributed scheduler, e.g. ``"tcp://10.0.0.5:8786"``.
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
                                                                  default=Settings())


def get_settings() -> Settings:
    return _CURRENT.get()


@contextlib.contextmanager
def settings(scheduler: str | None = None, store_dir=None, memory_budget: int | None = None,
             num_workers: int | None = None):
    """Use these settings for out-of-core work inside the block.

    With ``scheduler`` set, a dask.distributed Client connects to it on entry (failing with a
    clear message when nothing answers there) and closes on exit.
    """
    base = get_settings()
    new = replace(base, scheduler=scheduler if scheduler is not None else base.scheduler,
                  store_dir=str(store_dir) if store_dir is not None else base.store_dir,
                  memory_budget=int(memory_budget) if memory_budget is not None else base.memory_budget,
                  num_workers=num_workers if num_workers is not None else base.num_workers)
    client = None
    if scheduler is not None:
        client = _connect(scheduler)
        new = replace(new, client=client)
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)
        if client is not None:
            client.close()


# Seconds to wait for a scheduler to answer (distributed keeps retrying a refused connection).
_CONNECT_TIMEOUT = 10


def _connect(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("--scheduler needs dask.distributed, which is not installed; install the extra: "
                          "pip install -e \".[big]\"") from None
    try:
        return Client(address, timeout=_CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach a Dask scheduler at {address!r} ({exc}); start one "
                         f"(dask scheduler / dask worker) or check the address, e.g. tcp://HOST:8786") from None


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
    everything = tuple(collections) + tuple(c for _, c in planned)
    if s.client is not None:
        out = _compute_distributed(s.client, everything, rep, message)
    else:
        out = _compute_local(dask, everything, rep, message, s)
    _digest.finish(planned, out[len(collections):])
    return tuple(out[:len(collections)])


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

    workers = s.num_workers or os.cpu_count() or 1
    with _Progress():
        out = dask.compute(*collections, scheduler="threads", num_workers=workers)
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
