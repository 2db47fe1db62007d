"""Published MAADBench numbers typed in from shared/specs/maadbench.md, for tests to expect.

Kept apart from the simulator's own copy (auditatlas/simulator/published.py) on purpose: a
typo there must not become the expectation that hides it.
"""

# Table 3: action success rate (%) per backbone (names as the importer shows them).
TABLE3 = {
    "Claude Opus 4.8": {"SELECT_PUZZLE": 94.8, "OBSERVE_CLUE": 99.8, "SOLVE_CLUE": 80.4, "OBSERVE_ITEM": 97.8,
                        "UNIT_TOOL_CALL": 73.1, "APPLY_DELTA": 75.8, "OBSERVE_PUZZLE": 98.9},
    "Claude Sonnet 4.6": {"SELECT_PUZZLE": 97.1, "OBSERVE_CLUE": 97.5, "SOLVE_CLUE": 80.5, "OBSERVE_ITEM": 95.4,
                          "UNIT_TOOL_CALL": 64.9, "APPLY_DELTA": 60.1, "OBSERVE_PUZZLE": 100.0},
    "DeepSeek-R1": {"SELECT_PUZZLE": 100.0, "OBSERVE_CLUE": 46.2, "SOLVE_CLUE": 63.0, "OBSERVE_ITEM": 73.3,
                    "UNIT_TOOL_CALL": 60.8, "APPLY_DELTA": 64.1, "OBSERVE_PUZZLE": 97.0},
    "GPT-4.1": {"SELECT_PUZZLE": 70.9, "OBSERVE_CLUE": 97.2, "SOLVE_CLUE": 71.3, "OBSERVE_ITEM": 94.3,
                "UNIT_TOOL_CALL": 63.2, "APPLY_DELTA": 41.5, "OBSERVE_PUZZLE": 98.4},
    "GPT-5.4": {"SELECT_PUZZLE": 65.6, "OBSERVE_CLUE": 98.3, "SOLVE_CLUE": 78.7, "OBSERVE_ITEM": 93.5,
                "UNIT_TOOL_CALL": 67.0, "APPLY_DELTA": 53.3, "OBSERVE_PUZZLE": 99.9},
}
