"""The paper's published figures the simulator is calibrated to, typed in from
``shared/specs/maadbench.md`` (MAADBench, Ma et al. 2026). Keyed by the runner's model string.

Nothing here is fitted: these are the targets. A detector's published AUROC is deliberately
absent: the simulator must never be tuned toward a detector's score.
"""
from __future__ import annotations

import math

MAADBENCH_ROOMS = 5200  # MAADBench-Full: the size at which the calibration is checked

# Table 3: action success rate (%), by the short action names of ``auditatlas.actions``.
TABLE3: dict[str, dict[str, float]] = {
    "claude-opus-4-8": {"SP": 94.8, "OC": 99.8, "SC": 80.4, "OI": 97.8, "TC": 73.1, "AD": 75.8, "OP": 98.9},
    "claude-sonnet-4-6": {"SP": 97.1, "OC": 97.5, "SC": 80.5, "OI": 95.4, "TC": 64.9, "AD": 60.1, "OP": 100.0},
    "deepseek-reasoner": {"SP": 100.0, "OC": 46.2, "SC": 63.0, "OI": 73.3, "TC": 60.8, "AD": 64.1, "OP": 97.0},
    "gpt-4.1": {"SP": 70.9, "OC": 97.2, "SC": 71.3, "OI": 94.3, "TC": 63.2, "AD": 41.5, "OP": 98.4},
    "gpt-5.4": {"SP": 65.6, "OC": 98.3, "SC": 78.7, "OI": 93.5, "TC": 67.0, "AD": 53.3, "OP": 99.9},
}

# Table 2: room success (%) per difficulty (the paper's "Extreme" is nightmare).
TABLE2: dict[str, dict[str, float]] = {
    "claude-opus-4-8": {"easy": 70.0, "medium": 63.0, "hard": 29.0, "nightmare": 30.0},
    "claude-sonnet-4-6": {"easy": 52.3, "medium": 35.3, "hard": 11.0, "nightmare": 19.3},
    "deepseek-reasoner": {"easy": 66.7, "medium": 42.0, "hard": 12.3, "nightmare": 22.0},
    "gpt-4.1": {"easy": 46.3, "medium": 19.0, "hard": 3.0, "nightmare": 0.0},
    "gpt-5.4": {"easy": 60.0, "medium": 27.0, "hard": 10.3, "nightmare": 0.3},
}

# Table 4: silent-failure rate (%): action failures (formatting errors apart) whose puzzle
# still succeeded, over all action failures; the rate ``auditatlas.analyses.step_rates.silent_failures``
# shows as ``silent_pct``.
TABLE4: dict[str, float] = {
    "claude-opus-4-8": 9.0, "claude-sonnet-4-6": 7.7, "deepseek-reasoner": 30.4, "gpt-4.1": 12.2, "gpt-5.4": 11.4,
}

# How close a simulated corpus of MAADBENCH_ROOMS rooms must land (percentage points).
TABLE3_TOLERANCE = 3.0  # every cell with at least TABLE3_MIN_STEPS labeled steps
TABLE3_MIN_STEPS = 200
TABLE4_TOLERANCE = 3.0


def table2_tolerance(published_pct: float, rooms_in_cell: int) -> float:
    """5 points, or two binomial standard errors of the cell, whichever is larger."""
    p = published_pct / 100.0
    return max(5.0, 200.0 * math.sqrt(p * (1.0 - p) / rooms_in_cell))
