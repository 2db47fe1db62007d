"""Where the jobs of a list of units run: one after another in this process, or on Dask.

``execute`` is what the engine and the cross-backbone matrix call. With a Dask client
(``auditatlas.cluster.get_client``: a local cluster of processes, or an existing cluster) the
feature matrix is scattered to the workers once and every job receives it plus row indices;
with ``client=None`` the jobs run here (the re-score page's path, and ``--workers 0``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AtlasError
from .jobs import Unit, fit_job, score_job

Tick = Callable[[str], None]  # called after each job with what it did; may raise Cancelled
ShouldStop = Callable[[], bool]

IN_PROCESS = "in-process"


class Cancelled(AtlasError):
    """The re-score was cancelled; nothing was written."""


def execute(units: list[Unit], X: np.ndarray, client: Any = None, tick: Tick | None = None,
            should_stop: ShouldStop | None = None) -> str:
    """Run every unit's fit and score jobs (on ``client``, else here); returns where they ran
    (``params.executor``). Each unit ends with ``fitted`` and ``scored`` filled in."""
    tick = tick or (lambda message: None)
    if client is None:
        return run_in_process(units, X, tick)
    return run_on_dask(client, units, X, tick, should_stop)


def run_in_process(units: list[Unit], X: np.ndarray, tick: Tick) -> str:
    """Every job, one after another, in this process (``tick`` can stop it between two jobs)."""
    for unit in units:
        unit.fitted = fit_job(unit.detector.name, unit.seed, X, unit.training.rows, unit.training.y)
        tick(f"fitted {unit.detector.name} (seed {unit.seed})")
        for lo, hi in unit.parts:
            unit.scored.append(score_job(unit.fitted, X, lo, hi, unit.score_rows))
            tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {lo:,}-{hi:,}")
    return IN_PROCESS


def run_on_dask(client: Any, units: list[Unit], X: np.ndarray, tick: Tick,
                should_stop: ShouldStop | None = None) -> str:
    """Every job on the Dask cluster of ``client``, results taken as they complete."""
    from distributed import as_completed

    from ..cluster import describe

    where = describe(client)
    X_remote = client.scatter(X, broadcast=True)
    # The scheduler places fits freely (it balances them and steals work). The partitions of
    # one detector's scoring are dealt round-robin to the workers (a hint, not a pin): left
    # alone, it runs every one where the fitted model is, so they would queue on one worker
    # while the other idles (X is on every worker; the model is small to move).
    workers = sorted(client.scheduler_info().get("workers", {}))

    def hint(i: int, n_parts: int) -> dict[str, Any]:
        if n_parts < 2 or len(workers) < 2:
            return {}
        return {"workers": [workers[i % len(workers)]], "allow_other_workers": True}

    owner: dict[str, tuple[Unit, str]] = {}
    futures = []
    for unit in units:
        fit = client.submit(fit_job, unit.detector.name, unit.seed, X_remote, unit.training.rows, unit.training.y,
                            pure=False)
        owner[fit.key] = (unit, "fit")
        futures.append(fit)
        for i, (lo, hi) in enumerate(unit.parts):
            part = client.submit(score_job, fit, X_remote, lo, hi, unit.score_rows, pure=False,
                                 **hint(i, len(unit.parts)))
            owner[part.key] = (unit, "score")
            futures.append(part)
    try:
        for future in as_completed(futures):
            if should_stop is not None and should_stop():
                raise Cancelled("re-score cancelled; nothing was written.")
            result = future.result()  # re-raises a job's exception here
            unit, kind = owner[future.key]
            if kind == "fit":
                unit.fitted = result
                tick(f"fitted {unit.detector.name} (seed {unit.seed})")
            else:
                unit.scored.append(result)
                tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {result.lo:,}-{result.lo + len(result.scores):,}")
    finally:
        client.cancel(futures + [X_remote])
    return where
