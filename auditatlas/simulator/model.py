"""The simulator's behaviour model and its calibration to the paper (Tables 2, 3 and 4).

The model decides, for each step, whether it fails; ``rooms.py`` then writes what such a step
looks like. Its parameters are not typed in: :func:`calibration` solves for them so that the
*expected* figures of a corpus equal the published ones (see the package docstring for the
rules and why they are what they are).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from scipy.optimize import least_squares

from .. import actions
from .published import MAADBENCH_ROOMS, TABLE2, TABLE3, TABLE3_TOLERANCE, TABLE4, TABLE4_TOLERANCE, table2_tolerance


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

# The one action table (auditatlas.actions), in pipeline order, by short name.
SHORTS: tuple[str, ...] = tuple(a.short for a in actions.ACTIONS)
ACTIONS: dict[str, str] = {a.short: a.code for a in actions.ACTIONS}  # short -> trace action name
AGENTS: dict[str, str] = {a.short: a.agent for a in actions.ACTIONS}
SP, OC, SC, OI, TC, AD, OP = (SHORTS.index(s) for s in ("SP", "OC", "SC", "OI", "TC", "AD", "OP"))

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "nightmare")
N_PUZZLES = {"easy": 1, "medium": 2, "hard": 4, "nightmare": 4}
TOOL_MODES: tuple[bool, ...] = (True, False)
CONVERSION_SHARE = 0.7  # puzzles whose clue delta unit differs from the item's unit
SECOND_CALL_SHARE = 0.25  # of converting tool puzzles, the item manager calls the tool twice
FORMAT_SHARE = 0.06  # failed LLM steps that fail as schema errors with no verifier status
UNLABELED_SELECT_SHARE = 0.08  # nightmare iterations opening with a refused, unverified pick

# Error carrying (by data flow, specs/maadbench.md "Dependencies"): which earlier failures of
# the same puzzle a step reads. SOLVE_CLUE and OBSERVE_ITEM read the observed clue (a torn
# note names another problem and another item); a tool call and APPLY_DELTA read everything
# upstream. OBSERVE_ITEM does not read the clue's *answer*, OBSERVE_PUZZLE reads the real room
# state, and a wrong SELECT_PUZZLE loses the puzzle without corrupting what is observed of it.
CARRIES_CLUE = (SC, OI)  # carry an OBSERVE_CLUE failure
CARRIES_ALL = (TC, AD)  # carry every failure of OC, SC, OI and earlier tool calls
SOURCES = (OC, SC, OI, TC)  # failures that later steps can carry


@dataclass(frozen=True)
class Calibration:
    """Solved parameters of one backbone.

    ``base_failure[a]``: probability that action ``a`` fails on its own, at a difficulty of
    shift 0; ``difficulty_shift[d]``: log-odds added to every action's own failure in rooms
    of difficulty ``d`` (the shifts sum to 0); ``carry``: probability that one failed
    upstream step passes its error on to a step that reads it (noisy-OR over the failed
    upstream steps).
    """

    model: str
    base_failure: dict[str, float]
    difficulty_shift: dict[str, float]
    carry: float

    def failure(self, difficulty: str) -> tuple[float, ...]:
        """Own failure probability of each action (SHORTS order) in rooms of ``difficulty``."""
        return _failures(self.base_failure, self.difficulty_shift[difficulty])


def fail_probability(own: float, carry: float, carried: int) -> float:
    """A step fails on its own, or through any of ``carried`` failed upstream steps."""
    return 1.0 - (1.0 - own) * (1.0 - carry) ** carried


def carried_failures(action: int, clue_failed: bool, upstream_failures: int) -> int:
    """How many failed upstream steps of the puzzle ``action`` reads (see CARRIES_*)."""
    if action in CARRIES_CLUE:
        return int(clue_failed)
    if action in CARRIES_ALL:
        return upstream_failures
    return 0


@dataclass(frozen=True)
class Iteration:
    """What the model decided for one puzzle of a room (nightmare: one iteration).

    ``steps`` are the labeled steps in trace order (short action names) with, per step,
    whether it failed and how many failed upstream steps it carried.
    """

    puzzle: int  # 0-based index of the puzzle the team works on (a wrong pick: another one)
    pick_error: str | None  # nightmare: the wrong pick's error code, None when the pick was right
    steps: tuple[str, ...]
    failed: tuple[bool, ...]
    carried: tuple[int, ...]
    solved: bool


Draw = Callable[[str, int], float]  # (what is decided, carried failures) -> a uniform in [0, 1)


def play_room(difficulty: str, tools: bool, conversion: Sequence[bool], failure: tuple[float, ...], carry: float,
              draw: Draw) -> list[Iteration]:
    """Decide every verdict of one room run, by the rules ``expected_profile`` takes the expectation of.

    ``conversion[j]``: puzzle ``j`` needs a unit conversion (room content); ``failure``: each
    action's own failure probability at this difficulty. Every random choice is a uniform
    from ``draw`` (verdicts by action and carrying, ``"second"`` for a second tool call,
    ``"repick"`` for which solved puzzle a wrong last pick returns to). Nothing here touches
    text, so the corpus can replay a room's decisions cheaply.
    """
    nightmare, n = difficulty == "nightmare", N_PUZZLES[difficulty]
    record: list[tuple[str, bool, int]] = []  # the current iteration's steps

    def step(a: int, carrying: int) -> bool:
        fails = draw(SHORTS[a], carrying) < fail_probability(failure[a], carry, carrying)
        record.append((SHORTS[a], fails, carrying))
        return fails

    plan: list[Iteration] = []
    solved: list[int] = []
    for it in range(n):
        record.clear()
        target, pick_error = it, None
        if nightmare and step(SP, 0):
            if it < 2 and n > 2:
                target, pick_error = 2, "leads_to_deadend"  # P3 is open early but a dead end
            elif it + 1 < n:
                target, pick_error = it + 1, "puzzle_locked"
            else:
                target = solved[min(int(draw("repick", 0) * len(solved)), len(solved) - 1)]
                pick_error = "already_solved"
        calls = 0
        if tools and conversion[target]:
            calls = 2 if draw("second", 0) < SECOND_CALL_SHARE else 1
        clue_failed = step(OC, 0)
        upstream = int(clue_failed)
        for a in (SC, OI) + (TC,) * calls:
            upstream += step(a, carried_failures(a, clue_failed, upstream))
        ok = not step(AD, carried_failures(AD, clue_failed, upstream)) and pick_error is None
        if not nightmare:
            step(OP, 0)
        steps, failed, carried = zip(*record)
        plan.append(Iteration(target, pick_error, steps, failed, carried, ok))
        if not ok:
            break
        solved.append(it)
    return plan


def _failures(base: dict[str, float], shift: float) -> tuple[float, ...]:
    out = []
    for a in SHORTS:
        f = base[a]
        out.append(0.0 if f <= 0.0 else 1.0 / (1.0 + math.exp(-(math.log(f / (1.0 - f)) + shift))))
    return tuple(out)


def _pipeline(nightmare: bool, n_calls: int) -> tuple[int, ...]:
    head = (SP, OC, SC, OI) if nightmare else (OC, SC, OI)
    tail = (AD,) if nightmare else (AD, OP)
    return head + (TC,) * n_calls + tail


def _call_mix(tools: bool) -> tuple[tuple[int, float], ...]:
    """(number of tool calls, probability) for one puzzle of a run."""
    if not tools:
        return ((0, 1.0),)
    return ((0, 1 - CONVERSION_SHARE), (1, CONVERSION_SHARE * (1 - SECOND_CALL_SHARE)),
            (2, CONVERSION_SHARE * SECOND_CALL_SHARE))


def _next_state(state: tuple, a: int, failed: bool) -> tuple:
    """State (SELECT_PUZZLE failed, OBSERVE_CLUE failed, upstream failures, APPLY_DELTA failed)."""
    if not failed:
        return state
    sp, oc, k, ad = state
    return (sp or a == SP, oc or a == OC, k + (a in SOURCES), ad or a == AD)


def _puzzle(pipe: tuple[int, ...], f: tuple[float, ...], carry: float) -> tuple[list, list, list, float]:
    """Exact expectations for one attempted puzzle.

    Returns expected failures per action, the part of them in a solved puzzle, the part in an
    iteration whose SELECT_PUZZLE failed, and P(solved). A forward pass gives the probability
    of each state before each step, a backward pass the probability that a state still ends
    solved; a failure at step ``i`` in state ``s`` is silent with the latter's value after it.
    """
    start = (False, False, 0, False)
    forward: list[dict[tuple, float]] = [{start: 1.0}]
    for a in pipe:
        nxt: dict[tuple, float] = {}
        for state, mass in forward[-1].items():
            p = fail_probability(f[a], carry, carried_failures(a, state[1], state[2]))
            for failed, w in ((True, p), (False, 1.0 - p)):
                if w > 0.0:
                    key = _next_state(state, a, failed)
                    nxt[key] = nxt.get(key, 0.0) + mass * w
        forward.append(nxt)
    # ends_solved[i][s]: probability that state s before step i ends in a solved puzzle
    ends_solved: list[dict[tuple, float]] = [{}] * len(pipe) + [
        {s: float(not (s[0] or s[3])) for s in forward[-1]}]
    for i in range(len(pipe) - 1, -1, -1):
        a, after, here = pipe[i], ends_solved[i + 1], {}
        for state in forward[i]:
            p = fail_probability(f[a], carry, carried_failures(a, state[1], state[2]))
            v = 0.0
            if p > 0.0:
                v += p * after[_next_state(state, a, True)]
            if p < 1.0:
                v += (1.0 - p) * after[state]
            here[state] = v
        ends_solved[i] = here
    n = len(SHORTS)
    fails, silent, lost_pick = [0.0] * n, [0.0] * n, [0.0] * n
    for i, a in enumerate(pipe):
        for state, mass in forward[i].items():
            p = fail_probability(f[a], carry, carried_failures(a, state[1], state[2]))
            if p <= 0.0:
                continue
            failed_state = _next_state(state, a, True)
            fails[a] += mass * p
            silent[a] += mass * p * ends_solved[i + 1][failed_state]
            if failed_state[0]:
                lost_pick[a] += mass * p
    return fails, silent, lost_pick, ends_solved[0][start]


@dataclass(frozen=True)
class Profile:
    """Expected figures of a corpus (rooms split evenly over difficulties and tool modes)."""

    action_success: dict[str, float]  # Table 3, % (labeled steps)
    room_success: dict[str, float]  # Table 2, % per difficulty
    silent_failure: float  # Table 4, % of action failures (formatting errors apart)
    silent_failure_all: float  # the same over every anomaly, formatting errors included


def expected_profile(cal: Calibration) -> Profile:
    """The exact expectation of the three published figures under the model.

    Follows every pipeline variant (difficulty x tool mode x number of tool calls), error
    carrying, the stop-at-first-failed-puzzle rule (puzzle ``j`` of a room is attempted only
    when puzzles ``0..j-1`` were solved), formatting errors (``FORMAT_SHARE`` of failed LLM
    steps, never tool calls) and the nightmare rule that a wrong pick in the last iteration
    is an already-solved puzzle, so that iteration's failures are silent. (Exact up to one
    negligible term: that re-picked puzzle's tool-call count is drawn as for a fresh puzzle.)
    """
    n = len(SHORTS)
    steps, fails, silent = [0.0] * n, [0.0] * n, [0.0] * n
    room_success = {}
    for difficulty in DIFFICULTIES:
        f = cal.failure(difficulty)
        nightmare, n_puzzles = difficulty == "nightmare", N_PUZZLES[difficulty]
        room_success[difficulty] = 0.0
        for tools in TOOL_MODES:
            c_mix, f_mix, s_mix, l_mix, q = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n, 0.0
            for n_calls, share in _call_mix(tools):
                pipe = _pipeline(nightmare, n_calls)
                fl, sl, ll, qv = _puzzle(pipe, f, cal.carry)
                for a in pipe:
                    c_mix[a] += share
                for i in range(n):
                    f_mix[i] += share * fl[i]
                    s_mix[i] += share * sl[i]
                    l_mix[i] += share * ll[i]
                q += share * qv
            attempts = sum(q ** j for j in range(n_puzzles))
            last = q ** (n_puzzles - 1) if nightmare else 0.0
            for i in range(n):
                steps[i] += attempts * c_mix[i]
                fails[i] += attempts * f_mix[i]
                silent[i] += attempts * s_mix[i] + last * l_mix[i]
            room_success[difficulty] += 100.0 * q ** n_puzzles / len(TOOL_MODES)
    keep = [1.0 if i == TC else 1.0 - FORMAT_SHARE for i in range(n)]  # action failures only
    return Profile(
        action_success={a: 100.0 * (1.0 - fails[i] / steps[i]) for i, a in enumerate(SHORTS) if steps[i] > 0},
        room_success=room_success,
        silent_failure=100.0 * sum(k * s for k, s in zip(keep, silent)) / sum(k * x for k, x in zip(keep, fails)),
        silent_failure_all=100.0 * sum(silent) / sum(fails),
    )


@cache
def calibration(model: str) -> Calibration:
    """Parameters whose expected profile lands on Tables 3, 2 and 4 for ``model``. Solved, not tuned.

    The solution shipped in ``calibration.json`` is used when it was solved from this very
    model and these tables (its key hashes their source); otherwise it is solved here
    (:func:`solve_calibration`, about a second per backbone, paid by every process that
    simulates rooms: the app's first launch, each Dask worker, each test process).
    """
    stored = _stored_solutions().get(model)
    return _unpack(model, stored if stored is not None else solve_calibration(model))


def _free_actions(model: str) -> list[str]:
    """The actions the paper saw fail for ``model``: the ones with an unknown of their own."""
    return [a for a in SHORTS if TABLE3[model][a] < 100.0]


def _unpack(model: str, x: Sequence[float]) -> Calibration:
    free = _free_actions(model)
    base = dict.fromkeys(SHORTS, 0.0)
    for a, v in zip(free, x):
        base[a] = 1.0 / (1.0 + math.exp(-v))
    shifts = [float(s) for s in x[len(free):len(free) + 3]]
    shifts.append(-sum(shifts))
    return Calibration(model, base, dict(zip(DIFFICULTIES, shifts)), 1.0 / (1.0 + math.exp(-x[-1])))


def solve_calibration(model: str) -> list[float]:
    """The unknowns (log-odds) solved for ``model``.

    Unknowns: each action's own failure probability (an action the paper never saw fail
    stays at 0), three free difficulty shifts (the fourth makes them sum to 0) and the carry
    probability. Equations: the seven Table 3 rates, the four Table 2 cells and the Table 4
    rate, each divided by its tolerance (3 points; Table 2: 5 points or two binomial standard
    errors at MAADBench's size), solved in the least-squares sense (Levenberg-Marquardt on
    log-odds). Twelve equations, eleven unknowns: under the model a puzzle is solved exactly
    when its APPLY_DELTA (and pick) is right, so Table 2 and Table 3's APPLY_DELTA column are
    tied; the published numbers nearly satisfy that tie, and the solver spreads what is left.
    """
    t3, t2, t4 = TABLE3[model], TABLE2[model], TABLE4[model]
    free = _free_actions(model)
    cell_rooms = MAADBENCH_ROOMS // (len(BACKBONES) * len(DIFFICULTIES))
    t2_tol = {d: table2_tolerance(t2[d], cell_rooms) for d in DIFFICULTIES}

    def residuals(x) -> list[float]:
        prof = expected_profile(_unpack(model, x))
        out = [(prof.action_success[a] - t3[a]) / TABLE3_TOLERANCE for a in free]
        out += [(prof.room_success[d] - t2[d]) / t2_tol[d] for d in DIFFICULTIES]
        out.append((prof.silent_failure - t4) / TABLE4_TOLERANCE)
        return out

    x0 = [math.log((100.0 - t3[a]) / t3[a]) for a in free] + [0.0, 0.0, 0.0, 0.0]
    solution = least_squares(residuals, x0, method="lm", xtol=1e-12, ftol=1e-12)
    return [float(v) for v in solution.x]


# The solutions, solved once and shipped: `python -m auditatlas.simulator` rewrites the
# file after a change to the model, the published tables or the action vocabulary.
CALIBRATION_FILE = Path(__file__).with_name("calibration.json")


def solution_key() -> str:
    """What a shipped solution was solved from: the source of the model, tables and actions."""
    from . import published

    digest = hashlib.sha256()
    for source in (Path(__file__), Path(published.__file__), Path(actions.__file__)):
        digest.update(source.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _stored_solutions() -> dict[str, list[float]]:
    try:
        shipped = json.loads(CALIBRATION_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return shipped.get("solutions", {}) if shipped.get("key") == solution_key() else {}


def write_calibration_file() -> Path:
    """Solve every backbone and write the shipped file (atomically)."""
    doc = {"key": solution_key(), "solutions": {bb.model: solve_calibration(bb.model) for bb in BACKBONES}}
    scratch = CALIBRATION_FILE.with_suffix(".tmp")
    scratch.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(scratch, CALIBRATION_FILE)
    _stored_solutions.cache_clear()
    calibration.cache_clear()
    return CALIBRATION_FILE


def calibration_table() -> dict[str, dict]:
    """For the docs and the report: solved parameters and expected vs published figures."""
    out = {}
    for bb in BACKBONES:
        cal = calibration(bb.model)
        prof = expected_profile(cal)
        out[bb.model] = {
            "base_failure": cal.base_failure, "difficulty_shift": cal.difficulty_shift, "carry": cal.carry,
            "table3": {a: (prof.action_success[a], TABLE3[bb.model][a]) for a in SHORTS},
            "table2": {d: (prof.room_success[d], TABLE2[bb.model][d]) for d in DIFFICULTIES},
            "table4": (prof.silent_failure, TABLE4[bb.model]), "silent_failure_all": prof.silent_failure_all,
        }
    return out
