"""A small hand-made store for the agreement figures, with every expected value worked out by hand.

Corpus ``k``: run ``k:a`` (10 steps, label source ``verifier``) released labels
1 1 0 0 1 0 0 1 0 0; run ``k:b`` (4 steps, label source ``annotator``) 1 0 0 0; run ``k:c``
(2 steps, unlabeled).

Verdicts of :data:`VERDICTS` (A anomaly, N normal, U unsure; each reviewer at their own hour, so
later reviewers' verdicts are the latest per step):

=====  =====  =================================================================
who    hour   verdicts
=====  =====  =================================================================
ann    10     k:a 0..9: A A A A N N N N N N (k:a 0 first N, revised to A), k:b 0: U
bob    11     k:a 0..9: A A A N A N N N N N, k:b 0: A
cy     12     k:a 5 6 7: N N N, k:a 9: U
dee    13     k:c 0: A (no released label)
=====  =====  =================================================================

ann and bob, 11 shared steps; k:b 0 left out (ann unsure); on k:a's 10:
            bob A  bob N
    ann A     3      1        po = (3 + 5) / 10 = 0.8
    ann N     1      5        pe = 0.4 * 0.4 + 0.6 * 0.6 = 0.52
    kappa = (0.8 - 0.52) / (1 - 0.52) = 0.28 / 0.48 = 0.583333...
ann and cy, bob and cy: 4 shared steps, k:a 9 left out (cy unsure), the other 3 only 'normal'
on both sides: undefined. dee shares no step with anyone.

Review (latest per step) against release, verifier: latest k:a 0..9 = A A A N A N N N N U
(bob on 0-4 and 8, cy on 5-7 and 9).
    released anomaly (0 1 4 7):        reviewed A 3, N 1, U 0
    released normal (2 3 5 6 8 9):     reviewed A 1, N 4, U 1
    decided 9: po = 7/9, pe = (4/9)^2 + (5/9)^2 = 41/81, kappa = (63 - 41) / (81 - 41) = 22/40 = 0.55
Annotator: k:b 0 released anomaly, reviewed A (bob): one class on both sides, undefined.

:func:`build_whowhen_like`: a second store, for the judges-against-the-human order (its picks
worked out in its docstring).
"""
from __future__ import annotations

from pathlib import Path

from auditatlas import store, verdicts

LABELS = {"k:a": [1, 1, 0, 0, 1, 0, 0, 1, 0, 0], "k:b": [1, 0, 0, 0], "k:c": [None, None]}
SOURCE = {"k:a": "verifier", "k:b": "annotator", "k:c": None}
V = {"A": "anomaly", "N": "normal", "U": "unsure"}
VERDICTS = (  # reviewer, hour, run, steps, verdicts (one letter per step)
    ("ann", 10, "k:a", range(10), "NAAANNNNNN"),
    ("ann", 10, "k:b", [0], "U"),
    ("bob", 11, "k:a", range(10), "AAANANNNNN"),
    ("bob", 11, "k:b", [0], "A"),
    ("cy", 12, "k:a", [5, 6, 7, 9], "NNNU"),
    ("dee", 13, "k:c", [0], "A"),
)
# ann's first verdict on k:a 0 (N above), revised to A a minute after the rest.
REVISION = ("ann", "k:a", 0, "A", "2026-01-01T10:30:00+00:00")


def build(root: Path) -> Path:
    """The traces of the store described above (no verdict yet)."""
    runs, steps = [], []
    for run_id, labels in LABELS.items():
        runs.append({"run_id": run_id, "corpus": "k", "outcome": "failure", "n_steps": len(labels),
                     "label_process": SOURCE[run_id] or "none"})
        steps += [{"run_id": run_id, "corpus": "k", "step_idx": i, "agent": "agent", "action": "ACT", "label": label,
                   "label_source": SOURCE[run_id], "text_in": "in", "text_out": "out"} for i, label in enumerate(labels)]
    corpora = [{"corpus": "k", "title": "k", "kind": "real", "label_process": "hand-made"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})
    return root


def rows(plan=VERDICTS, queue: str = "doubt", revise: bool = True, seed: int | None = None) -> list[dict]:
    """Verdict rows of ``plan`` (step i of a line given at minute i of its hour), plus
    :data:`REVISION` when ``revise``; ``seed``: the random order's seed they were given under."""
    found = []
    for reviewer, hour, run_id, idx, letters in plan:
        for minute, (i, letter) in enumerate(zip(idx, letters)):
            found.append(verdicts.verdict("k", run_id, i, V[letter], reviewer, queue=queue, seed=seed,
                                         reviewed_at=f"2026-01-01T{hour:02d}:{minute:02d}:00+00:00"))
    if revise:
        reviewer, run_id, i, letter, at = REVISION
        found.append(verdicts.verdict("k", run_id, i, V[letter], reviewer, queue=queue, reviewed_at=at))
    return found


def build_whowhen_like(root: Path) -> Path:
    """Runs ww:1..4 with a human decisive step; judges J1, J2 (stored picks), J3, J4 (released
    rankings); D1 a detector (not a judge). Picks per run, decisive step in brackets:

    ww:1 [2]: J1 3, J2 3, J3 1 (top), J4 abstains  -> 3 of 3 against, other pick 3 (2 votes)
    ww:2 [0]: J1 1, J2 0, J3 2 (ranking, legacy key) -> 2 of 3 against, other pick 1 (tie: earlier)
    ww:3 [1]: J1 1, J2 0, J3 abstains -> 1 of 2 against: out (counted as a pick, J3's step 0 would
              make it 2 of 3)
    ww:4 [0]: J1 1, J2 0 -> 1 of 2: not most, out
    """
    decisive = {"ww:1": (4, 2), "ww:2": (3, 0), "ww:3": (3, 1), "ww:4": (2, 0)}
    runs, steps = [], []
    for n, (run_id, (n_steps, d)) in enumerate(decisive.items(), start=1):
        runs.append({"run_id": run_id, "corpus": "ww", "outcome": "failure", "n_steps": n_steps,
                     "run_key": f"key{n}", "legacy_key": f"00{n}-x", "label_process": "human"})
        steps += [{"run_id": run_id, "corpus": "ww", "step_idx": i, "agent": "a", "action": "ACT",
                   "label": 1 if i == d else 0, "label_source": "human_decisive_step"} for i in range(n_steps)]
    corpora = [{"corpus": "ww", "title": "ww", "kind": "real", "label_process": "human"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})
    stored_picks = {"J1": {"ww:1": 3, "ww:2": 1, "ww:3": 1, "ww:4": 1}, "J2": {"ww:1": 3, "ww:2": 0, "ww:3": 0, "ww:4": 0},
                    "D1": {"ww:1": 0, "ww:2": 1, "ww:3": 0, "ww:4": 1}}
    sets = [{"set_id": s, "corpus": "ww", "method": s.lower(), "family": "test" if s == "D1" else "llm",
             "supervision": "zero-shot", "granularity": "step", "origin": "release"} for s in ("J1", "J2", "J3", "J4", "D1")]
    predictions = [{"set_id": s, "corpus": "ww", "run_id": r, "step_idx": i, "score": 1.0 if i == pick else 0.0,
                    "split": "all"} for s, picks in stored_picks.items() for r, pick in picks.items()
                   for i in range(decisive[r][0])]
    rankings = [{"set_id": "J3", "corpus": "ww", "run_key": "key1", "top": 1, "ranking": [1, 3]},
                {"set_id": "J3", "corpus": "ww", "run_key": "002-x", "top": None, "ranking": [2, 0]},
                {"set_id": "J3", "corpus": "ww", "run_key": "key3", "top": None, "ranking": []},
                {"set_id": "J4", "corpus": "ww", "run_key": "key1", "top": None, "ranking": []}]
    store.write_source(root, "judges", {"prediction_sets": sets, "predictions": predictions, "rankings": rankings})
    return root
