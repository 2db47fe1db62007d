"""The MAADBench vocabulary: the actions (code names, the paper's names, the capability each
tests and the agent that takes it, plus the trace names the runner writes besides them) and the
paper's names of its five backbones. This is the one action table: the importer (``auditatlas.ingest.maadbench``) and the simulator
(``auditatlas.simulator``) take their names and agents from it.

Other corpora keep their own action names; views that need the paper's order or capability
fall back to the raw action name for actions not listed here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Action:
    code: str
    paper: str
    short: str
    capability: str
    agent: str  # the runner's agent role (``trace[].agent``)


# Pipeline order (specs/maadbench.md, "Actions").
ACTIONS: tuple[Action, ...] = (
    Action("SELECT_PUZZLE", "SEL_PUZZLE", "SP", "planning", "planner"),
    Action("OBSERVE_CLUE", "OBS_CLUE", "OC", "distraction", "observer"),
    Action("SOLVE_CLUE", "SOL_CLUE", "SC", "math / code", "clue_solver"),
    Action("OBSERVE_ITEM", "OBS_INSTRU", "OI", "distraction", "observer"),
    Action("UNIT_TOOL_CALL", "TOOL_CALL", "TC", "tool use", "item_manager"),
    Action("APPLY_DELTA", "APL_DELTA", "AD", "reasoning", "item_manager"),
    Action("OBSERVE_PUZZLE", "OBS_PUZZLE", "OP", "verification", "observer"),
)
BY_CODE = {a.code: a for a in ACTIONS}
BY_SHORT = {a.short: a for a in ACTIONS}
ORDER = {a.code: i for i, a in enumerate(ACTIONS)}

# The one action a tool, not an LLM, takes: it has no prompt and feeds its parent APPLY_DELTA.
TOOL_CALL = BY_SHORT["TC"].code
APPLY_DELTA = BY_SHORT["AD"].code
# The nightmare runner writes its clue observation under another name; the paper counts it as
# OBSERVE_CLUE, so the importer shows it so (the original name stays in the step's extra).
PLANNED_CLUE = "OBSERVE_PLANNED_CLUE"
ALIASES: dict[str, str] = {PLANNED_CLUE: BY_SHORT["OC"].code}
# Every action name a trace may hold (action ids embed them: ``P1_OBSERVE_CLUE_3``).
TRACE_NAMES: tuple[str, ...] = tuple(BY_CODE) + tuple(ALIASES)


def short(action: str) -> str:
    a = BY_CODE.get(action)
    return a.short if a else action


def capability(action: str) -> str:
    a = BY_CODE.get(action)
    return a.capability if a else action


def sort_key(action: str) -> tuple[int, str]:
    return (ORDER.get(action, len(ORDER)), action)


# Model strings of the paper's five backbones -> the names its tables use.
BACKBONE_NAMES: dict[str, str] = {
    "claude-opus-4-8": "Claude Opus 4.8",
    "claude-sonnet-4-6": "Claude Sonnet 4.6",
    "deepseek-reasoner": "DeepSeek-R1",
    "gpt-4.1": "GPT-4.1",
    "gpt-5.4": "GPT-5.4",
}
