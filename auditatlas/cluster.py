"""The one place a Dask client is made: a local cluster of processes, or an existing cluster.

Detector jobs (and the parallel ingest) run through ``get_client``: without an address it
starts a ``LocalCluster`` of worker *processes* (scikit-learn and PyOD hold the GIL in much
of their Python code, so threads would not run two fits at once), one thread each; with an
address (``tcp://host:8786``, what ``dask scheduler`` prints) it connects to that cluster,
whose workers must be able to import ``auditatlas``.

Workers get one BLAS/OpenMP thread each (Dask's nanny sets OMP_NUM_THREADS=1 and friends
before it spawns a worker), so two workers on two cores do not oversubscribe them.

Scratch: a local cluster's workers keep their spill and lock files in a folder of its own,
``<system temp>/auditatlas-dask-<token>/`` (Dask's default, ``dask-scratch-space`` in the
system temp folder, is shared by every Dask user and outlives a killed process). The folder
is leased while the cluster runs (``auditatlas.leases``), removed when the client closes or the
process exits, and the next local cluster removes the folders of processes that were killed.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import leases
from .errors import AtlasError

DEFAULT_WORKERS = 2
SCRATCH_PREFIX = "auditatlas-dask-"


def get_client(address: str | None = None, *, n_workers: int = DEFAULT_WORKERS, threads_per_worker: int = 1,
               timeout: float | None = None):
    """A ``distributed.Client``: on the cluster at ``address``, else on a new local cluster.

    ``timeout``: seconds to wait for the scheduler at ``address`` (default
    ``$AUDITATLAS_SCHEDULER_TIMEOUT``, else 10).

    A local cluster made here belongs to the client: ``client.close()`` shuts it down. It
    listens on the loopback interface only and serves no dashboard.
    """
    from distributed import Client

    if address:
        if timeout is None:
            timeout = scheduler_timeout()
        try:
            return Client(address, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise AtlasError(f"cannot reach the Dask scheduler at {address} ({exc}); is it running?") from exc
    # Loopback only. No dashboard; the scheduler still serves its small HTTP endpoints (health,
    # metrics) somewhere, so on a free loopback port rather than on 0.0.0.0:8787.
    # CRITICAL: a worker whose last heartbeat races the shutdown logs a harmless traceback.
    # Workers take Arrow buffers from malloc (see arrow_memory.use_system_allocator): set
    # before they start, so even the buffers of their imports come from it.
    sweep_scratch()
    scratch, lease = _new_scratch()
    try:
        with _workers_skip_main():
            client = Client(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                            host="127.0.0.1", dashboard_address=None,
                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, local_directory=str(scratch),
                            silence_logs=logging.CRITICAL, env={"ARROW_DEFAULT_MEMORY_POOL": "system"})
    except BaseException:
        _remove_scratch(scratch, lease)
        raise
    _remove_on_close(client, scratch, lease)
    return client


def scratch_home() -> Path:
    """Where local clusters keep their scratch folders: the system temp folder."""
    return Path(tempfile.gettempdir())


def sweep_scratch() -> list[str]:
    """Remove the scratch folders of local clusters whose process died (their lease is free)."""
    removed = []
    for path in sorted(scratch_home().glob(f"{SCRATCH_PREFIX}*")):
        if leases.remove_if_free(path):
            removed.append(path.name)
    return removed


def _new_scratch() -> tuple[Path, leases.Lease | None]:
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=scratch_home()))
    lease = leases.hold(scratch)
    # Removed at exit too (an exception, Ctrl-C); only a kill leaves it for the next sweep.
    atexit.register(_remove_scratch, scratch, lease)
    return scratch, lease


def _remove_scratch(scratch: Path, lease: leases.Lease | None) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
    if lease is not None:
        lease.release()


def _remove_on_close(client, scratch: Path, lease: leases.Lease | None) -> None:
    """``client.close()`` also removes the cluster's scratch folder (once its workers are gone)."""
    close = client.close

    def close_and_remove(*args, **kwargs):
        try:
            return close(*args, **kwargs)
        finally:
            _remove_scratch(scratch, lease)

    client.close = close_and_remove


@contextmanager
def _workers_skip_main() -> Iterator[None]:
    """Start worker processes with an empty main module.

    A spawned process re-runs its parent's main script (multiprocessing does, so functions
    defined there unpickle). Every job here is a function of an auditatlas module, and the main
    script may be one that must not run twice: under Streamlit's AppTest it is app.py, which
    then rendered the app, and failed on the store, inside each worker.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def scheduler_timeout() -> float:
    """``$AUDITATLAS_SCHEDULER_TIMEOUT`` in seconds, else 10 (Dask's own default, 30 s, is long
    to wait before being told a typed address is wrong)."""
    raw = os.environ.get("AUDITATLAS_SCHEDULER_TIMEOUT", "").strip()
    if not raw:
        return 10.0
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise AtlasError(f"AUDITATLAS_SCHEDULER_TIMEOUT must be a number of seconds above 0, not {raw!r}")
    return value


@contextmanager
def client_session(address: str | None = None, **kwargs) -> Iterator:
    """``get_client`` as a context: the client (and a local cluster it made) closed on exit."""
    client = get_client(address, **kwargs)
    try:
        yield client
    finally:
        client.close()


def describe(client) -> str:
    """One line for provenance: where the jobs ran."""
    try:
        workers = client.scheduler_info(n_workers=-1).get("workers", {})
    except TypeError:  # older distributed: no n_workers argument
        workers = client.scheduler_info().get("workers", {})
    except Exception:  # noqa: BLE001 - provenance must not fail a run
        workers = {}
    threads = sum(int(w.get("nthreads", 0)) for w in workers.values())
    return f"dask {client.scheduler.address} ({len(workers)} workers, {threads} threads)"
