"""The Explorer's open run as a file: the run's facts, its dependency graph (the Explorer's own
offline page), the steps table, the open step in full and the judges' strip (pages/explorer.py);
without a run, the run list the page opens on."""
from __future__ import annotations

import json

import pandas as pd

from ... import graph as tg
from ...figures import judges
from ...figures.step import fields_frame, steps_frame, structured_output
from ...figures.trace_graph import page_for_run
from ...run_labels import label_first
from ...views import DEFAULT_TOP_K, labels_of
from ...views.app_link import ExportError, Link, Query
from ..assets import VIS_MARK
from ..document import Document


def rule_of(values: dict) -> tg.DecisionRule:
    """The link's decision rule: its threshold, else its top_k, else the top 1 (as the page)."""
    if values["threshold"] is not None:
        return tg.DecisionRule(threshold=float(values["threshold"]))
    return tg.DecisionRule(top_k=int(values["top_k"] if values["top_k"] is not None else DEFAULT_TOP_K))


def build(doc: Document, query: Query, link: Link) -> None:
    values = link.values
    if not values["run"]:
        run_list(doc, query, link)
        return
    found = query("explorer_run", {"run": values["run"], "labels": labels_of(link.slice)})
    if found.empty:
        raise ExportError(f"The store holds no run with id '{values['run']}'.")
    run = found.iloc[0]
    run_id, n = str(run["run_id"]), int(run["n_steps"])
    doc.heading("Run")
    doc.pre("run id", run_id)
    facts = [f"corpus {run['corpus']}"] + [f"{c} {run[c]}" for c in ("backbone", "difficulty", "domain")
                                           if pd.notna(run.get(c))]
    facts += [f"outcome {run['outcome']}", f"{n} steps", f"{int(run['labeled_steps'])} labeled",
              f"{int(run['anomalous_steps'])} anomalous", f"chain length {int(run['chain_length'])}",
              f"{int(run['n_scopes'])} scope(s)"]
    doc.text(" · ".join(facts))
    doc.text(f"Labels: {run['label_process']}.", "note")
    selected = values["step"]
    if selected is not None and not 0 <= selected < n:
        doc.warning(f"This run has {n} steps (0 to {n - 1}); the link's step {selected} is not one of them, "
                    "so no step is open.")
        selected = None
    steps = query("explorer_steps", {"run": run_id, "labels": labels_of(link.slice)})
    edges = query("explorer_edges", {"run": run_id})
    set_id, rule = chosen_set(doc, query, run_id, values)
    scores = query("explorer_scores", {"run": run_id, "set": set_id}) if set_id else None
    g = tg.build(steps, edges, run_id, lanes=values["lanes"])
    tg.mark(g, scores, rule)
    collapsed: list[str] = []
    if n > tg.COLLAPSE_ABOVE:
        keep = set(values["expand"]) | ({g.nodes[selected]["scope"]} if selected is not None else set())
        collapsed = tg.default_collapsed(g, keep_open=keep)
        if collapsed:
            doc.text(f"{len(collapsed)} of {len(tg.scopes_in_order(g))} scopes are collapsed (over "
                     f"{tg.COLLAPSE_ABOVE} steps); the link's expand=... opens them.", "note")
    if rule is not None:
        c = tg.confusion(g)
        doc.text(f"{set_id}, {rule.describe()}: TP {c['TP']} · FP {c['FP']} · FN {c['FN']} · TN {c['TN']}"
                 + (f" · {c['flagged_unlabeled']} flagged step(s) unlabeled" if c["flagged_unlabeled"] else "")
                 + ". Unlabeled steps are neither right nor wrong.", "note")
    doc.heading("Dependency graph", 3)
    doc.graph(page_for_run(steps, edges, scores, rule.top_k if rule else None, rule.threshold if rule else None,
                           run_id, selected, values["color"], values["context"], tuple(collapsed), rule is not None,
                           vis_script=VIS_MARK, lanes=values["lanes"]))
    doc.table(steps_frame(g), f"steps-{run_id}", caption="The run's steps")
    if selected is not None:
        step_section(doc, query, run_id, selected, labels_of(link.slice))
    judges_section(doc, query, run, g, n)


# The run list's first rows in the file: the page shows 25 a page; a file is read offline, so it
# carries many more pages at once, within a size a reviewer's browser sorts without waiting.
RUN_LIST_ROWS = 1000


def run_list(doc: Document, query: Query, link: Link) -> None:
    """The run list the page opens on when no run is chosen: the slice's runs in its default order
    (by run id; the list's sort and filters live in the session, not the link), the label first
    and the full id last, as the page's table shows them."""
    params = {"run_q": "", "run_pattern": "%%", "f_corpus": [], "f_backbone": [], "f_difficulty": [], "f_outcome": [],
              "min_steps": None, "max_steps": None, "min_anomalous": None, "max_anomalous": None,
              "min_chain": None, "max_chain": None}
    total = int(query("explorer_runs_count", {"slice": link.slice, **params})["total"].iloc[0])
    doc.heading("Runs of the slice")
    if total == 0:
        doc.text("No run of the slice passes these filters.", "info")
        return
    runs = query("explorer_runs", {"slice": link.slice, **params, "sort": "run", "descending": False,
                                   "limit": RUN_LIST_ROWS, "offset": 0}).drop(columns=["total"], errors="ignore")
    shown = label_first(runs, runs["difficulty"])
    more = f"; the first {len(runs):,} by run id here" if len(runs) < total else ", sorted by run id"
    doc.text(f"{total:,} runs{more}. No run is open: the link's run=... opens one.", "note")
    doc.table(shown, "runs", caption="The slice's runs (label, then the full id)")


def chosen_set(doc: Document, query: Query, run_id: str, values: dict):
    """The link's prediction set and rule, when the set scores this run (else none, said)."""
    set_id = values["set"]
    if not set_id:
        return None, None
    if set_id not in set(query("explorer_run_sets", {"run": run_id})["set_id"]):
        known = query("explorer_set", {"set": set_id})
        doc.warning(f"The store holds no prediction set '{set_id}'; no detector is drawn." if known.empty else
                    f"Prediction set '{set_id}' scores no step of this run; no detector is drawn.")
        return None, None
    return set_id, rule_of(values)


def step_section(doc: Document, query: Query, run_id: str, selected: int, labels: str) -> None:
    step = query("explorer_step", {"run": run_id, "step": selected, "labels": labels}).iloc[0].to_dict()
    doc.heading(f"Step {selected} · {step.get('action')} · agent {step.get('agent')}", 3)
    doc.table(fields_frame(step), f"step-{selected}-fields")
    scores = query("explorer_step_scores", {"run": run_id, "step": selected})
    if len(scores):
        doc.table(scores.rename(columns={"n_scored": "steps scored"}), f"step-{selected}-scores",
                  caption="Score and rank of this step in every prediction set that scores its run "
                          "(rank 1 = the set's most suspicious step of the run).")
    doc.pre("Input text", step.get("text_in") or "This step has no input text (the release did not record its prompt).")
    doc.pre("Output text", step.get("text_out") or "This step has no output text.")
    structured = structured_output(step.get("text_out"))
    if structured is not None:
        doc.pre("Structured output", json.dumps(structured, indent=2, ensure_ascii=False))


def judges_section(doc: Document, query: Query, run: pd.Series, g, n: int) -> None:
    frame = query("explorer_judges", {"run": run["run_id"], "run_key": run.get("run_key"),
                                      "legacy_key": run.get("legacy_key"), "corpus": run["corpus"]})
    if frame.empty:
        return
    decisive = next((n_ for n_, d in g.nodes(data=True) if d.get("decisive")), None)
    picks = judges.verdicts(frame, decisive)
    if picks.empty:
        return
    doc.heading("Judges on this run", 3)
    doc.figure(judges.figure(picks, n, decisive))
    doc.table(picks, "judges")
