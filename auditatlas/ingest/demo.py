"""The embedded default corpus: a deterministic simulator of MAADBench escape-room runs.

The dashboard must start offline, so its default store is built from *simulated* rooms written
in the exact file format of the MAADBench runner (``shared/specs/maadbench.md``) and then read
back through the real MAADBench importer, so the demo walks the same path as a real release.
Every file says it is simulated (``config.simulated = true``, ``room.description``, and a
``[simulated]`` prefix on every prompt); the corpus is named ``maadbench-sim`` with kind
``simulated``.

Layout (the runner's)::

    run_<YYYYmmdd_HHMMSS>_<gsm-hard|livecodebench>_<tool|no_tool>_<model>_<temperature>[_nightmare]/
        <YYYYmmddHHMMSS>_EscapeRoom_<room_id>_<escaped|failed>.json

Rules of the simulation, and why
--------------------------------
Allocation
    Rooms are split evenly over the five backbones (room ``r`` goes to backbone ``r % 5``) and,
    within a backbone, evenly over the four difficulties and then over (temperature, clue
    domain, tool mode). Claude Opus 4.8 runs at temperature 0.0 only, the other four at
    0.0/0.3/0.6: the paper ran Opus at one temperature ("x3 temperatures except Opus"). A
    non-nightmare run folder receives easy, medium and hard rooms in turn, so ``room_000j``
    has the same difficulty and the same content (puzzles, clues, items) in every folder of a
    clue domain: a room group spans backbones, temperatures and tool modes, which is what the
    benchmark's room-disjoint split groups by.

Pipelines (one attempt per puzzle; a room stops at its first failed puzzle)
    easy/medium/hard, per puzzle: OBSERVE_CLUE, SOLVE_CLUE, OBSERVE_ITEM,
    [UNIT_TOOL_CALL x n], APPLY_DELTA, OBSERVE_PUZZLE. Nightmare, per iteration: SELECT_PUZZLE,
    OBSERVE_PLANNED_CLUE, SOLVE_CLUE, OBSERVE_ITEM, [UNIT_TOOL_CALL x n], APPLY_DELTA.
    Tool calls happen only in tool runs and only when the clue's delta unit differs from the
    item's unit (``CONVERSION_SHARE`` of puzzles); one call, or two (``SECOND_CALL_SHARE``:
    the item manager re-checks the conversion).

When a puzzle is solved
    A puzzle is solved exactly when its APPLY_DELTA is correct (and, in nightmare rooms, its
    SELECT_PUZZLE picked the right puzzle): the environment judges the item's final state, and
    that is what APPLY_DELTA's verifier checks. A wrong tool call matters through the value
    APPLY_DELTA applies (the cascade below; such failures carry ``TOOL_RESULT_USE_ERROR``),
    but an item manager that ignores a bad tool result and converts correctly still solves
    the puzzle. This rule reproduces the paper's Table 2 from its Table 3: a backbone's
    per-puzzle success is then its APPLY_DELTA rate, and e.g. Opus gives
    (.758 + .758^2 + .758^4 + (.948 x .758)^4) / 4 = 48% overall, Table 2 says 48.0%.
    OBSERVE_PUZZLE failing means the observer disagrees with the real state; it does not
    change whether the puzzle was solved.

Failures and their cascade
    Within one puzzle (iteration), a step fails with its backbone's base probability ``f``
    while no earlier step of the puzzle has failed, and with ``1 - (1 - f) ** CASCADE[a]``
    once one has (error propagation: FM-5). So propagation chains occur, a backbone that never
    fails an action (``f = 0``) still never fails it, and probabilities stay in [0, 1].

Calibration (rates only)
    The base probabilities are not typed in: :func:`base_failure_rates` solves for them so that
    the *expected observed* share of failed labeled steps per backbone and action equals the
    paper's Table 3 (``TABLE3``). The expectation is exact for this model: it follows every
    pipeline variant (difficulty x tool mode x number of tool calls), the cascade, and the
    stop-at-first-failure rule (puzzle ``j`` of a room is attempted only when puzzles
    ``0..j-1`` were solved, which changes how many steps each room contributes). A
    fixed-point iteration solves it in milliseconds. Nothing is tuned against any detector's
    score.

    Pass/fail draws use stratified uniforms (each block of ``STRATA`` draws holds exactly one
    value in each 1/STRATA interval, in a random order), one stream per backbone x action x
    cascade state. The draws stay random and independent across streams, but the observed
    rates sit much closer to their expectation than plain Bernoulli draws would, so a corpus
    of 1,500 rooms already lands within a point or two of Table 3.

How failing steps look (documented mechanics, for detectors to find)
    A failed LLM step is a schema error without a verifier status (``FORMAT_SHARE`` of them:
    the importer labels it an anomaly and a format error) or a ``wrong`` status with an error
    code of its action from the spec's list. Failing steps reason longer (more output tokens,
    longer duration, ``superlong_reasoning`` sometimes), rarely time out, report lower
    confidence and more often carry minor schema errors. Nightmare rooms also hold unverified
    SELECT_PUZZLE steps (``UNLABELED_SELECT_SHARE`` of iterations): the planner first picks a
    locked or missing puzzle, the runner refuses it without a verdict, and the planner picks
    again. Temperature changes only the spread of token counts, not the success rates.

Determinism
    Everything comes from ``numpy.random.Generator`` seeded with ``seed`` (no wall clock):
    timestamps count from a fixed epoch, room content is seeded by (domain, difficulty, room
    number), behaviour by the room's index, verdicts by the per-backbone streams. The same
    ``(rooms, seed)`` gives byte-identical files.

Scale
    Rooms are generated and written one at a time (memory stays flat), so ``rooms=100_000``
    works for benchmarks; above ``PRETTY_LIMIT`` rooms the files are written compact instead
    of pretty-printed (the importer reads both). Measured here (2 cores): 1,500 rooms simulate
    in about 3 s (the whole demo build, with import and store write, about 5 s); 100,000 rooms
    simulate in about 140 s with 45 MB resident and 1.3 GB of compact JSON on disk.
"""
from __future__ import annotations

import importlib
import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

Progress = Callable[[float, str], None]

CORPUS = "maadbench-sim"
KIND = "simulated"
SOURCE = "demo"
DEFAULT_ROOMS = 1500
PRETTY_LIMIT = 10_000
EPOCH = datetime(2026, 3, 2, 8, 0, 0)  # fixed: no wall clock anywhere


@dataclass(frozen=True)
class Backbone:
    model: str  # config.llm.model, as the runner writes it
    provider: str
    temperatures: tuple[float, ...]
    out_tokens: int  # typical output tokens of a correct step (reasoners write more)
    tokens_per_s: float
    overconfidence: float  # how little a failing step's confidence drops (GPT-4.1 barely)


BACKBONES: tuple[Backbone, ...] = (
    Backbone("claude-opus-4-8", "anthropic", (0.0,), 380, 45.0, 0.2),
    Backbone("claude-sonnet-4-6", "anthropic", (0.0, 0.3, 0.6), 320, 65.0, 0.3),
    Backbone("deepseek-reasoner", "deepseek", (0.0, 0.3, 0.6), 950, 38.0, 0.4),
    Backbone("gpt-4.1", "openai", (0.0, 0.3, 0.6), 190, 90.0, 0.8),
    Backbone("gpt-5.4", "openai", (0.0, 0.3, 0.6), 520, 60.0, 0.5),
)

# Paper Table 3: action success rate (%) on MAADBench-Full, the calibration targets.
TABLE3: dict[str, dict[str, float]] = {
    "claude-opus-4-8": {"SP": 94.8, "OC": 99.8, "SC": 80.4, "OI": 97.8, "TC": 73.1, "AD": 75.8, "OP": 98.9},
    "claude-sonnet-4-6": {"SP": 97.1, "OC": 97.5, "SC": 80.5, "OI": 95.4, "TC": 64.9, "AD": 60.1, "OP": 100.0},
    "deepseek-reasoner": {"SP": 100.0, "OC": 46.2, "SC": 63.0, "OI": 73.3, "TC": 60.8, "AD": 64.1, "OP": 97.0},
    "gpt-4.1": {"SP": 70.9, "OC": 97.2, "SC": 71.3, "OI": 94.3, "TC": 63.2, "AD": 41.5, "OP": 98.4},
    "gpt-5.4": {"SP": 65.6, "OC": 98.3, "SC": 78.7, "OI": 93.5, "TC": 67.0, "AD": 53.3, "OP": 99.9},
}

ACTIONS: dict[str, str] = {  # short -> trace action name
    "SP": "SELECT_PUZZLE", "OC": "OBSERVE_CLUE", "SC": "SOLVE_CLUE", "OI": "OBSERVE_ITEM",
    "TC": "UNIT_TOOL_CALL", "AD": "APPLY_DELTA", "OP": "OBSERVE_PUZZLE",
}
SHORTS = tuple(ACTIONS)
AGENTS = {"SP": "planner", "OC": "observer", "SC": "clue_solver", "OI": "observer",
          "TC": "item_manager", "AD": "item_manager", "OP": "observer"}
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "nightmare")
N_PUZZLES = {"easy": 1, "medium": 2, "hard": 4, "nightmare": 4}
DOMAINS: tuple[str, ...] = ("gsm-hard", "livecodebench")
TOOL_MODES: tuple[bool, ...] = (True, False)

# Cascade exponents: once a puzzle has a failed step, a later step fails with 1-(1-f)^k.
# APPLY_DELTA consumes everything upstream, so it suffers most; the observer's final check
# disagrees far more often when the room state is off.
CASCADE = {"SP": 1.0, "OC": 2.0, "SC": 2.5, "OI": 2.0, "TC": 2.0, "AD": 3.0, "OP": 4.0}
CONVERSION_SHARE = 0.7  # puzzles whose clue delta unit differs from the item's unit
SECOND_CALL_SHARE = 0.25  # of converting tool puzzles, the item manager calls the tool twice
MAX_UNIT_TOOL_CALLS = 3
FORMAT_SHARE = 0.06  # failed LLM steps that fail as schema errors with no verifier status
UNLABELED_SELECT_SHARE = 0.08  # nightmare iterations opening with a refused, unverified pick
STRATA = 20
SUPERLONG_TOKENS = 4000

# item type -> (tool, item unit, {unit: size of one unit in item units})
ITEMS: dict[str, tuple[str, str, dict[str, float]]] = {
    "clock": ("convert_time", "minutes", {"minutes": 1.0, "hours": 60.0, "seconds": 1 / 60}),
    "thermostat": ("convert_temperature_delta", "celsius", {"celsius": 1.0, "fahrenheit": 5 / 9, "kelvin": 1.0}),
    "compass": ("convert_angle", "degrees", {"degrees": 1.0, "radians": 180 / math.pi, "turns": 360.0}),
    "scale": ("convert_mass", "grams", {"grams": 1.0, "kilograms": 1000.0, "pounds": 453.592}),
}
ITEM_DESC = {"clock": "a brass wall clock", "thermostat": "a wall thermostat",
             "compass": "a ship's compass dial", "scale": "a balance scale"}
TOOLS = [ITEMS[t][0] for t in ITEMS]
SCENERY = ("a dusty bookshelf", "a flickering lamp", "a locked cabinet", "a faded map",
           "a cracked mirror", "a ticking pipe", "a pile of crates", "a velvet curtain")


# =============================================================================================
# Calibration: exact expected observed rates, and the base probabilities that hit Table 3


def _fail_prob(f: float, action: str, dirty: bool) -> float:
    return 1.0 - (1.0 - f) ** CASCADE[action] if dirty else f


def _pipeline(nightmare: bool, n_calls: int) -> tuple[str, ...]:
    head = ("SP", "OC", "SC", "OI") if nightmare else ("OC", "SC", "OI")
    tail = ("AD",) if nightmare else ("AD", "OP")
    return head + ("TC",) * n_calls + tail


def _call_mix(tools: bool) -> tuple[tuple[int, float], ...]:
    """(number of tool calls, probability) for one puzzle of a run."""
    if not tools:
        return ((0, 1.0),)
    return ((0, 1 - CONVERSION_SHARE), (1, CONVERSION_SHARE * (1 - SECOND_CALL_SHARE)),
            (2, CONVERSION_SHARE * SECOND_CALL_SHARE))


def _puzzle_moments(pipe: tuple[str, ...], f: dict[str, float]) -> tuple[dict, dict, float]:
    """Expected steps and failures per action in one attempted puzzle, and P(solved).

    Tracks three states: clean (nothing failed yet), dirty but still solvable, and dirty with
    a failed SELECT_PUZZLE/APPLY_DELTA (the puzzle is lost).
    """
    clean, dirty_ok, dirty_lost = 1.0, 0.0, 0.0
    counts: dict[str, float] = {}
    fails: dict[str, float] = {}
    for a in pipe:
        fc, fd = _fail_prob(f[a], a, False), _fail_prob(f[a], a, True)
        counts[a] = counts.get(a, 0.0) + 1.0
        fails[a] = fails.get(a, 0.0) + clean * fc + (dirty_ok + dirty_lost) * fd
        if a in ("SP", "AD"):
            clean, dirty_ok, dirty_lost = clean * (1 - fc), dirty_ok * (1 - fd), dirty_lost + clean * fc + dirty_ok * fd
        else:
            clean, dirty_ok = clean * (1 - fc), dirty_ok + clean * fc
    return counts, fails, clean + dirty_ok


def expected_profile(f: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """Expected observed failure share per action and room success per difficulty.

    Rooms are equally split over difficulties and tool modes (as :func:`simulate` allocates
    them); puzzle ``j`` is attempted only if puzzles ``0..j-1`` were solved.
    """
    counts = dict.fromkeys(SHORTS, 0.0)
    fails = dict.fromkeys(SHORTS, 0.0)
    success = dict.fromkeys(DIFFICULTIES, 0.0)
    for difficulty in DIFFICULTIES:
        for tools in TOOL_MODES:
            c_mix, f_mix, q = dict.fromkeys(SHORTS, 0.0), dict.fromkeys(SHORTS, 0.0), 0.0
            for n_calls, p in _call_mix(tools):
                c, fl, qv = _puzzle_moments(_pipeline(difficulty == "nightmare", n_calls), f)
                for a in c:
                    c_mix[a] += p * c[a]
                    f_mix[a] += p * fl[a]
                q += p * qv
            n = N_PUZZLES[difficulty]
            attempts = sum(q ** j for j in range(n))
            for a in SHORTS:
                counts[a] += attempts * c_mix[a]
                fails[a] += attempts * f_mix[a]
            success[difficulty] += q ** n / len(TOOL_MODES)
    rates = {a: fails[a] / counts[a] for a in SHORTS if counts[a] > 0}
    return rates, success


@lru_cache(maxsize=None)
def base_failure_rates(model: str) -> dict[str, float]:
    """Per-action base failure probabilities whose *observed* rates equal Table 3.

    Solved, not tuned: a fixed-point iteration rescales each ``f`` by target / expected
    observed rate (the observed rate grows almost in proportion to ``f``) until every action
    is within 1e-12 of its target; it converges in a few dozen cheap evaluations.
    """
    target = {a: 1.0 - TABLE3[model][a] / 100.0 for a in SHORTS}
    f = dict(target)
    for _ in range(1000):
        rates, _success = expected_profile(f)
        if max(abs(rates[a] - target[a]) for a in SHORTS) < 1e-12:
            return f
        f = {a: min(0.999, f[a] * target[a] / rates[a]) if rates[a] > 0 else 0.0 for a in SHORTS}
    raise RuntimeError(f"calibration for {model} did not converge")  # pragma: no cover - a model bug


def calibration_table() -> dict[str, dict[str, Any]]:
    """For the docs and the report: base rates, expected observed rates and room success."""
    out = {}
    for bb in BACKBONES:
        f = base_failure_rates(bb.model)
        rates, success = expected_profile(f)
        out[bb.model] = {"base_failure": f, "expected_success": {a: 1 - r for a, r in rates.items()},
                         "expected_room_success": success}
    return out


class _Stratified:
    """Uniforms in shuffled blocks of STRATA, one per 1/STRATA interval (stratified sampling)."""

    __slots__ = ("rng", "buf")

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.buf: list[float] = []

    def draw(self) -> float:
        if not self.buf:
            u = (self.rng.permutation(STRATA) + self.rng.random(STRATA)) / STRATA
            self.buf = u.tolist()
        return self.buf.pop()


# =============================================================================================
# Room content (shared by every backbone, temperature and tool mode of a clue domain)


def _gsm_problem(rng: np.random.Generator) -> tuple[str, int]:
    a, b = int(rng.integers(3, 40)), int(rng.integers(2, 25))
    c = int(rng.integers(1, a * b))
    kind = int(rng.integers(3))
    if kind == 0:
        return f"A bakery bakes {a} trays of {b} rolls and sells {c} rolls. How many rolls are left?", a * b - c
    if kind == 1:
        return f"A train runs {a} km per hour for {b} hours, then {c} km more. How far does it go?", a * b + c
    return f"{a} workers each pack {b} boxes and {c} boxes are damaged. How many good boxes remain?", a * b - c


def _lcb_problem(rng: np.random.Generator) -> tuple[str, int]:
    nums = [int(x) for x in rng.integers(1, 60, size=int(rng.integers(5, 9)))]
    k = int(rng.integers(10, 50))
    kind = int(rng.integers(3))
    if kind == 0:
        return f"Given nums = {nums}, return how many elements are greater than {k}.", sum(x > k for x in nums)
    if kind == 1:
        return f"Given nums = {nums}, return the sum of the even elements.", sum(x for x in nums if x % 2 == 0)
    return f"Given nums = {nums}, return the largest element minus the smallest.", max(nums) - min(nums)


def _room_content(seed: int, domain: str, difficulty: str, number: int) -> dict:
    """Puzzles, clues and items of room ``number`` of this domain and difficulty."""
    rng = np.random.default_rng([seed, 1, DOMAINS.index(domain), DIFFICULTIES.index(difficulty), number])
    n = N_PUZZLES[difficulty]
    types = [str(t) for t in rng.permutation(list(ITEMS))[:n]]
    puzzles = []
    for i, item_type in enumerate(types):
        tool, unit, sizes = ITEMS[item_type]
        text, answer = (_gsm_problem if domain == "gsm-hard" else _lcb_problem)(rng)
        others = [u for u in sizes if u != unit]
        convert = bool(rng.random() < CONVERSION_SHARE)
        delta_unit = str(rng.choice(others)) if convert else unit
        state = float(int(rng.integers(0, 360)))
        converted = round(answer * sizes[delta_unit], 3)
        pid = f"P{i + 1}"
        prefix = "gsmhard" if domain == "gsm-hard" else "lcb"
        puzzles.append({
            "puzzle_id": pid,
            "clue": {"item_id": f"note_{pid.lower()}", "hint": f"The note mentions {ITEM_DESC[item_type]}.",
                     "domain": domain, "item_type": item_type, "problem": text, "answer": answer,
                     "delta_unit": delta_unit, "problem_id": f"{prefix}_{int(rng.integers(0, 10000)):04d}",
                     "problem_metadata": {"source": "simulated", "template": text.split(" ")[0]}},
            "item": {"item_id": f"{item_type}_{i + 1}", "type": item_type, "desc": ITEM_DESC[item_type],
                     "state": state, "unit": unit, "trap": False},
            "fake_items": [{"item_id": f"{item_type}_decoy_{i + 1}", "type": item_type, "is_fake": True,
                            "desc": f"a second, painted-on {item_type}"}],
            "fake_clues": [{"item_id": f"note_{pid.lower()}_torn", "is_fake": True,
                            "hint": "A torn note with a different number."}],
            "solved": False,
            "level": difficulty,
            "traps": [],
            "ground_truth": {"delta": answer, "delta_unit": delta_unit, "tool": tool,
                             "converted_delta": converted, "target_state": round(state + converted, 3),
                             "needs_conversion": convert},
        })
    k = int(rng.integers(2, 5))
    scenery = [str(s) for s in rng.choice(SCENERY, size=k, replace=False)]
    room = {"difficulty": difficulty, "n_puzzles": n, "n_scenery": k, "scenery": scenery,
            "clue_domain": domain, "puzzles": puzzles,
            "description": "Simulated escape room generated by Audit Atlas; not MAADBench data."}
    if difficulty == "nightmare":
        room.update(_nightmare_dag(puzzles))
    return room


def _nightmare_dag(puzzles: list[dict]) -> dict:
    """A chain P1 -> P2 -> P3 -> P4, where P3 is also open at the start but a dead end then."""
    names = [p["item"]["type"] for p in puzzles]
    dag_ids = [f"P_{t}" for t in names]
    nodes = []
    for i, t in enumerate(names):
        nodes.append({"puzzle_id": dag_ids[i], "item_name": t,
                      "unlocks": [dag_ids[i + 1]] if i + 1 < len(names) else [],
                      "locks": [dag_ids[1]] if i == 2 else []})
    initial = {d: ("available" if i in (0, 2) else "locked") for i, d in enumerate(dag_ids)}
    return {
        "type": "planning",
        "item_states": {p["item"]["item_id"]: p["item"]["state"] for p in puzzles},
        "solved_ids": [],
        "dag": {"initial_state": initial, "solution_paths": [dag_ids],
                "deadend_paths": [[dag_ids[2], dag_ids[0]]],
                "first_move_classes": {dag_ids[0]: "solution", dag_ids[2]: "deadend"},
                "puzzles": nodes},
    }


# =============================================================================================
# One room run


@dataclass
class _Room:
    """What one simulated run of one room needs while its trace is being written."""

    backbone: Backbone
    temperature: float
    domain: str
    tools: bool
    difficulty: str
    room_id: str
    room: dict
    rng: np.random.Generator
    streams: dict
    f: dict[str, float]
    n_calls: int = 0  # tool calls of the puzzle being played
    trace: list = field(default_factory=list)
    failed_steps: list = field(default_factory=list)


def _verdict(sim: _Room, a: str, dirty: bool) -> bool:
    """True when this step fails (cascade state ``dirty``), from the stratified stream."""
    return sim.streams[(a, dirty)].draw() < _fail_prob(sim.f[a], a, dirty)


def _stats(sim: _Room, a: str, failed: bool, iteration: int) -> dict:
    rng, bb = sim.rng, sim.backbone
    base_in = {"SP": 820, "OC": 610, "SC": 470, "OI": 520, "TC": 300, "AD": 660, "OP": 700}[a]
    tokens_in = int(base_in + 140 * iteration + rng.integers(0, 120))
    scale = {"SP": 1.1, "OC": 0.6, "SC": 1.4, "OI": 0.6, "TC": 0.25, "AD": 1.0, "OP": 0.5}[a]
    spread = 0.3 + 0.3 * sim.temperature
    tokens_out = bb.out_tokens * scale * float(rng.lognormal(0.0, spread))
    superlong = False
    if failed:
        tokens_out *= 1.7  # a wrong step reasons longer before it commits
        if a != "TC" and rng.random() < 0.08:
            tokens_out, superlong = tokens_out * 6 + SUPERLONG_TOKENS, True
    elif a != "TC" and rng.random() < 0.01:
        tokens_out, superlong = tokens_out * 6 + SUPERLONG_TOKENS, True
    tokens_out = int(max(8, tokens_out))
    timed_out = failed and a != "TC" and rng.random() < 0.015
    duration = 180.0 if timed_out else round(0.6 + tokens_out / bb.tokens_per_s * float(rng.lognormal(0, 0.2)), 3)
    return {"duration": duration, "input_tokens": tokens_in, "output_tokens": tokens_out,
            "timed_out": bool(timed_out), "superlong_reasoning": superlong}


def _confidence(sim: _Room, failed: bool) -> float:
    if failed:
        drop = 1.0 - sim.backbone.overconfidence
        return round(float(sim.rng.beta(8 - 4 * drop, 1.5 + 1.5 * drop)), 3)
    return round(float(sim.rng.beta(9, 1.4)), 3)


def _codes(*codes: str) -> str:
    return "+".join(c.upper() for c in codes)


def _llm_entry(sim: _Room, a: str, pid: str, puzzle: dict, failed: bool, iteration: int, *,
               action: str | None = None, prompt: str, message: str, structured: dict,
               verification: dict, extra: dict | None = None) -> dict:
    """One LLM action entry; a failure may surface as a schema error without a status."""
    rng = sim.rng
    stats = _stats(sim, a, failed, iteration)
    schema_errors: dict[str, str] = {}
    if failed and rng.random() < FORMAT_SHARE:
        # The reply did not parse into the action's schema: the runner records the schema
        # errors and no verdict (the importer labels this a format anomaly).
        key = next(iter(structured), "answer")
        schema_errors = {key: "missing required field"}
        structured = {k: v for k, v in structured.items() if k != key}
        verification = None
    elif stats["timed_out"]:
        structured = {"error": "timeout after 180 s"}
    elif rng.random() < (0.1 if failed else 0.01):
        schema_errors = {"reasoning": "expected a string, got null"}  # minor, verdict still given
    entry = {
        "puzzle_id": pid,
        "action_id": None,  # rewritten once the trace is complete
        "action": action or ACTIONS[a],
        "agent": AGENTS[a],
        "input": "[simulated] " + prompt,
        "output_message": message,
        "output_structured": structured,
        "schema_errors": schema_errors,
        "confidence": _confidence(sim, failed),
        "call_statistic": stats,
        "attempt": 1,
        "clue_domain": sim.domain,
        "clue_problem_id": puzzle["clue"]["problem_id"] if puzzle else None,
    }
    if extra:
        entry.update(extra)
    if verification is not None:
        entry["verification"] = verification
    sim.trace.append(entry)
    if failed:
        sim.failed_steps.append(entry)
    return entry


def _observe_clue(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int, planned: bool) -> bool:
    failed = _verdict(sim, "OC", dirty)
    clue = puzzle["clue"]
    picked = puzzle["fake_clues"][0]["item_id"] if failed else clue["item_id"]
    text = "A torn note with a different number." if failed else clue["problem"]
    _llm_entry(
        sim, "OC", pid, puzzle, failed, it, action="OBSERVE_PLANNED_CLUE" if planned else None,
        prompt=f"You are the observer in {sim.room_id}. Find the clue for puzzle {pid} among "
               f"{clue['item_id']} and {puzzle['fake_clues'][0]['item_id']}.",
        message=f"The clue on {picked} reads: {text}",
        structured={"clue_item_id": picked, "problem": text},
        verification={"answer": picked, "gt": clue["item_id"], "status": "wrong" if failed else "correct",
                      "desc": "clue_select_wrong" if failed else None,
                      "error_type": _codes("clue_select_wrong") if failed else None},
    )
    return failed


def _solve_clue(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int) -> bool:
    failed = _verdict(sim, "SC", dirty)
    clue, rng = puzzle["clue"], sim.rng
    answer, unit, codes = clue["answer"], clue["delta_unit"], []
    if failed:
        kind = rng.random()
        if kind < 0.8 or len(ITEMS[puzzle["item"]["type"]][2]) < 2:
            answer, codes = answer + int(rng.choice([-1, 1])) * int(rng.integers(1, 12)), ["math_value_wrong"]
        if kind >= 0.75:
            unit = str(rng.choice([u for u in ITEMS[puzzle["item"]["type"]][2] if u != unit]))
            codes.append("math_unit_wrong")
    _llm_entry(
        sim, "SC", pid, puzzle, failed, it,
        prompt=f"Solve the clue and give the delta with its unit. Problem: {clue['problem']}",
        message=f"Working it through, the answer is {answer} {unit}.",
        structured={"answer": answer, "unit": unit},
        verification={"answer": answer, "gt": clue["answer"], "answer_unit": unit, "gt_unit": clue["delta_unit"],
                      "status": "wrong" if failed else "correct", "desc": "+".join(codes) or None,
                      "error_type": _codes(*codes) if codes else None},
    )
    return failed


def _observe_item(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int) -> bool:
    failed = _verdict(sim, "OI", dirty)
    item, rng = puzzle["item"], sim.rng
    item_id, state, code = item["item_id"], item["state"], None
    if failed:
        if rng.random() < 0.5:
            item_id, code = puzzle["fake_items"][0]["item_id"], "item_type_wrong"
        else:
            state, code = item["state"] + float(rng.integers(1, 30)), "item_state_wrong"
    _llm_entry(
        sim, "OI", pid, puzzle, failed, it,
        prompt=f"Inspect the room and report the item the clue refers to ({item['type']}) and its state.",
        message=f"{item_id} shows {state:g} {item['unit']}.",
        structured={"item_id": item_id, "item_type": item["type"], "state": state, "unit": item["unit"]},
        verification={"answer": item_id, "gt": item["item_id"], "answer_state": state, "gt_state": item["state"],
                      "status": "wrong" if failed else "correct", "desc": code,
                      "error_type": _codes(code) if code else None},
    )
    return failed


_TC_ERRORS = ("TC_WRONG_ARGUMENTS", "TC_WRONG_TOOL", "TC_UNKNOWN_UNIT", "TC_UNKNOWN_TOOL",
              "TC_INVALID_REQUEST", "TC_EXECUTION_ERROR", "TC_MISSING_MESSAGE")
_TC_ERROR_WEIGHTS = np.array([0.42, 0.16, 0.12, 0.06, 0.1, 0.08, 0.06])


def _tool_call(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int, call_index: int) -> tuple[bool, dict]:
    failed = _verdict(sim, "TC", dirty)
    item, gt, rng = puzzle["item"], puzzle["ground_truth"], sim.rng
    tool, unit, sizes = ITEMS[item["type"]]
    expected_args = {"value": gt["delta"], "from_unit": gt["delta_unit"], "to_unit": unit}
    actual_tool, args, status, result, error, codes = tool, dict(expected_args), "success", gt["converted_delta"], None, []
    if failed:
        code = str(rng.choice(_TC_ERRORS, p=_TC_ERROR_WEIGHTS / _TC_ERROR_WEIGHTS.sum()))
        codes = [code]
        if code == "TC_WRONG_ARGUMENTS":
            args["value"] = gt["delta"] + int(rng.integers(1, 9))
            result = round(args["value"] * sizes[gt["delta_unit"]], 3)
        elif code == "TC_WRONG_TOOL":
            actual_tool = str(rng.choice([t for t in TOOLS if t != tool]))
            status, result, error = "error", None, "units belong to another dimension"
            codes.append("TC_DIMENSION_MISMATCH")
        elif code == "TC_UNKNOWN_UNIT":
            args["to_unit"] = unit[:-1] + "z"
            status, result, error = "error", None, f"unknown unit '{args['to_unit']}'"
        elif code == "TC_UNKNOWN_TOOL":
            actual_tool, status, result, error = "convert_units", "error", None, "no such tool"
        elif code == "TC_INVALID_REQUEST":
            args = {"value": str(gt["delta"])}
            status, result, error = "error", None, "arguments do not match the tool schema"
        elif code == "TC_EXECUTION_ERROR":
            status, result, error = "error", None, "conversion raised an exception"
        else:  # TC_MISSING_MESSAGE: the call carried no arguments at all
            args, status, result, error = {}, "error", None, "empty tool message"
    entry = {
        "puzzle_id": pid,
        "action_id": None,
        "action": "UNIT_TOOL_CALL",
        "agent": "item_manager",
        "parent_action_id": None,  # set to the APPLY_DELTA's id once ids are rewritten
        "call_index": call_index,
        "input": {"available_tools": TOOLS,
                  "received_input": {"item_type": item["type"], "item_state": item["state"], "item_unit": unit,
                                     "delta": gt["delta"], "delta_unit": gt["delta_unit"]}},
        "output_structured": {"tool_name": actual_tool, "arguments": args},
        "tool_execution": {"status": status, "result": result, "error": error},
        "call_statistic": _stats(sim, "TC", failed, it),
        "attempt": 1,
        "clue_domain": sim.domain,
        "clue_problem_id": puzzle["clue"]["problem_id"],
        "verification": {"status": "wrong" if failed else "correct", "anomaly_label": int(failed),
                         "error_type": "+".join(codes) or None, "desc": codes[0] if codes else None,
                         "expected_tool": tool, "expected_arguments": expected_args,
                         "expected_result": gt["converted_delta"], "actual_tool": actual_tool,
                         "actual_arguments": args},
    }
    sim.trace.append(entry)
    if failed:
        sim.failed_steps.append(entry)
    return failed, entry


def _apply_delta(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int, tool_failed: bool) -> tuple[bool, dict]:
    failed = _verdict(sim, "AD", dirty)
    item, gt, rng = puzzle["item"], puzzle["ground_truth"], sim.rng
    new_state, code = gt["target_state"], None
    if failed:
        # A wrong conversion result that was used is the tool's fault as much as the agent's.
        code = "TOOL_RESULT_USE_ERROR" if tool_failed and rng.random() < 0.7 else "apply_delta_wrong"
        new_state = round(gt["target_state"] + float(rng.choice([-1, 1])) * float(rng.integers(1, 40)), 3)
    entry = _llm_entry(
        sim, "AD", pid, puzzle, failed, it,
        prompt=f"Apply the solved delta to {item['item_id']} (state {item['state']:g} {item['unit']}).",
        message=f"Setting {item['item_id']} to {new_state:g} {item['unit']}.",
        structured={"item_id": item["item_id"], "new_state": new_state, "unit": item["unit"]},
        verification={"answer": new_state, "gt": gt["target_state"], "status": "wrong" if failed else "correct",
                      "desc": code, "error_type": code.upper() if code else None},
        extra={"eval_result": {"state_before": item["state"], "state_after": new_state,
                               "target_state": gt["target_state"], "solved": not failed}},
    )
    return failed, entry


def _observe_puzzle(sim: _Room, pid: str, puzzle: dict, dirty: bool, it: int, solved: bool) -> bool:
    failed = _verdict(sim, "OP", dirty)
    seen = (not solved) if failed else solved
    _llm_entry(
        sim, "OP", pid, puzzle, failed, it,
        prompt=f"Look at puzzle {pid} and say whether it is solved.",
        message=f"Puzzle {pid} looks {'solved' if seen else 'unsolved'} to me.",
        structured={"solved": seen},
        verification={"answer": seen, "gt": solved, "observer_solved": seen, "actual_solved": solved,
                      "agreement": not failed, "status": "wrong" if failed else "correct",
                      "desc": "observer_disagrees" if failed else None,
                      "error_type": _codes("observer_disagrees") if failed else None},
    )
    return failed


def _select_puzzle(sim: _Room, it: int, solved_ids: list[str]) -> tuple[bool, str]:
    """Nightmare planning: maybe a refused unverified pick, then the verified pick."""
    puzzles, rng = sim.room["puzzles"], sim.rng
    ids = [p["puzzle_id"] for p in puzzles]
    correct = ids[it]
    avail = [correct] + (["P3"] if it < 2 and len(ids) > 2 else [])  # P3 is open early, a dead end
    base = {"avail_at_select": avail, "solved_at_select": list(solved_ids)}
    if rng.random() < UNLABELED_SELECT_SHARE:
        locked = [p for p in ids[it + 1:] if p not in avail]
        picked = str(rng.choice(locked)) if locked and rng.random() < 0.6 else f"P{len(ids) + 1}"
        _llm_entry(sim, "SP", picked, None, False, it,
                   prompt=f"Choose the next puzzle. Solved so far: {', '.join(solved_ids) or 'none'}.",
                   message=f"I will work on {picked} next.", structured={"puzzle_id": picked},
                   verification=None, extra=base)
    failed = _verdict(sim, "SP", False)
    picked, code = correct, None
    if failed:
        if it < 2 and len(ids) > 2:
            picked, code = "P3", "leads_to_deadend"
        elif it + 1 < len(ids):
            picked, code = ids[it + 1], "puzzle_locked"
        else:
            picked, code = str(rng.choice(solved_ids)), "already_solved"
    _llm_entry(
        sim, "SP", picked, None, failed, it,
        prompt=f"Choose the next puzzle. Solved so far: {', '.join(solved_ids) or 'none'}.",
        message=f"{picked} is open and moves us forward, so I pick it.",
        structured={"puzzle_id": picked},
        verification={"answer": picked, "gt": correct, "status": "wrong" if failed else "correct",
                      "desc": code, "error_type": _codes(code) if code else None},
        extra=base,
    )
    return failed, picked


def _play_puzzle(sim: _Room, it: int, solved_ids: list[str]) -> bool:
    """One puzzle (nightmare: one iteration). Returns whether it was solved."""
    nightmare = sim.difficulty == "nightmare"
    dirty, lost, pid = False, False, f"P{it + 1}"
    sim.n_calls = 0
    if nightmare:
        dirty, picked = _select_puzzle(sim, it, solved_ids)
        lost, pid = dirty, picked
    puzzle = next(p for p in sim.room["puzzles"] if p["puzzle_id"] == pid)
    if sim.tools and puzzle["ground_truth"]["needs_conversion"]:
        sim.n_calls = 2 if sim.rng.random() < SECOND_CALL_SHARE else 1
    dirty |= _observe_clue(sim, pid, puzzle, dirty, it, planned=nightmare)
    dirty |= _solve_clue(sim, pid, puzzle, dirty, it)
    dirty |= _observe_item(sim, pid, puzzle, dirty, it)
    tool_entries, tool_failed = [], False
    for k in range(1, sim.n_calls + 1):
        failed, entry = _tool_call(sim, pid, puzzle, dirty, it, k)
        tool_entries.append(entry)
        tool_failed |= failed
        dirty |= failed
    ad_failed, ad_entry = _apply_delta(sim, pid, puzzle, dirty, it, tool_failed)
    for entry in tool_entries:
        entry["_parent"] = ad_entry
    dirty |= ad_failed
    solved = not (lost or ad_failed)
    if not nightmare:
        _observe_puzzle(sim, pid, puzzle, dirty, it, solved)
    return solved


def _finish_ids(room_id: str, trace: list[dict]) -> None:
    """The runner's id rewrite: <room>_<puzzle>_<ACTION>_<k>, k the 1-based trace position."""
    for k, entry in enumerate(trace, start=1):
        if entry["action"] == "UNIT_TOOL_CALL":
            entry["action_id"] = f"{room_id}_{entry['puzzle_id']}_APPLY_DELTA_TOOL_CALL_{entry['call_index']}_{k}"
        else:
            entry["action_id"] = f"{room_id}_{entry['puzzle_id']}_{entry['action']}_{k}"
    for entry in trace:
        parent = entry.pop("_parent", None)
        if parent is not None:
            entry["parent_action_id"] = parent["action_id"]


def _config(bb: Backbone, temperature: float, domain: str, tools: bool, nightmare: bool, seed: int) -> dict:
    roles = (["planner"] if nightmare else []) + ["observer", "clue_solver", "item_manager"]
    return {
        "simulated": True,
        "generator": "auditatlas.ingest.demo (simulated MAADBench-format data, not the real benchmark)",
        "llm": {"provider": bb.provider, "model": bb.model, "max_tokens": 8192, "temperature": temperature,
                "seed": seed},
        "agents": [{"role": r, "prompt": f"[simulated] You are the {r.replace('_', ' ')} of an escape-room team."}
                   for r in roles],
        "system": {"architecture": "sequential"},
        "benchmark": {"clue_domain": domain, "unit_tools": tools, "max_unit_tool_calls": MAX_UNIT_TOOL_CALLS},
    }


def _run_room(sim: _Room, seed: int) -> dict:
    """Play the room to its end and return the runner's JSON document."""
    solved_ids: list[str] = []
    for it in range(N_PUZZLES[sim.difficulty]):
        if not _play_puzzle(sim, it, solved_ids):
            break
        solved_ids.append(f"P{it + 1}")
    _finish_ids(sim.room_id, sim.trace)
    room = sim.room
    for p in room["puzzles"]:
        p["solved"] = p["puzzle_id"] in solved_ids
    if sim.difficulty == "nightmare":
        room["solved_ids"] = list(solved_ids)
    n_total = len(room["puzzles"])
    escaped = len(solved_ids) == n_total
    failed = sim.failed_steps
    report = {"escaped": escaped, "n_failed_steps": len(failed),
              "failed_action_ids": [e["action_id"] for e in failed]}
    if not escaped:
        report["failed_puzzle"] = f"P{len(solved_ids) + 1}"
        if failed:
            first = failed[0]
            report["first_failure"] = {"action_id": first["action_id"], "action": first["action"],
                                       "desc": (first.get("verification") or {}).get("desc") or "schema_error"}
    timing = round(sum(e["call_statistic"]["duration"] for e in sim.trace) + 0.4 * len(sim.trace), 3)
    return {
        "config": _config(sim.backbone, sim.temperature, sim.domain, sim.tools, sim.difficulty == "nightmare", seed),
        "room": room,
        "trace": sim.trace,
        "failure_report": report,
        "escaped": escaped,
        "puzzles_solved": len(solved_ids),
        "puzzles_total": n_total,
        "timing_sec": timing,
    }


# =============================================================================================
# The corpus


def _folders() -> list[tuple[str, float, str, bool, bool]]:
    """Every run folder key in a fixed order (its index fixes the folder's start time)."""
    keys = []
    for bb in BACKBONES:
        for t in bb.temperatures:
            for d in DOMAINS:
                for tools in TOOL_MODES:
                    for nightmare in (False, True):
                        keys.append((bb.model, t, d, tools, nightmare))
    return keys


def _allocate(r: int) -> tuple[int, float, str, bool, str]:
    """Room ``r`` -> (backbone index, temperature, domain, tool mode, difficulty)."""
    b, i = r % len(BACKBONES), r // len(BACKBONES)
    bb = BACKBONES[b]
    difficulty = DIFFICULTIES[i % len(DIFFICULTIES)]
    combos = [(t, d, tools) for t in bb.temperatures for d in DOMAINS for tools in TOOL_MODES]
    t, d, tools = combos[(i // len(DIFFICULTIES)) % len(combos)]
    return b, t, d, tools, difficulty


def simulate(out_dir: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0, *, progress: Progress | None = None) -> dict:
    """Write ``rooms`` simulated room runs under ``out_dir`` in the runner's layout.

    Returns counts: rooms, files, run folders, steps, escaped rooms.
    """
    if rooms < 1:
        raise ValueError("rooms must be at least 1.")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pretty = rooms <= PRETTY_LIMIT
    folder_index = {key: n for n, key in enumerate(_folders())}
    start = EPOCH + timedelta(days=int(seed) % 365)
    folders: dict[tuple, dict] = {}
    # One verdict stream per backbone x action x cascade state. (Finer streams, e.g. per
    # pipeline variant, were tried: their many partial blocks made the rates noisier.)
    streams = [
        {(a, dirty): _Stratified(np.random.default_rng([seed, 2, b, k, int(dirty)]))
         for k, a in enumerate(SHORTS) for dirty in (False, True)}
        for b in range(len(BACKBONES))
    ]
    rates = [base_failure_rates(bb.model) for bb in BACKBONES]
    n_steps = n_escaped = 0
    for r in range(rooms):
        b, temperature, domain, tools, difficulty = _allocate(r)
        bb = BACKBONES[b]
        key = (bb.model, temperature, domain, tools, difficulty == "nightmare")
        folder = folders.get(key)
        if folder is None:
            folder = folders[key] = _open_folder(out_dir, key, start + timedelta(hours=6 * folder_index[key]))
        number = folder["rooms"]
        folder["rooms"] += 1
        # Non-nightmare folders cycle easy/medium/hard, so room number // 3 indexes the content.
        content_no = number if difficulty == "nightmare" else number // 3
        room = _room_content(seed, domain, difficulty, content_no)
        room_id = f"room_{number:04d}"
        room = {"room_id": room_id, **room}
        sim = _Room(bb, temperature, domain, tools, difficulty, room_id, room,
                    np.random.default_rng([seed, 3, r]), streams[b], rates[b])
        doc = _run_room(sim, seed)
        stamp = folder["clock"].strftime("%Y%m%d%H%M%S")
        name = f"{stamp}_EscapeRoom_{room_id}_{'escaped' if doc['escaped'] else 'failed'}.json"
        text = json.dumps(doc, indent=2 if pretty else None, separators=None if pretty else (",", ":"))
        (folder["path"] / name).write_text(text, encoding="utf-8")
        folder["clock"] += timedelta(seconds=max(1, math.ceil(doc["timing_sec"])) + 5)
        n_steps += len(doc["trace"])
        n_escaped += doc["escaped"]
        if progress and (r + 1) % 250 == 0:
            progress((r + 1) / rooms, f"simulated {r + 1:,} of {rooms:,} rooms")
    return {"rooms": rooms, "files": rooms, "run_folders": len(folders), "steps": n_steps, "escaped": n_escaped}


def _open_folder(out_dir: Path, key: tuple, started: datetime) -> dict:
    model, temperature, domain, tools, nightmare = key
    name = (f"run_{started.strftime('%Y%m%d_%H%M%S')}_{domain}_{'tool' if tools else 'no_tool'}_{model}_"
            f"{temperature:.1f}{'_nightmare' if nightmare else ''}")
    path = out_dir / name
    path.mkdir(parents=True, exist_ok=True)
    return {"path": path, "rooms": 0, "clock": started}


def build_demo(store: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0, progress: Progress | None = None) -> dict:
    """Simulate rooms, read them with the MAADBench importer and write source ``demo``.

    The rooms go through the real importer (``corpus="maadbench-sim"``, ``kind="simulated"``)
    so the demo exercises the same path as a release. The temporary folder is always removed.
    """
    from ..store import write_source
    from . import Context
    from . import maadbench

    report = progress or (lambda fraction, message: None)
    began = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="auditatlas-demo-"))
    try:
        report(0.0, f"simulating {rooms:,} rooms")
        counts = simulate(tmp, rooms, seed, progress=lambda x, m: report(0.6 * x, m))
        report(0.6, "reading the simulated rooms with the MAADBench importer")
        batch = maadbench.read(tmp, Context(store=Path(store)), corpus=CORPUS, kind=KIND, source=SOURCE)
        report(0.9, "writing the store")
        entry = write_source(store, batch.source, batch.tables,
                             meta={"format": "maadbench", "origin": "simulated", "rooms": rooms, "seed": seed,
                                   **batch.meta})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(1.0, "demo corpus ready")
    return {**counts, "rows": entry["rows"], "notes": batch.notes, "seconds": round(time.perf_counter() - began, 2)}


def build_default_store(store: Path, rooms: int = DEFAULT_ROOMS, seed: int = 0,
                        progress: Progress | None = None) -> dict:
    """The store the dashboard starts on: the simulated MAADBench corpus plus the CatchBench release.

    CatchBench is added only when its adapter can be imported (it ships with the package);
    its absence is reported in the result, not raised, so the demo still starts.
    """
    report = progress or (lambda fraction, message: None)
    result = {"demo": build_demo(store, rooms, seed, lambda x, m: report(0.85 * x, m))}
    try:
        importlib.import_module("auditatlas.ingest.catchbench")
    except ImportError as exc:
        result["catchbench"] = {"skipped": f"the CatchBench adapter cannot be imported ({exc})."}
    else:
        from . import ingest

        report(0.85, "adding the CatchBench release")
        batch, entry = ingest("catchbench", None, store)
        result["catchbench"] = {"rows": entry["rows"], "notes": batch.notes}
    report(1.0, "default store ready")
    return result
