"""A small hand-made store for the review queues, with the expected orders worked out by hand.

Corpus ``r`` (labeled): run ``r:a`` (backbone X) labels 0 0 1 0, run ``r:b`` (backbone Y)
labels 0 1 0 1. Corpus ``u`` (unlabeled): runs ``u:c`` (3 steps) and ``u:d`` (2 steps).

Step-level sets, each scoring 0.9 on its "top" steps and 0.1 elsewhere; with 8 (or 5, or 2)
scored steps a set's top decile is its rank-1 steps (ceil(10% of n) = 1; ties share rank 1):

=====  ============  ==================  =====================
set    supervision   scores              top decile
=====  ============  ==================  =====================
U1     unsupervised  the 8 ``r`` steps   a1, b2 (tied)
U2     unsupervised  the 8 ``r`` steps   a1
U3     unsupervised  the 8 ``r`` steps   a1, b2 (tied)
Z1     zero-shot     b2, b3              b2
S1     supervised    the 8 ``r`` steps   b3 (left out of doubt)
V1     unsupervised  the 5 ``u`` steps   c1, d0 (tied)
V2     unsupervised  the 5 ``u`` steps   c1
V3     zero-shot     the 5 ``u`` steps   c1, d0 (tied)
=====  ============  ==================  =====================

Doubt (label-free sets U1 U2 U3 Z1): a1 normal, 3 of 3 sets flag it (share 1, 3 contradict);
a2 anomaly, 0 of 3 (share 1, 3); b1 anomaly, 0 of 3 (share 1, 3); b2 normal, 3 of 4 (U1 U3
Z1: share 0.75, 3); b3 anomaly, 0 of 4 (share 1, 4 contradict; S1's flag does not count).
a0, a3, b0: normal, no flag. Order: share, then contradicting, then run and step:
b3, a1, a2, b1, b2.

Flagged (unlabeled steps, every set): c1 3 of 3 (share 1), d0 2 of 3 (V1 V3, share 2/3);
c0, c2, d1 none. Order: c1, d0.
"""
from __future__ import annotations

from pathlib import Path

from auditatlas import store

LABELS = {"r:a": [0, 0, 1, 0], "r:b": [0, 1, 0, 1], "u:c": [None] * 3, "u:d": [None] * 2}
BACKBONE = {"r:a": "X", "r:b": "Y", "u:c": "Z", "u:d": "Z"}
R_STEPS = [(r, i) for r in ("r:a", "r:b") for i in range(4)]
U_STEPS = [("u:c", 0), ("u:c", 1), ("u:c", 2), ("u:d", 0), ("u:d", 1)]
SETS = {  # set: (supervision, corpus, scored steps, top steps)
    "U1": ("unsupervised", "r", R_STEPS, {("r:a", 1), ("r:b", 2)}),
    "U2": ("unsupervised", "r", R_STEPS, {("r:a", 1)}),
    "U3": ("unsupervised", "r", R_STEPS, {("r:a", 1), ("r:b", 2)}),
    "Z1": ("zero-shot", "r", [("r:b", 2), ("r:b", 3)], {("r:b", 2)}),
    "S1": ("supervised", "r", R_STEPS, {("r:b", 3)}),
    "V1": ("unsupervised", "u", U_STEPS, {("u:c", 1), ("u:d", 0)}),
    "V2": ("unsupervised", "u", U_STEPS, {("u:c", 1)}),
    "V3": ("zero-shot", "u", U_STEPS, {("u:c", 1), ("u:d", 0)}),
}
DOUBT_ORDER = [("r:b", 3), ("r:a", 1), ("r:a", 2), ("r:b", 1), ("r:b", 2)]
FLAGGED_ORDER = [("u:c", 1), ("u:d", 0)]


def write_traces(root: Path, labels_of: dict[str, list], backbone: dict[str, str]) -> None:
    """The ``traces`` source: the runs ``labels_of`` names, with their steps' labels."""
    runs, steps = [], []
    for run_id, labels in labels_of.items():
        corpus = run_id.split(":")[0]
        runs.append({"run_id": run_id, "corpus": corpus, "backbone": backbone[run_id], "outcome": "failure",
                     "n_steps": len(labels), "label_process": "hand-made" if corpus == "r" else "none"})
        for i, label in enumerate(labels):
            steps.append({"run_id": run_id, "corpus": corpus, "step_idx": i, "agent": f"agent{i % 2}",
                          "action": "ACT", "label": label, "label_source": "fixture" if label is not None else None,
                          "text_in": f"input of {run_id} step {i}", "text_out": f"output of {run_id} step {i}"})
    corpora = [{"corpus": "r", "title": "r", "kind": "real", "label_process": "hand-made"},
               {"corpus": "u", "title": "u", "kind": "real", "label_process": "none"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})


def build(root: Path) -> Path:
    """Write the store described above at ``root`` (two sources: the traces and the sets)."""
    write_traces(root, LABELS, BACKBONE)
    sets, predictions = [], []
    for set_id, (supervision, corpus, scored, top) in SETS.items():
        sets.append({"set_id": set_id, "corpus": corpus, "method": set_id.lower(), "family": "test",
                     "supervision": supervision, "granularity": "step", "origin": "release"})
        predictions += [{"set_id": set_id, "corpus": corpus, "run_id": r, "step_idx": i,
                         "score": 0.9 if (r, i) in top else 0.1, "split": "all"} for r, i in scored]
    store.write_source(root, "sets", {"prediction_sets": sets, "predictions": predictions})
    return root
