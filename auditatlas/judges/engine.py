"""Run an LLM judge over a slice's runs and write its prediction set: ``auditatlas judge``.

The flow, one run at a time per connection:

1. the slice's runs are read a page at a time (``queries/sql/judge_runs.sql``, then their steps),
   so memory holds one page of trace text, never the corpus;
2. ``max_connections`` workers take runs from a bounded queue and play the protocol on each
   (``protocols``); every call goes through the reply cache first (``cache``), and only a call
   the cache does not hold reaches the endpoint (``endpoint``), its reply committed to the
   cache the moment it arrives;
3. what each run concluded is kept (a pick, or a list of scores: a few numbers per run);
4. at the end, the judge's sets (one per corpus of the slice) are written as one store source,
   ``judge-<hash of the judge's configuration>``, atomically (``store.SourceWriter``): a re-run
   of the same judge replaces its set instead of adding a second entrant, and costs only the
   calls the cache does not hold.

Killed (``kill -9``, Ctrl-C) or cancelled, a run writes no set and loses no reply: the next run
of the same judge reads every reply already paid for from the cache and continues. A budget
(``max_calls``, ``max_cost``) stops new calls cleanly: the set is written over the runs judged
so far, and says how many were not.

The set, like the released Who&When judges (``ingest/catchbench.py``): ``method='llm_judge'``,
``family='llm'``, ``supervision='zero-shot'``, ``granularity='step'``, ``protocol`` and
``model``, ``seed`` null, ``origin='rescore'``; one prediction per step of each judged run,
``split='all'``. A pick scores its step ``n + 1`` and the others 0, as the released ranking
rule scores a top pick with an empty ranking (``queries/sql/resolve_rankings.sql``),
``pred_label`` null as there; a step-score set scores each step with its probability,
``pred_label = p >= 0.5``. An abstained run has no prediction (never a hit, never a miss): it is
listed in ``params.abstained_runs``, and the POST localization board states the share.
``params`` is the provenance: protocol, model, base URL (without credentials), template text and
sha256, calls, tokens, latency, retries, cost, abstentions by reason.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import AtlasError
from ..progress import Progress, or_quiet
from ..view_state.state_fields import copy_shared
from . import contract
from .cache import Cached, ReplyCache, reply_key
from .endpoint import Endpoint, api_key, check_base_url, public_url
from .protocols import PROTOCOL_RUNS, Outcome, RunView
from .templates import Template, load

SOURCE_PREFIX = "judge-"
PAGE_RUNS = 200
DEFAULT_WINDOW = 40

ShouldStop = Callable[[], bool]


class Cancelled(AtlasError):
    """The run was cancelled; nothing was written (every reply so far is in the cache)."""


@dataclass
class JudgeConfig:
    protocol: str
    model: str
    base_url: str
    api_key_env: str = "OPENAI_API_KEY"
    template: str | None = None  # a user's template file; None: the shipped one
    with_truth: bool = False
    max_connections: int = 4
    max_calls: int | None = None  # new calls (the cache's are free)
    max_cost: float | None = None  # in the prices' currency, from price_in / price_out
    price_in: float | None = None  # per million tokens in
    price_out: float | None = None  # per million tokens out
    timeout_s: float = 120.0
    max_retries: int = 5
    temperature: float | None = 0.0
    max_tokens: int | None = None
    window: int = DEFAULT_WINDOW  # step-score: steps per call

    def check(self) -> None:
        if not self.model.strip():
            raise AtlasError("--model is empty; name the model the endpoint serves.")
        check_base_url(self.base_url)
        if self.max_cost is not None and (self.price_in is None or self.price_out is None):
            raise AtlasError("--max-cost needs --price-in and --price-out (per million tokens) to count a cost.")
        for name in ("price_in", "price_out", "max_cost"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise AtlasError(f"--{name.replace('_', '-')} must be a number >= 0, not {value}.")


@dataclass
class Meter:
    """What the run spent: counted as calls come back, never holding a reply."""

    new_calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    new_tokens_in: int = 0
    new_tokens_out: int = 0
    calls_without_usage: int = 0
    reserved: int = 0  # new calls started (the budget counts these)
    spent: float = 0.0  # cost of the new calls
    cost: float = 0.0  # cost of every reply the set used (cached ones at their price now)
    latencies: array = field(default_factory=lambda: array("d"))
    # The calling phase: from the first new call's start to the last reply (perf_counter), so
    # a rate excludes reading the slice and writing the set.
    first_call: float | None = None
    last_reply: float | None = None
    empty_finish: Counter = field(default_factory=Counter)

    def calling_seconds(self) -> float | None:
        if self.first_call is None or self.last_reply is None:
            return None
        return self.last_reply - self.first_call

    def latency(self) -> dict[str, float | None]:
        if not self.latencies:
            return {"mean_s": None, "p50_s": None, "p95_s": None, "total_s": 0.0}
        ordered = sorted(self.latencies)

        def q(f: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(f * len(ordered)))], 4)
        return {"mean_s": round(sum(ordered) / len(ordered), 4), "p50_s": q(0.5), "p95_s": q(0.95),
                "total_s": round(sum(ordered), 3)}


class BudgetSpent(Exception):
    """The run-wide budget allows no further call."""


@dataclass
class JudgeResult:
    source: str | None
    set_ids: list[str]
    runs: int
    judged: int
    abstained: int
    not_judged: int
    meter: Meter
    notes: list[str]
    seconds: float
    params: dict[str, dict] = field(default_factory=dict)  # set_id -> provenance

    def lines(self) -> list[str]:
        m = self.meter
        cost = f", cost {m.spent:.4f} this run" if m.spent or m.cost else ""
        return [f"{self.judged:,} of {self.runs:,} runs judged, {self.abstained:,} abstained, "
                f"{self.not_judged:,} not judged; {m.new_calls:,} new calls, {m.cached_calls:,} from the cache, "
                f"{m.failed_calls:,} failed, {m.retries:,} retries; tokens in {m.tokens_in:,}, out {m.tokens_out:,}"
                f"{cost}; {self.seconds:.1f} s"]


def judge_source(config: JudgeConfig, template: Template, slice_: Mapping[str, Any]) -> str:
    """The store source of a judge: the same judge on the same slice is the same source."""
    identity = json.dumps({"protocol": config.protocol, "model": config.model, "template": template.sha256,
                           "with_truth": config.with_truth, "slice": slice_, "window": config.window,
                           "temperature": config.temperature, "max_tokens": config.max_tokens}, sort_keys=True)
    return SOURCE_PREFIX + hashlib.sha256(identity.encode()).hexdigest()[:12]


def judge(root: str | Path, config: JudgeConfig, slice: Mapping[str, Any] | None = None, *,
          progress: Progress | None = None, should_stop: ShouldStop | None = None,
          runs: Collection[str] | None = None, provenance: Mapping[str, Any] | None = None) -> JudgeResult:
    """Judge the slice's runs and write the set(s); see the module docstring.

    ``runs``: only these runs of the slice (the follower's: a live corpus's settled, sampled
    runs), the set still the judge's one source for the slice; ``provenance``: keys added to
    each set's ``params`` (the follower's sampling rule)."""
    config.check()
    template = load(config.protocol, config.template)
    slice_ = copy_shared(slice, drop_empty=True)
    from queries import runner  # a prediction-set writer reads the store through the query layer

    query = runner(root)
    counts = query("judge_runs_count", {"slice": slice_})
    if counts.empty:
        raise AtlasError("the slice holds no run with steps to judge.")
    total = int(counts["runs"].sum()) if runs is None else len(runs)
    chosen = None if runs is None else frozenset(runs)
    began = time.perf_counter()
    report = or_quiet(progress)
    cache = ReplyCache(root)
    try:
        state = _State(config, template, total, report, should_stop)
        _run_loop(lambda: _judge_all(query, slice_, config, template, cache, state, chosen))
    finally:
        cache.close()
    return _write(Path(root), config, template, slice_, state, time.perf_counter() - began, provenance)


def _run_loop(make) -> None:
    """Run the coroutine ``make()`` returns on an event loop of its own: in this thread, or, when
    a loop already runs here (a notebook, a test runner, an app framework), in a thread of its
    own, since ``asyncio.run`` cannot nest."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(make())
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="judge") as pool:
        pool.submit(lambda: asyncio.run(make())).result()


class _State:
    """The run's shared state on the event loop (one thread: no locks)."""

    def __init__(self, config: JudgeConfig, template: Template, total: int, report: Progress,
                 should_stop: ShouldStop | None) -> None:
        self.config, self.template, self.total, self.report = config, template, total, report
        self.should_stop = should_stop
        self.meter = Meter()
        self.outcomes: dict[str, list[tuple[str, int, Outcome]]] = {}  # corpus -> (run, n_steps, outcome)
        self.abstentions: Counter = Counter()
        self.agent_unmatched = 0
        self.done = 0
        self.budget_hit: str | None = None
        self.not_judged = 0
        self.json_mode = True
        self.json_refusal = ""

    def budget_left(self) -> bool:
        c = self.config
        if c.max_calls is not None and self.meter.reserved >= c.max_calls:
            self.budget_hit = self.budget_hit or f"--max-calls {c.max_calls} reached"
        elif c.max_cost is not None and self.meter.spent >= c.max_cost:
            self.budget_hit = self.budget_hit or f"--max-cost {c.max_cost} reached"
        return self.budget_hit is None

    def price(self, tokens_in: int | None, tokens_out: int | None) -> float:
        c = self.config
        if c.price_in is None or c.price_out is None:
            return 0.0
        return ((tokens_in or 0) * c.price_in + (tokens_out or 0) * c.price_out) / 1e6

    def stopped(self) -> bool:
        return bool(self.should_stop and self.should_stop())


async def _judge_all(query, slice_: dict, config: JudgeConfig, template: Template, cache: ReplyCache,
                     state: _State, chosen: frozenset[str] | None = None) -> None:
    endpoint = Endpoint(config.base_url, config.model, api_key(config.api_key_env),
                        max_connections=config.max_connections, timeout_s=config.timeout_s,
                        max_retries=config.max_retries, temperature=config.temperature, max_tokens=config.max_tokens)
    queue: asyncio.Queue = asyncio.Queue(maxsize=2 * config.max_connections)
    play = PROTOCOL_RUNS[config.protocol]

    async def ask(values: Mapping[str, object], parse: Callable[[str | None], contract.Reply]) -> contract.Reply:
        prompt = template.render(values)
        messages = [{"role": "user", "content": prompt}]
        key = reply_key(config.model, template.sha256, messages, endpoint.parameters)
        held = cache.get(key)
        if held is None:
            if state.stopped():
                raise Cancelled("the judge was cancelled; nothing was written (every reply so far is cached).")
            if not state.budget_left():
                raise BudgetSpent()
            state.meter.reserved += 1
            if state.meter.first_call is None:
                state.meter.first_call = time.perf_counter()
            answer = await endpoint.ask(messages)
            state.meter.last_reply = time.perf_counter()
            state.meter.retries += answer.retries
            state.json_mode, state.json_refusal = endpoint.json_mode, endpoint.json_refusal
            if answer.failure is not None:
                state.meter.failed_calls += 1
                raise contract.Abstention(answer.failure, answer.detail)
            held = Cached(answer.content, answer.finish_reason, answer.tokens_in, answer.tokens_out,
                          answer.latency_s, answer.retries, answer.json_mode)
            cache.put(key, config.model, template.sha256, held)
            state.meter.new_calls += 1
            state.meter.new_tokens_in += held.tokens_in or 0
            state.meter.new_tokens_out += held.tokens_out or 0
            state.meter.spent += state.price(held.tokens_in, held.tokens_out)
            state.meter.latencies.append(held.latency_s)
        else:
            state.meter.cached_calls += 1
        m = state.meter
        m.tokens_in += held.tokens_in or 0
        m.tokens_out += held.tokens_out or 0
        m.calls_without_usage += held.tokens_in is None
        m.cost += state.price(held.tokens_in, held.tokens_out)
        if not (held.content or "").strip():
            m.empty_finish[str(held.finish_reason)] += 1
        return parse(held.content)

    async def producer() -> None:
        after = ""
        while True:
            page = query("judge_runs", {"slice": slice_, "after": after, "page": PAGE_RUNS})
            if page.empty:
                break
            ids = page["run_id"].astype(str).tolist()
            after = ids[-1]
            if chosen is not None:
                page = page[page["run_id"].isin(chosen)]
                if page.empty:
                    continue
            steps = query("judge_steps", {"runs": page["run_id"].astype(str).tolist()})
            by_run: dict[str, list[dict]] = {}
            for rec in steps.to_dict(orient="records"):
                by_run.setdefault(rec["run_id"], []).append(rec)
            del steps
            for rec in page.to_dict(orient="records"):
                run_steps = by_run.pop(rec["run_id"], [])
                if not run_steps:
                    continue
                task = rec.get("question") or rec.get("task_id") or rec["run_id"]
                await queue.put(RunView(rec["run_id"], rec["corpus"], str(task), str(rec.get("task_id") or ""),
                                        rec.get("ground_truth"), run_steps))
                if state.budget_hit or state.stopped():
                    break
            if state.budget_hit or state.stopped():
                break
        for _ in range(config.max_connections):
            await queue.put(None)

    async def worker() -> None:
        while True:
            run = await queue.get()
            if run is None:
                return
            if state.budget_hit:
                state.not_judged += 1
                continue
            try:
                outcome = await play(run, ask, config.with_truth, config.window)
                if outcome.agent is None and outcome.kind == "pick" and config.protocol == "all_at_once":
                    state.agent_unmatched += 1
            except contract.Abstention as exc:
                outcome = Outcome("abstain", reason=exc.reason)
                state.abstentions[exc.reason] += 1
            except BudgetSpent:
                state.not_judged += 1
                continue
            state.outcomes.setdefault(run.corpus, []).append((run.run_id, run.n, outcome))
            state.done += 1
            m = state.meter
            state.report(state.done / max(state.total, 1),
                         f"{state.done:,}/{state.total:,} runs; {m.new_calls:,} new calls, {m.cached_calls:,} cached, "
                         f"{sum(state.abstentions.values()):,} abstained")

    try:
        tasks = [asyncio.create_task(producer())] + [asyncio.create_task(worker())
                                                      for _ in range(config.max_connections)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    finally:
        await endpoint.close()
    if state.stopped():
        raise Cancelled("the judge was cancelled; nothing was written (every reply so far is cached).")
    if state.budget_hit:
        state.not_judged = state.total - state.done


def _write(root: Path, config: JudgeConfig, template: Template, slice_: dict, state: _State,
           seconds: float, provenance: Mapping[str, Any] | None = None) -> JudgeResult:
    import pyarrow as pa

    from ..store import SourceWriter

    source = judge_source(config, template, slice_)
    created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    notes: list[str] = []
    if state.budget_hit:
        notes.append(f"{state.budget_hit}: {state.not_judged:,} run(s) not judged; run the same judge again with a "
                     "larger budget to extend the set (the replies so far are cached: they cost nothing again).")
    if not state.json_mode:
        notes.append(f"the endpoint refused JSON mode ({state.json_refusal}); replies were read as plain text by the "
                     "same strict grammar.")
    judged = sum(1 for rows in state.outcomes.values() for _, _, o in rows if o.kind != "abstain")
    abstained = sum(state.abstentions.values())
    result = JudgeResult(None, [], state.total, judged, abstained, state.not_judged, state.meter, notes, seconds)
    pending = []
    for corpus, rows in sorted(state.outcomes.items()):
        set_id = f"{source}-{corpus}"
        params = {**_params(config, template, state, rows, corpus), **(provenance or {})}
        record = {"set_id": set_id, "corpus": corpus, "method": "llm_judge", "family": "llm",
                  "supervision": "zero-shot", "granularity": "step", "protocol": config.protocol,
                  "model": config.model, "seed": None, "params": json.dumps(params, sort_keys=True),
                  "feature_set": None, "slice": json.dumps({**slice_, "corpus": [corpus]}, sort_keys=True),
                  "origin": "rescore", "source_file": source, "created_at": created_at}
        pending.append((record, _predictions(set_id, corpus, rows)))
        result.params[set_id] = params
    if not pending:
        result.notes.append("no run was judged; nothing was written.")
        return result
    with SourceWriter(root, source) as writer:
        for record, predictions in pending:
            writer.append({"prediction_sets": pa.Table.from_pylist([record]), "predictions": predictions})
        writer.commit({"format": "judge", "origin": "auditatlas judge", "sets": len(pending),
                       "protocol": config.protocol, "model": config.model, "slice": slice_})
    result.source = source
    result.set_ids = [r["set_id"] for r, _ in pending]
    return result


def _predictions(set_id: str, corpus: str, rows: list[tuple[str, int, Outcome]]):
    import pyarrow as pa

    run_ids, steps, scores, labels = [], array("q"), array("d"), []
    for run_id, n, outcome in rows:
        if outcome.kind == "abstain":
            continue
        for i in range(n):
            run_ids.append(run_id)
            steps.append(i)
            if outcome.kind == "scores":
                p = outcome.scores[i]
                scores.append(p)
                labels.append(int(p >= 0.5))
            else:
                scores.append(float(n + 1) if outcome.kind == "pick" and i == outcome.step else 0.0)
                labels.append(None)
    n_rows = len(run_ids)
    return pa.table({
        "set_id": pa.array([set_id] * n_rows, pa.string()),
        "corpus": pa.array([corpus] * n_rows, pa.string()),
        "run_id": pa.array(run_ids, pa.string()),
        "step_idx": pa.array(steps, pa.int64()),
        "score": pa.array(scores, pa.float64()),
        "pred_label": pa.array(labels, pa.int8()),
        "split": pa.array(["all"] * n_rows, pa.string()),
    })


def _params(config: JudgeConfig, template: Template, state: _State, rows: list, corpus: str) -> dict:
    m = state.meter
    abstained = [run_id for run_id, _, o in rows if o.kind == "abstain"]
    reasons = Counter(o.reason for _, _, o in rows if o.kind == "abstain")
    judged_runs = len(rows)
    priced = config.price_in is not None and config.price_out is not None
    calls = m.new_calls + m.cached_calls
    return {
        "judge": "auditatlas judge",
        "variant": "auditatlas" + (", with truth" if config.with_truth else "")
                   + ("" if template.origin.startswith("package:") else f", template {template.sha256[:8]}"),
        "protocol": config.protocol, "model": config.model, "base_url": public_url(config.base_url),
        "api_key_env": config.api_key_env,
        "template": {"origin": template.origin, "sha256": template.sha256, "text": template.text},
        "with_truth": config.with_truth,
        "parameters": {"temperature": config.temperature, "max_tokens": config.max_tokens,
                       "window": config.window if config.protocol == "step_score" else None},
        "json_mode": "on" if state.json_mode else f"refused by the endpoint: {state.json_refusal}",
        "reply_contract": "auditatlas.judges.contract",
        "score_rule": ("each step's probability p; pred_label = p >= 0.5" if config.protocol == "step_score" else
                       "the picked step n + 1, every other step 0 (the released ranking rule with no ranking); "
                       "no pick (step-by-step found no mistake): every step 0"),
        "runs": judged_runs, "abstained": len(abstained), "abstained_runs": abstained,
        "abstentions": dict(sorted(reasons.items())),
        "abstention_rate": round(len(abstained) / judged_runs, 4) if judged_runs else None,
        "agent_unmatched": state.agent_unmatched if config.protocol == "all_at_once" else None,
        "not_judged": state.not_judged, "budget": state.budget_hit,
        # The run's figures (every corpus of one judge run shares them).
        "calls": calls, "new_calls": m.new_calls, "cached_calls": m.cached_calls, "failed_calls": m.failed_calls,
        "retries": m.retries, "tokens_in": m.tokens_in, "tokens_out": m.tokens_out,
        "tokens_per_run": round((m.tokens_in + m.tokens_out) / max(state.done, 1), 1),
        "calls_per_run": round(calls / max(state.done, 1), 2),
        "calls_without_usage": m.calls_without_usage, "empty_replies": dict(m.empty_finish),
        "latency": m.latency(),
        "calling_seconds": round(m.calling_seconds(), 3) if m.calling_seconds() is not None else None,
        "price_per_million": {"in": config.price_in, "out": config.price_out} if priced else None,
        "cost": round(m.cost, 6) if priced else None, "cost_this_run": round(m.spent, 6) if priced else None,
        "max_connections": config.max_connections, "timeout_s": config.timeout_s, "max_retries": config.max_retries,
    }
