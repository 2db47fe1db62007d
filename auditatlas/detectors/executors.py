"""Where the jobs of a list of units run: one after another in this process, or on Dask.

``fit_units`` fits every unit on a matrix (the corpus's, or the rows gathered for the fits);
``score_units`` runs the score jobs over a matrix of rows [lo, hi) of the steps (the corpus's,
or one chunk of it); ``execute`` both on one matrix (the cross-backbone matrix). With a Dask
client (``auditatlas.cluster.get_client``: a local cluster of processes, or an existing
cluster) each matrix is scattered to the workers once and every job receives it plus row
indices; with ``client=None`` the jobs run here (the re-score page's path, and ``--workers 0``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AtlasError
from .jobs import Scored, Unit, fit_job, score_job

Tick = Callable[[str], None]  # called after each job with what it did; may raise Cancelled
ShouldStop = Callable[[], bool]

IN_PROCESS = "in-process"


class Cancelled(AtlasError):
    """The re-score was cancelled; nothing was written."""


def execute(units: list[Unit], X: np.ndarray, client: Any = None, tick: Tick | None = None,
            should_stop: ShouldStop | None = None) -> str:
    """Run every unit's fit and score jobs on matrix ``X`` (on ``client``, else here); returns
    where they ran (``params.executor``). Each unit ends with ``fitted`` and ``scored`` filled in."""
    fit_units(units, X, client, tick, should_stop)
    return score_units(units, X, 0, len(X), client, tick, should_stop)


def fit_units(units: list[Unit], X: np.ndarray, client: Any = None, tick: Tick | None = None,
              should_stop: ShouldStop | None = None, rows: list[np.ndarray] | None = None) -> str:
    """Fit every unit on its training rows of ``X`` (``rows[i]`` for unit i when given: the
    rows of a matrix gathered for the fits); each unit ends with ``fitted``."""
    tick = tick or (lambda message: None)
    rows = rows if rows is not None else [unit.training.rows for unit in units]
    if client is None:
        for unit, fit_rows in zip(units, rows):
            unit.fitted = fit_job(unit.detector.name, unit.seed, X, fit_rows, unit.training.y)
            tick(f"fitted {unit.detector.name} (seed {unit.seed})")
        return IN_PROCESS
    X_remote = client.scatter(X, broadcast=True, hash=False)
    futures = [(client.submit(fit_job, unit.detector.name, unit.seed, X_remote, fit_rows, unit.training.y,
                              pure=False), unit) for unit, fit_rows in zip(units, rows)]
    _gather(client, futures, tick, should_stop, X_remote)
    return executor_name(client)


def score_units(units: list[Unit], X: np.ndarray, lo: int, hi: int, client: Any = None, tick: Tick | None = None,
                should_stop: ShouldStop | None = None) -> str:
    """Run the score jobs of the units' parts within rows [lo, hi), whose features are ``X``
    (row ``lo`` first): a chunk of the steps, or all of them. Each part's scores are added to
    its unit's ``scored``, at their rows among all the steps."""
    tick = tick or (lambda message: None)
    jobs = [(unit, a, b) for unit in units for a, b in unit.parts if lo <= a and b <= hi]
    if client is None:
        for unit, a, b in jobs:
            unit.scored.append(_placed(score_job(unit.fitted, X, a - lo, b - lo, unit.score_rows), lo))
            tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {a:,}-{b:,}")
        return IN_PROCESS
    # The partitions of one detector's scoring are dealt round-robin to the workers (a hint,
    # not a pin): left alone, the scheduler runs every one where the fitted model is, so they
    # would queue on one worker while the other idles (X is on every worker; the model is
    # small to move).
    workers = sorted(client.scheduler_info().get("workers", {}))
    X_remote = client.scatter(X, broadcast=True, hash=False)
    models = {id(unit): client.scatter(unit.fitted, hash=False) for unit in {id(u): u for u, _, _ in jobs}.values()}
    futures: list[tuple[Any, Any]] = []
    for i, (unit, a, b) in enumerate(jobs):
        hint = ({"workers": [workers[i % len(workers)]], "allow_other_workers": True}
                if len(workers) > 1 and len(unit.parts) > 1 else {})
        future = client.submit(score_job, models[id(unit)], X_remote, a - lo, b - lo, unit.score_rows, pure=False,
                               **hint)
        futures.append((future, (unit, lo)))
    _gather(client, futures, tick, should_stop, X_remote, *models.values())
    return executor_name(client)


def _placed(scored: Scored, offset: int) -> Scored:
    scored.lo += offset
    return scored


def executor_name(client: Any) -> str:
    """Where jobs on ``client`` run, as ``params.executor`` records it."""
    if client is None:
        return IN_PROCESS
    from ..cluster import describe

    return describe(client)


def _gather(client: Any, futures: list[tuple[Any, Any]], tick: Tick, should_stop: ShouldStop | None,
            *held: Any) -> None:
    """Take each job's result as it completes: a fit's (its owner a unit) into its unit's
    ``fitted``, a score part's (its owner a unit and the part's offset) into its unit's
    ``scored``; the first failure or a stop cancels the rest."""
    from distributed import as_completed

    owners = {future.key: owner for future, owner in futures}
    pending = [future for future, _ in futures]
    try:
        for future in as_completed(pending):
            if should_stop is not None and should_stop():
                raise Cancelled("re-score cancelled; nothing was written.")
            result = future.result()  # re-raises a job's exception here
            owner = owners[future.key]
            if isinstance(owner, Unit):
                owner.fitted = result
                tick(f"fitted {owner.detector.name} (seed {owner.seed})")
            else:
                unit, offset = owner
                unit.scored.append(_placed(result, offset))
                tick(f"scored {unit.detector.name} (seed {unit.seed}) steps {result.lo:,}-{result.lo + len(result.scores):,}")
    finally:
        client.cancel(pending + list(held))
