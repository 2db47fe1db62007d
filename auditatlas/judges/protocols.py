"""The four protocols, each a way to spend calls on one run (Who&When's three, and a per-step
score), written against an ``ask(values, parse)`` coroutine that renders the template with
``values``, makes (or reads from the cache) one call and parses its reply by the contract.

- **all-at-once**: one call with the whole log; the reply names the agent and the step.
- **step-by-step**: the log grows one step per call; the first step the judge calls the mistake
  is the pick (about N calls; none called: the judge found no mistake, a miss on a failed run).
- **binary-search**: each call shows a segment and asks which half holds the mistake ("upper",
  the earlier half, or "lower"); about ceil(log2 N) calls down to one step.
- **step-score**: an anomaly probability per step, one call per run, or per window of
  ``window`` steps for longer runs.

Any abstention ends the run's judging: the run is an abstention with that reason (a pick made
after an unreadable answer would be a guess).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import contract
from .templates import render_log

Ask = Callable[[Mapping[str, object], Callable[[str | None], contract.Reply]], Awaitable[contract.Reply]]


@dataclass
class Outcome:
    """What a judge concluded on one run."""

    kind: str  # pick | none | scores | abstain
    step: int | None = None
    agent: str | None = None
    scores: list[float] | None = None
    reason: str | None = None  # the abstention's reason (contract.REASONS)
    calls: int = 0


@dataclass
class RunView:
    """One run as the protocols read it (its steps' fields from the store)."""

    run_id: str
    corpus: str
    task: str
    task_id: str
    ground_truth: str | None
    steps: list[dict[str, Any]]

    @property
    def n(self) -> int:
        return len(self.steps)

    def agents(self) -> list[str]:
        return list(dict.fromkeys(str(s["agent"]) for s in self.steps if s.get("agent")))


def base_values(run: RunView, shown: Sequence[dict], with_truth: bool) -> dict[str, object]:
    truth = (run.ground_truth or "") if with_truth else ""
    return {
        "task": run.task, "task_id": run.task_id, "ground_truth": truth,
        "truth_block": f"## Correct answer\n{truth}\n\n" if with_truth else "",
        "n_steps": run.n, "first_step": shown[0]["step_idx"] if shown else 0,
        "last_step": shown[-1]["step_idx"] if shown else 0,
        "agents": ", ".join(run.agents()), "log": render_log(shown),
    }


async def all_at_once(run: RunView, ask: Ask, with_truth: bool, window: int) -> Outcome:
    agents = set(run.agents())
    reply = await ask(base_values(run, run.steps, with_truth), lambda text: contract.pick(text, run.n, agents))
    return Outcome("pick", step=reply.step, agent=reply.agent, calls=1)


async def step_by_step(run: RunView, ask: Ask, with_truth: bool, window: int) -> Outcome:
    for k, step in enumerate(run.steps):
        values = {**base_values(run, run.steps[:k + 1], with_truth), "step_idx": k,
                  "step_agent": step.get("agent") or "unknown", "step_action": step.get("action") or "step"}
        reply = await ask(values, contract.mistake)
        if reply.mistake:
            return Outcome("pick", step=k, agent=step.get("agent"), calls=k + 1)
    return Outcome("none", calls=run.n)


async def binary_search(run: RunView, ask: Ask, with_truth: bool, window: int) -> Outcome:
    lo, hi, calls = 0, run.n - 1, 0
    while lo < hi:
        mid = (lo + hi) // 2
        values = {**base_values(run, run.steps[lo:hi + 1], with_truth), "range_start": lo, "range_end": hi,
                  "upper_start": lo, "upper_end": mid, "lower_start": mid + 1, "lower_end": hi}
        reply = await ask(values, contract.half)
        calls += 1
        lo, hi = (lo, mid) if reply.half == "upper" else (mid + 1, hi)
    return Outcome("pick", step=lo, agent=run.steps[lo].get("agent"), calls=calls)


async def step_score(run: RunView, ask: Ask, with_truth: bool, window: int) -> Outcome:
    scores: list[float] = []
    calls = 0
    for start in range(0, run.n, window):
        shown = run.steps[start:start + window]
        asked = range(start, start + len(shown))
        reply = await ask(base_values(run, shown, with_truth), lambda text, asked=asked: contract.scores(text, asked))
        calls += 1
        scores.extend(reply.scores[s] for s in asked)
    return Outcome("scores", scores=scores, calls=calls)


PROTOCOL_RUNS = {"all_at_once": all_at_once, "step_by_step": step_by_step, "binary_search": binary_search,
                 "step_score": step_score}
