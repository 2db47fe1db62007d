"""A small hand-made store for the patterns (auditatlas/patterns), with its answers known by hand.

Corpus ``p``, six runs of six steps, backbones A (runs p:1-p:3) and B (p:4-p:6); every step
labeled. Actions: step 0 ``OBSERVE``, 1-5 ``ACT``; agents alternate ``solver``/``checker``.

- Normal steps: "observed the room and listed the items on the shelf" (and variations).
- Three planted failure groups, six labeled anomalies each, spread over both backbones:
  ``timeout`` (steps 1), ``parse`` (steps 2) and ``wrong item`` (steps 3) of every run, each
  group's texts sharing their own words and no other group's. Clustered into 3, the
  partition is exactly the three groups.
- A planted near-duplicate: step 4 of ``p:1`` (the anchor) and step 4 of ``p:2`` (same words,
  one more) say something no other step says; its first neighbour is ``p:2`` step 4. A looser
  copy at step 4 of ``p:5`` (backbone B, three more words) is second, and first when the slice is
  backbone B.
"""
from __future__ import annotations

from pathlib import Path

from auditatlas import store

RUNS = [f"p:{i}" for i in range(1, 7)]
BACKBONE = {r: ("A" if i < 3 else "B") for i, r in enumerate(RUNS)}
GROUPS = {
    1: "timeout the tool call timed out waiting for the database server connection",
    2: "parse could not parse the json answer missing closing brace bracket",
    3: "wrong picked the wrong item compass instead of thermometer drawer",
}
ANCHOR = ("p:1", 4)
DUPLICATE = ("p:2", 4)
B_DUPLICATE = ("p:5", 4)
DUPLICATE_TEXT = "solve the riddle of the purple giraffe under moonlight"
NORMAL = ["observed the room and listed the items on the shelf",
          "observed the hallway and listed the doors",
          "reported the final answer to the planner"]


def text_of(run_id: str, step: int) -> str:
    if step in GROUPS:
        return f"{GROUPS[step]} attempt {run_id}"
    if step == 4 and (run_id, step) == ANCHOR:
        return DUPLICATE_TEXT
    if step == 4 and (run_id, step) == DUPLICATE:
        return DUPLICATE_TEXT + " tonight"
    if step == 4 and (run_id, step) == B_DUPLICATE:
        return DUPLICATE_TEXT + " tonight in the garden"
    return NORMAL[(step + RUNS.index(run_id)) % len(NORMAL)]


# Without labels (``build(labeled=False)``), two step-level sets both score these four steps 1.0
# and every other step 0.0: of 36 steps, the top decile of each set is ceil(3.6) = 4 steps, so
# these are the slice's flagged steps, two of the timeout group and two of the parse group.
FLAGGED = [("p:1", 1), ("p:2", 1), ("p:1", 2), ("p:2", 2)]


def build(root: Path, extra_run: bool = False, labeled: bool = True) -> Path:
    """Write the store above at ``root``; ``extra_run`` adds run ``p:7`` (a new store version);
    ``labeled=False`` leaves every step unlabeled and writes the two flagging sets instead."""
    if not labeled:
        return _build_unlabeled(root)
    runs, steps = [], []
    for run_id in RUNS + (["p:7"] if extra_run else []):
        runs.append({"run_id": run_id, "corpus": "p", "backbone": BACKBONE.get(run_id, "A"), "outcome": "failure",
                     "n_steps": 6, "label_process": "hand-made"})
        for i in range(6):
            steps.append({"run_id": run_id, "corpus": "p", "step_idx": i, "agent": ("solver", "checker")[i % 2],
                          "action": "OBSERVE" if i == 0 else "ACT", "label": 1 if i in GROUPS else 0,
                          "label_source": "fixture", "text_in": f"step {i} of {run_id}",
                          "text_out": text_of(run_id, i) if run_id != "p:7" else DUPLICATE_TEXT + " again"})
    corpora = [{"corpus": "p", "title": "p", "kind": "real", "label_process": "hand-made"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})
    sets = [{"set_id": "S1", "corpus": "p", "method": "s1", "family": "test", "supervision": "unsupervised",
             "granularity": "step", "origin": "release"}]
    predictions = [{"set_id": "S1", "corpus": "p", "run_id": r, "step_idx": i, "score": 0.1 * i, "split": "all"}
                   for r in RUNS for i in range(6)]
    store.write_source(root, "sets", {"prediction_sets": sets, "predictions": predictions})
    return root


def _build_unlabeled(root: Path) -> Path:
    runs = [{"run_id": r, "corpus": "p", "backbone": BACKBONE[r], "outcome": "failure", "n_steps": 6} for r in RUNS]
    steps = [{"run_id": r, "corpus": "p", "step_idx": i, "agent": ("solver", "checker")[i % 2],
              "action": "OBSERVE" if i == 0 else "ACT", "label": None, "text_in": f"step {i} of {r}",
              "text_out": text_of(r, i)} for r in RUNS for i in range(6)]
    corpora = [{"corpus": "p", "title": "p", "kind": "real", "label_process": "none"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})
    sets = [{"set_id": name, "corpus": "p", "method": name.lower(), "family": "test", "supervision": "unsupervised",
             "granularity": "step", "origin": "release"} for name in ("F1", "F2")]
    predictions = [{"set_id": name, "corpus": "p", "run_id": r, "step_idx": i,
                    "score": 1.0 if (r, i) in FLAGGED else 0.0, "split": "all"}
                   for name in ("F1", "F2") for r in RUNS for i in range(6)]
    store.write_source(root, "sets", {"prediction_sets": sets, "predictions": predictions})
    return root
