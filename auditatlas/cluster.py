"""The one place a Dask client is made: a local cluster of processes, or an existing cluster.

Detector jobs (and the parallel ingest) run through ``get_client``: without an address it
starts a ``LocalCluster`` of worker *processes* (scikit-learn and PyOD hold the GIL in much
of their Python code, so threads would not run two fits at once), one thread each; with an
address (``tcp://host:8786``, what ``dask scheduler`` prints) it connects to that cluster,
whose workers must be able to import ``auditatlas``.

Workers get one BLAS/OpenMP thread each (Dask's nanny sets OMP_NUM_THREADS=1 and friends
before it spawns a worker), so two workers on two cores do not oversubscribe them.
"""
from __future__ import annotations

import logging
import sys
import types
from contextlib import contextmanager
from typing import Iterator

from .errors import AtlasError

DEFAULT_WORKERS = 2


def get_client(address: str | None = None, *, n_workers: int = DEFAULT_WORKERS, threads_per_worker: int = 1,
               timeout: float = 10.0):
    """A ``distributed.Client``: on the cluster at ``address``, else on a new local cluster.

    A local cluster made here belongs to the client: ``client.close()`` shuts it down. It
    listens on the loopback interface only and serves no dashboard.
    """
    from distributed import Client

    if address:
        try:
            return Client(address, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise AtlasError(f"cannot reach the Dask scheduler at {address} ({exc}); is it running?") from exc
    # Loopback only. No dashboard; the scheduler still serves its small HTTP endpoints (health,
    # metrics) somewhere, so on a free loopback port rather than on 0.0.0.0:8787.
    # CRITICAL: a worker whose last heartbeat races the shutdown logs a harmless traceback.
    # Workers take Arrow buffers from malloc (see ingest.stream.use_system_allocator): set
    # before they start, so even the buffers of their imports come from it.
    with _workers_skip_main():
        return Client(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True, host="127.0.0.1",
                      dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                      silence_logs=logging.CRITICAL, env={"ARROW_DEFAULT_MEMORY_POOL": "system"})


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
