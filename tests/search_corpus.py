"""The hand-made search corpus the search tests share (tests/test_search.py, tests/test_search_app.py).

Corpus ``s``: run ``s:a`` (backbone X) and ``s:b`` (backbone Y).

====  =======  ======  ============================  ======================================  =====
step  agent    action  input                         output                                  label
====  =======  ======  ============================  ======================================  =====
a0    Planner  PLAN    plan the compass route        route planned                           0
a1    Coder    CODE    write code                    timeout error timeout error timeout     1
a2    Coder    CODE    retry                         timeout once then fine and more words   0
b0    Planner  PLAN    north compass bearing         points north                            0
b1    Tester   TEST    run tests                     north pole error                        1
====  =======  ======  ============================  ======================================  =====

BM25 on "timeout": a1 holds it three times in five words, a2 once in seven: a1 ranks first.
"""
from __future__ import annotations

from pathlib import Path

from auditatlas import store

ROWS = [
    ("s:a", 0, "Planner", "PLAN", "plan the compass route", "route planned", 0),
    ("s:a", 1, "Coder", "CODE", "write code", "timeout error timeout error timeout", 1),
    ("s:a", 2, "Coder", "CODE", "retry", "timeout once then fine and more words", 0),
    ("s:b", 0, "Planner", "PLAN", "north compass bearing", "points north", 0),
    ("s:b", 1, "Tester", "TEST", "run tests", "north pole error", 1),
]


def write_corpus(root: Path, rows=ROWS, source: str = "traces") -> None:
    runs = sorted({r[0] for r in rows})
    store.write_source(root, source, {
        "corpora": [{"corpus": "s", "title": "s", "kind": "real", "label_process": "hand-made"}] if source == "traces" else [],
        "runs": [{"run_id": r, "corpus": "s", "backbone": "X" if r == "s:a" else "Y", "outcome": "failure",
                  "n_steps": sum(1 for x in rows if x[0] == r)} for r in runs],
        "steps": [{"run_id": r, "corpus": "s", "step_idx": i, "agent": ag, "action": ac, "text_in": ti, "text_out": to,
                   "label": lab} for r, i, ag, ac, ti, to, lab in rows]})
