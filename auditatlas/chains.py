"""Propagation chains and step roles (MAADBench Figures 8 and 11; shared/specs/analyses.md).

A chain is the sorted set of failed steps (label 1) within one propagation scope (the same run
and puzzle; for corpora without puzzles, the run), kept when it has at least two. Its first
step is the **origin**, its last the **down** step, the rest **mid**. Unlabeled steps are not
failures and do not break a chain: they are simply not part of it.

This is the one-run form (the explorer draws it); slice-wide chains are computed in DuckDB by
the propagation queries, which must agree with it (tests cross-check both).
"""
from __future__ import annotations

from typing import Iterable

ORIGIN, MID, DOWN = "origin", "mid", "down"
ROLES: tuple[str, ...] = (ORIGIN, MID, DOWN)


def step_roles(steps: Iterable[tuple[int, str | None, int | None]]) -> dict[int, str]:
    """``{step_idx: role}`` for the steps of one run that belong to a chain.

    ``steps`` holds ``(step_idx, scope, label)``; a step without a scope is in the run's own
    scope (``None``), as for corpora without puzzles.
    """
    failed: dict[str | None, list[int]] = {}
    for step_idx, scope, label in steps:
        if label == 1:
            failed.setdefault(scope, []).append(int(step_idx))
    roles: dict[int, str] = {}
    for members in failed.values():
        if len(members) < 2:
            continue
        members.sort()
        roles[members[0]] = ORIGIN
        roles[members[-1]] = DOWN
        for step_idx in members[1:-1]:
            roles[step_idx] = MID
    return roles
