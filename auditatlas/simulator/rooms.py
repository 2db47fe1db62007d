"""One simulated room run: the room's content and the trace its agents write.

What fails is decided beforehand (``model.play_room``); this module only writes the steps, and
everything it adds (texts, token counts, error codes, confidence) makes a failing step *look*
like one, through documented mechanics a detector can learn.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import orjson

from ..actions import APPLY_DELTA, PLANNED_CLUE, TOOL_CALL
from .model import (
    ACTIONS,
    AGENTS,
    CONVERSION_SHARE,
    DIFFICULTIES,
    FORMAT_SHARE,
    N_PUZZLES,
    UNLABELED_SELECT_SHARE,
    Backbone,
    Iteration,
)

DOMAINS: tuple[str, ...] = ("gsm-hard", "livecodebench")
DIFFICULTY_INDEX = {d: i for i, d in enumerate(DIFFICULTIES)}
MAX_UNIT_TOOL_CALLS = 3
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


@lru_cache(maxsize=4096)
def conversion_flags(seed: int, domain: str, difficulty: str, number: int) -> tuple[bool, ...]:
    """Which puzzles of the room need a unit conversion: drawn apart from the rest of the
    content, because the verdicts depend on them and a replay must not build the room.
    (Cached: a room group recurs in 26 rooms of the corpus, most of them close together.)"""
    rng = np.random.default_rng([seed, 5, DOMAINS.index(domain), DIFFICULTY_INDEX[difficulty], number])
    return tuple((rng.random(N_PUZZLES[difficulty]) < CONVERSION_SHARE).tolist())


def room_content(seed: int, domain: str, difficulty: str, number: int) -> dict:
    """Puzzles, clues and items of room ``number`` of this domain and difficulty: a fresh dict
    each call (the run marks puzzles solved in it), built once and then parsed from JSON (by
    orjson: a million rooms parse their content in 12 rather than 27 microseconds each)."""
    return orjson.loads(_room_content_json(seed, domain, difficulty, number))


@lru_cache(maxsize=1024)
def _room_content_json(seed: int, domain: str, difficulty: str, number: int) -> str:
    return json.dumps(_room_content(seed, domain, difficulty, number))


def _room_content(seed: int, domain: str, difficulty: str, number: int) -> dict:
    conversion = conversion_flags(seed, domain, difficulty, number)
    rng = np.random.default_rng([seed, 1, DOMAINS.index(domain), DIFFICULTY_INDEX[difficulty], number])
    n = N_PUZZLES[difficulty]
    types = [str(t) for t in rng.permutation(list(ITEMS))[:n]]
    puzzles = []
    for i, item_type in enumerate(types):
        tool, unit, sizes = ITEMS[item_type]
        text, answer = (_gsm_problem if domain == "gsm-hard" else _lcb_problem)(rng)
        others = [u for u in sizes if u != unit]
        convert = conversion[i]
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
    trace: list = field(default_factory=list)
    failed_steps: list = field(default_factory=list)


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
    elif verification is not None and rng.random() < (0.1 if failed else 0.01):
        # Minor, and the verdict is still given. (Never on an unverified step: the importer
        # would rightly read schema errors without a status as a format anomaly.)
        schema_errors = {"reasoning": "expected a string, got null"}
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


def _observe_clue(sim: _Room, pid: str, puzzle: dict, it: int, planned: bool, failed: bool) -> None:
    clue = puzzle["clue"]
    picked = puzzle["fake_clues"][0]["item_id"] if failed else clue["item_id"]
    text = "A torn note with a different number." if failed else clue["problem"]
    _llm_entry(
        sim, "OC", pid, puzzle, failed, it, action=PLANNED_CLUE if planned else None,
        prompt=f"You are the observer in {sim.room_id}. Find the clue for puzzle {pid} among "
               f"{clue['item_id']} and {puzzle['fake_clues'][0]['item_id']}.",
        message=f"The clue on {picked} reads: {text}",
        structured={"clue_item_id": picked, "problem": text},
        verification={"answer": picked, "gt": clue["item_id"], "status": "wrong" if failed else "correct",
                      "desc": "clue_select_wrong" if failed else None,
                      "error_type": _codes("clue_select_wrong") if failed else None},
    )


def _solve_clue(sim: _Room, pid: str, puzzle: dict, it: int, failed: bool, carried: int) -> None:
    clue, rng = puzzle["clue"], sim.rng
    answer, unit, codes = clue["answer"], clue["delta_unit"], []
    if failed:
        # A solver handed the torn note's problem gets the value wrong, maybe the unit too.
        kind = rng.random() * (0.8 if carried else 1.0)
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


def _observe_item(sim: _Room, pid: str, puzzle: dict, it: int, failed: bool, carried: int) -> None:
    item, rng = puzzle["item"], sim.rng
    item_id, state, code = item["item_id"], item["state"], None
    if failed:
        # The torn note points at the decoy, so a carried failure is mostly the wrong item.
        if rng.random() < (0.85 if carried else 0.5):
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


_TC_ERRORS = ("TC_WRONG_ARGUMENTS", "TC_WRONG_TOOL", "TC_UNKNOWN_UNIT", "TC_UNKNOWN_TOOL",
              "TC_INVALID_REQUEST", "TC_EXECUTION_ERROR", "TC_MISSING_MESSAGE")
_TC_ERROR_WEIGHTS = np.array([0.42, 0.16, 0.12, 0.06, 0.1, 0.08, 0.06])


def _tool_call(sim: _Room, pid: str, puzzle: dict, it: int, call_index: int, failed: bool) -> dict:
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
        "action": TOOL_CALL,
        "agent": AGENTS["TC"],
        "parent_action_id": None,  # set to the APPLY_DELTA's id once ids are rewritten
        "call_index": call_index,
        "input": {"available_tools": list(TOOLS),
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
    return entry


def _apply_delta(sim: _Room, pid: str, puzzle: dict, it: int, failed: bool, tool_failed: bool) -> dict:
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
    return entry


def _observe_puzzle(sim: _Room, pid: str, puzzle: dict, it: int, solved: bool, failed: bool) -> None:
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


def _select_puzzle(sim: _Room, it: int, solved_ids: list[str], picked: str, code: str | None) -> None:
    """Nightmare planning: maybe a refused unverified pick, then the verified pick."""
    puzzles, rng = sim.room["puzzles"], sim.rng
    ids = [p["puzzle_id"] for p in puzzles]
    correct = ids[it]
    avail = [correct] + (["P3"] if it < 2 and len(ids) > 2 else [])  # P3 is open early, a dead end
    base = {"avail_at_select": avail, "solved_at_select": list(solved_ids)}
    if rng.random() < UNLABELED_SELECT_SHARE:
        locked = [p for p in ids[it + 1:] if p not in avail]
        refused = str(rng.choice(locked)) if locked and rng.random() < 0.6 else f"P{len(ids) + 1}"
        _llm_entry(sim, "SP", refused, None, False, it,
                   prompt=f"Choose the next puzzle. Solved so far: {', '.join(solved_ids) or 'none'}.",
                   message=f"I will work on {refused} next.", structured={"puzzle_id": refused},
                   verification=None, extra=base)
    failed = code is not None
    _llm_entry(
        sim, "SP", picked, None, failed, it,
        prompt=f"Choose the next puzzle. Solved so far: {', '.join(solved_ids) or 'none'}.",
        message=f"{picked} is open and moves us forward, so I pick it.",
        structured={"puzzle_id": picked},
        verification={"answer": picked, "gt": correct, "status": "wrong" if failed else "correct",
                      "desc": code, "error_type": _codes(code) if code else None},
        extra=base,
    )


def _play_puzzle(sim: _Room, it: int, solved_ids: list[str], plan: Iteration) -> None:
    """Write the steps of one puzzle (nightmare: one iteration) as the model decided them."""
    pid = f"P{plan.puzzle + 1}"
    puzzle = sim.room["puzzles"][plan.puzzle]
    planned = sim.difficulty == "nightmare"
    tool_entries: list[dict] = []
    tool_failed, ad_entry = False, None
    for a, failed, carried in zip(plan.steps, plan.failed, plan.carried):
        if a == "SP":
            _select_puzzle(sim, it, solved_ids, pid, plan.pick_error)
        elif a == "OC":
            _observe_clue(sim, pid, puzzle, it, planned, failed)
        elif a == "SC":
            _solve_clue(sim, pid, puzzle, it, failed, carried)
        elif a == "OI":
            _observe_item(sim, pid, puzzle, it, failed, carried)
        elif a == "TC":
            tool_entries.append(_tool_call(sim, pid, puzzle, it, len(tool_entries) + 1, failed))
            tool_failed |= failed
        elif a == "AD":
            ad_entry = _apply_delta(sim, pid, puzzle, it, failed, tool_failed)
        else:
            _observe_puzzle(sim, pid, puzzle, it, plan.solved, failed)
    for entry in tool_entries:
        entry["_parent"] = ad_entry


def _finish_ids(room_id: str, trace: list[dict]) -> None:
    """The runner's id rewrite: <room>_<puzzle>_<ACTION>_<k>, k the 1-based trace position."""
    for k, entry in enumerate(trace, start=1):
        if entry["action"] == TOOL_CALL:
            entry["action_id"] = f"{room_id}_{entry['puzzle_id']}_{APPLY_DELTA}_TOOL_CALL_{entry['call_index']}_{k}"
        else:
            entry["action_id"] = f"{room_id}_{entry['puzzle_id']}_{entry['action']}_{k}"
    for entry in trace:
        parent = entry.pop("_parent", None)
        if parent is not None:
            entry["parent_action_id"] = parent["action_id"]


def _config(bb: Backbone, temperature: float, domain: str, tools: bool, nightmare: bool, seed: int) -> dict:
    roles = ([AGENTS["SP"]] if nightmare else []) + [AGENTS["OC"], AGENTS["SC"], AGENTS["AD"]]
    return {
        "simulated": True,
        "generator": "auditatlas.simulator (simulated MAADBench-format data, not the real benchmark)",
        "llm": {"provider": bb.provider, "model": bb.model, "max_tokens": 8192, "temperature": temperature,
                "seed": seed},
        "agents": [{"role": r, "prompt": f"[simulated] You are the {r.replace('_', ' ')} of an escape-room team."}
                   for r in roles],
        "system": {"architecture": "sequential"},
        "benchmark": {"clue_domain": domain, "unit_tools": tools, "max_unit_tool_calls": MAX_UNIT_TOOL_CALLS},
    }


def run_room(backbone: Backbone, temperature: float, domain: str, tools: bool, room: dict, plan: list[Iteration],
             *, rng: np.random.Generator, seed: int) -> dict:
    """Write the run of ``room`` (its content, with ``room_id``) that ``plan`` decided
    (``model.play_room``): the runner's JSON document. ``rng`` drives how the steps look."""
    sim = _Room(backbone, temperature, domain, tools, room["difficulty"], room["room_id"], room, rng)
    return _run_room(sim, plan, seed)


def _run_room(sim: _Room, plan: list[Iteration], seed: int) -> dict:
    solved_ids: list[str] = []
    for it, iteration in enumerate(plan):
        _play_puzzle(sim, it, solved_ids, iteration)
        if iteration.solved:
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
