"""A small hand-made store for the views under each label choice, every expected value worked out by hand.

Corpus ``t``, backbone ``X``, every run failed, no scopes (each run is its own propagation scope).
Actions A and B. One step-level prediction set ``S1`` (split ``all``) scores every step.

=====  ==========  ===============  ==========================  ========  ========
run    actions     released labels  S1 scores                   reviewed  agreed
=====  ==========  ===============  ==========================  ========  ========
t:a    A A B B     0 1 1 0          0.9 0.2 0.8 0.1             1 0 1 0   - - - -
t:b    A A B B     0 0 0 1          0.3 0.4 0.7 0.6             0 0 1 1   - - - 1
t:c    A B B       1 0 0            0.5 0.05 0.35               0 0 1     - - -
=====  ==========  ===============  ==========================  ========  ========

Latest verdicts (:func:`verdict_rows`): t:a 0 anomaly, t:a 1 normal, t:b 1 unsure, t:b 2
anomaly, t:b 3 anomaly (a normal first, revised), t:c 0 normal, t:c 2 anomaly. So 7 steps
reviewed, 5 changed (t:a 0, t:a 1, t:b 2, t:c 0, t:c 2), 1 agrees with the release (t:b 3),
1 unsure (t:b 1: keeps its released 0 under reviewed, unlabeled under agreed).

Overview (action_rates, backbone X):

=========  ===========================  ===========================  ============================
action     released                     reviewed                     agreed
=========  ===========================  ===========================  ============================
A          5 labeled, 2 anomalies, 0.6  5 labeled, 1 anomaly, 0.8    0 labeled (5 unlabeled), none
B          6 labeled, 2 anomalies, 4/6  6 labeled, 4 anomalies, 2/6  1 labeled, 1 anomaly, 0.0
=========  ===========================  ===========================  ============================

Detectors grid, cell (X, B), S1's ROC-AUC: released positives 0.8, 0.6 against 0.1, 0.7, 0.05,
0.35: (4 + 3) / 8 = 0.875; reviewed positives 0.8, 0.7, 0.6, 0.35 against 0.1, 0.05: 8 / 8 = 1.0;
agreed: one positive, no negative: undefined. Cell (X, A): released positives 0.2, 0.5 against
0.9, 0.3, 0.4: 2 / 6; reviewed 0.9 against 0.2, 0.3, 0.4, 0.5: 1.0; agreed: no labeled step.

Propagation (two failures in a scope make a chain): released t:a 1-2 (one chain, origin A);
reviewed t:a 0-2 and t:b 2-3 (two chains, origins A and B); agreed none.

POST localization, the position row (truth = the run's first anomaly; rank = truth + 1):
released truths 1, 3, 0: ranks 2, 4, 1: top-1 1/3, top-3 2/3, MRR (1/2 + 1/4 + 1) / 3 = 7/12;
reviewed truths 0, 2, 2: ranks 1, 3, 3: top-1 1/3, top-3 1, MRR (1 + 1/3 + 1/3) / 3 = 5/9;
agreed only t:b, truth 3: rank 4: top-1 0, top-3 0, MRR 1/4.
"""
from __future__ import annotations

from pathlib import Path

from auditatlas import store, verdicts

ACTIONS = {"t:a": "AABB", "t:b": "AABB", "t:c": "ABB"}
LABELS = {"t:a": [0, 1, 1, 0], "t:b": [0, 0, 0, 1], "t:c": [1, 0, 0]}
SCORES = {"t:a": [0.9, 0.2, 0.8, 0.1], "t:b": [0.3, 0.4, 0.7, 0.6], "t:c": [0.5, 0.05, 0.35]}
VERDICTS = (  # run, step, verdict, minute
    ("t:a", 0, "anomaly", 1), ("t:a", 1, "normal", 2), ("t:b", 1, "unsure", 3), ("t:b", 2, "anomaly", 4),
    ("t:b", 3, "normal", 5), ("t:b", 3, "anomaly", 6), ("t:c", 0, "normal", 7), ("t:c", 2, "anomaly", 8),
)


def build(root: Path) -> Path:
    """The traces and the set described above (no verdict yet)."""
    runs, steps, predictions = [], [], []
    for run_id, labels in LABELS.items():
        runs.append({"run_id": run_id, "corpus": "t", "backbone": "X", "outcome": "failure", "n_steps": len(labels),
                     "source_file": f"{run_id}.json", "label_process": "hand-made"})
        for i, label in enumerate(labels):
            steps.append({"run_id": run_id, "corpus": "t", "step_idx": i, "agent": "agent", "action": ACTIONS[run_id][i],
                          "label": label, "label_source": "fixture", "text_in": f"in {run_id} {i}",
                          "text_out": f"out {run_id} {i}"})
            predictions.append({"set_id": "S1", "corpus": "t", "run_id": run_id, "step_idx": i,
                                "score": SCORES[run_id][i], "split": "all"})
    corpora = [{"corpus": "t", "title": "t", "kind": "real", "label_process": "hand-made"}]
    store.write_source(root, "traces", {"corpora": corpora, "runs": runs, "steps": steps})
    sets = [{"set_id": "S1", "corpus": "t", "method": "s1", "family": "test", "supervision": "unsupervised",
             "granularity": "step", "origin": "release"}]
    store.write_source(root, "sets", {"prediction_sets": sets, "predictions": predictions})
    return root


def verdict_rows() -> list[dict]:
    return [verdicts.verdict("t", run, step, value, "rev", reviewed_at=f"2026-01-01T10:{minute:02d}:00+00:00")
            for run, step, value, minute in VERDICTS]


def build_reviewed(root: Path) -> Path:
    """:func:`build` plus :func:`verdict_rows`, written through the reviews writer."""
    build(root)
    verdicts.append_verdicts(root, verdict_rows())
    return root
