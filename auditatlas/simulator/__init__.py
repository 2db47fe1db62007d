"""A deterministic simulator of MAADBench escape-room runs: the embedded default corpus.

The dashboard must start offline, so its default store is built from *simulated* rooms written
in the exact file format of the MAADBench runner (``shared/specs/maadbench.md``) and read back
through the real MAADBench importer (``auditatlas.ingest.demo.build_demo``). This package
writes release files; it is not an adapter. Every file says it is simulated
(``config.simulated = true``, ``room.description``, a ``[simulated]`` prefix on every prompt);
the corpus is named ``maadbench-sim`` with kind ``simulated``.

Public API: :func:`iter_rooms` (documents for any range of room indices, for parallel
builds), :func:`simulate` (writes them as files), :func:`calibration_table`.

Layout (the runner's)::

    run_<YYYYmmdd_HHMMSS>_<gsm-hard|livecodebench>_<tool|no_tool>_<model>_<temperature>[_nightmare]/
        <YYYYmmddHHMMSS>_EscapeRoom_<room_id>_<escaped|failed>.json

Rules of the simulation, and why
--------------------------------
Allocation (``corpus.allocate``)
    Room ``r`` goes to backbone ``r % 5``; within a backbone, rooms cycle over the four
    difficulties and then over (temperature, clue domain, tool mode). Claude Opus 4.8 runs at
    temperature 0.0 only, the other four at 0.0/0.3/0.6 (the paper ran Opus at one
    temperature). A non-nightmare run folder receives easy, medium and hard rooms in turn, so
    ``room_000j`` holds the same content in every folder of a clue domain: a room group spans
    backbones, temperatures and tool modes, which is what the room-disjoint split groups by.
    Everything about room ``r`` (folder, room number, start time) is arithmetic on ``r``.

Pipelines (one attempt per puzzle; a room stops at its first failed puzzle)
    easy/medium/hard, per puzzle: OBSERVE_CLUE, SOLVE_CLUE, OBSERVE_ITEM,
    [UNIT_TOOL_CALL x n], APPLY_DELTA, OBSERVE_PUZZLE. Nightmare, per iteration: SELECT_PUZZLE,
    OBSERVE_PLANNED_CLUE, SOLVE_CLUE, OBSERVE_ITEM, [UNIT_TOOL_CALL x n], APPLY_DELTA.
    Tool calls happen only in tool runs and only when the clue's delta unit differs from the
    item's unit (``CONVERSION_SHARE`` of puzzles); one call, or two (``SECOND_CALL_SHARE``:
    the item manager re-checks the conversion).

When a puzzle is solved
    Exactly when its APPLY_DELTA is correct and, in nightmare rooms, its SELECT_PUZZLE picked
    the right puzzle: the environment judges the item's final state, which is what
    APPLY_DELTA's verifier checks. OBSERVE_PUZZLE failing means the observer disagrees with
    the real state; it does not change whether the puzzle was solved. A wrong pick goes to
    the dead-end P3 (first two iterations), the next, locked puzzle, or, in the last
    iteration, an already-solved puzzle; that iteration's failures then sit in a solved
    puzzle, so they count as silent.

Failures: own slips and carried errors (``model.py``)
    A step fails on its own with probability ``f[a, d]``: the backbone's own failure rate for
    the action, shifted in log-odds by one shift per difficulty (harder rooms hold more
    decoys; the published per-puzzle success is not even monotone in difficulty, e.g. Sonnet
    solves a medium puzzle more often than an easy one, so each difficulty gets its own
    shift). It also fails through each failed upstream step it *reads*, independently with
    the backbone's carry probability ``c`` (noisy-OR):
    ``P(fail) = 1 - (1 - f) (1 - c)^k``, ``k`` the failed upstream steps it reads. By data
    flow, SOLVE_CLUE and OBSERVE_ITEM read the observed clue (a torn note names another
    problem and points at the decoy item), tool calls and APPLY_DELTA read every earlier
    OBSERVE_CLUE, SOLVE_CLUE, OBSERVE_ITEM and tool call of the puzzle; OBSERVE_ITEM does not
    read the clue's *answer*, OBSERVE_PUZZLE reads the real room state and a wrong pick loses
    the puzzle without corrupting what is observed of it. So propagation chains occur (FM-5),
    an action a backbone never fails (``f = 0``) on its own and reads nothing stays at 0, and
    the carry probability is what sets the silent-failure rate: a backbone that carries most
    errors into APPLY_DELTA fails loudly (Opus, ``c`` about 0.77), one that often recovers
    fails silently (DeepSeek-R1, ``c`` about 0.35).

Calibration (rates only; ``model.calibration``)
    Nothing is typed in or hand-tuned: for each backbone the own-failure rates, the
    difficulty shifts (summing to 0) and the carry probability are *solved* so that the
    exact expected figures of a corpus (``model.expected_profile``: every pipeline variant,
    carrying, the stop rule, formatting errors) land on the paper's Table 3 (action success),
    Table 2 (room success per difficulty) and Table 4 (silent-failure rate over action
    failures, formatting errors apart; ``published.py``). Twelve equations in eleven unknowns,
    least squares with each equation divided by its tolerance: under the solve rule, Table 2
    and Table 3's APPLY_DELTA column are tied and the published numbers nearly meet that tie.
    Four backbones land on every figure; DeepSeek-R1 is the hard one (its APPLY_DELTA fails
    only through carried errors at the solution) and keeps small expected gaps (see
    ``data/README.md``). No detector's score is used anywhere.

    Decisions use stratified uniforms (each STRATA draws hold one value in each 1/STRATA
    interval, in random order), one stream per backbone x difficulty x tool mode x decision x
    (carries an upstream failure or not). The draws stay random, but the observed figures
    sit much closer to their expectation than plain Bernoulli draws would: at MAADBench's
    size (5,200 rooms) every Table 3 cell with 200+ steps lands within 3 points, every
    Table 2 cell within its tolerance and every Table 4 rate within 3 points (checked for
    seeds 0-19; ``tests/test_simulator_calibration.py`` checks seed 0).

Independent of chunking
    The streams restart every ``BLOCK_ROOMS`` (5,200) rooms, seeded by (seed, block,
    backbone, difficulty, tool mode, decision, carrying). A room's decisions
    (``model.play_room``) are kept apart from its text, so a range that starts inside a block
    replays only the decisions of the block's earlier rooms (about 20 µs a room) and then
    writes its own. Room content is seeded by (seed, domain, difficulty, room group), the look
    of a room's steps by (seed, room index). So room ``r`` is the same whether a worker
    produces ``0..1,000,000`` or ``5,000..9,999``, and the same ``(rooms, seed)`` gives
    byte-identical files.

How failing steps look (documented mechanics, for detectors to find)
    A failed LLM step is a schema error without a verifier status (``FORMAT_SHARE`` of them:
    the importer labels it an anomaly and a format error) or a ``wrong`` status with an error
    code of its action from the spec's list. Failing steps reason longer (more output tokens,
    longer duration, ``superlong_reasoning`` sometimes), rarely time out, report lower
    confidence and more often carry minor schema errors. Nightmare rooms also hold unverified
    SELECT_PUZZLE steps (``UNLABELED_SELECT_SHARE`` of iterations): the planner first picks a
    locked or missing puzzle, the runner refuses it without a verdict, and the planner picks
    again. Temperature changes only the spread of token counts, not the success rates.

Scale
    Rooms are produced one at a time (memory stays flat); above ``PRETTY_LIMIT`` rooms
    ``simulate`` writes compact JSON instead of pretty-printed (the importer reads both).
"""
from __future__ import annotations

from .corpus import (
                     BLOCK_ROOMS,
                     CORPUS,
                     DEFAULT_ROOMS,
                     KIND,
                     PRETTY_LIMIT,
                     SOURCE,
                     Allocation,
                     Progress,
                     allocate,
                     iter_rooms,
                     simulate,
)
from .model import (
                     ACTIONS,
                     AGENTS,
                     BACKBONES,
                     DIFFICULTIES,
                     N_PUZZLES,
                     SHORTS,
                     Backbone,
                     Calibration,
                     Profile,
                     calibration,
                     calibration_table,
                     expected_profile,
)

__all__ = [
    "ACTIONS", "AGENTS", "BACKBONES", "BLOCK_ROOMS", "CORPUS", "DEFAULT_ROOMS", "DIFFICULTIES", "KIND",
    "N_PUZZLES", "PRETTY_LIMIT", "SHORTS", "SOURCE", "Allocation", "Backbone", "Calibration", "Profile",
    "Progress", "allocate", "calibration", "calibration_table", "expected_profile", "iter_rooms", "simulate",
]
