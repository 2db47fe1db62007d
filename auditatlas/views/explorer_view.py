"""The Explorer's content: the slice's runs, one run's facts and dependency graph with ground
truth and a prediction set's flags, its steps, the open step in full, the judges' strip, and the
text search's sentences.

The app draws its widgets between the sections (the run list's sort and filters, the search
box, the set and rule pickers, the graph's options, the selectable step table and the step
selector); ``page`` calls them in order with the link's values, for the export.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from .. import graph as tg
from ..analyses.board_kept import Remember
from ..figures import judges as judge_figures
from ..figures.step import _value, fields_frame, steps_frame, structured_output
from ..figures.trace_graph import VIS_MARK, page_for_run
from ..run_labels import label_first, names_of, row_label
from ..set_labels import set_labels
from ..view_state.explorer_state import DEFAULT_TOP_K
from ..view_state.state_fields import labels_of
from . import blocks as b
from .app_link import ExportError
from .pages import patterns_url

Query = Callable[..., pd.DataFrame]
# The run list's first rows in the file: the page shows 25 a page; a file is read offline, so it
# carries many more pages at once, within a size a reviewer's browser sorts without waiting.
RUN_LIST_ROWS = 1000
RUNS_HEADING = "Runs of the slice"
STEP_HEADING = "Step detail"
JUDGES_HEADING = "Judges on this run"
# The run list's parameters when nothing narrows it (the page's sort and filters live in the
# session, not the link).
NO_FILTER = {"run_q": "", "run_pattern": "%%", "f_corpus": [], "f_backbone": [], "f_difficulty": [], "f_outcome": [],
             "min_steps": None, "max_steps": None, "min_anomalous": None, "max_anomalous": None,
             "min_chain": None, "max_chain": None}


def intro() -> list[b.Block]:
    """The page's opening (the app's: it speaks of the URL the reader has, not of a file)."""
    return [b.note("Pick a run to see its dependency graph: steps in trace order, one lane per scope (or per agent), "
                   "ground truth on every step and, for a chosen prediction set, which steps it flags. The URL keeps "
                   "the whole view: copy it to share exactly this.")]


# ------------------------------------------------------------------------ the run list


def no_runs() -> list[b.Block]:
    return [b.info("No run of the slice passes these filters.")]


def run_list_page(total: int, page: int, pages: int) -> list[b.Block]:
    """The app's run list above its table: the count and the page."""
    return no_runs() if total == 0 else [b.note("{:,} runs; page {} of {}. Select a row to open the run.",
                                                total, page, pages)]


def new_runs(n: int) -> list[b.Block]:
    """The live run list's notice: runs the store received since the list was drawn."""
    return [b.info("{:,} new run{} received since this list was drawn.", n, "" if n == 1 else "s")]


def run_list(query: Query, slice_: Mapping[str, Any]) -> list[b.Block]:
    """The run list the page opens on when no run is chosen: the slice's runs in its default order
    (by run id), the label first and the full id last, as the page's table shows them."""
    total = int(query("explorer_runs_count", {"slice": slice_, **NO_FILTER})["total"].iloc[0])
    out: list[b.Block] = [b.Heading(RUNS_HEADING)]
    if total == 0:
        return out + no_runs()
    runs = query("explorer_runs", {"slice": slice_, **NO_FILTER, "sort": "run", "descending": False,
                                   "limit": RUN_LIST_ROWS, "offset": 0}).drop(columns=["total"], errors="ignore")
    more = "; the first {:,} by run id here" if len(runs) < total else ", sorted by run id"
    return out + [b.note("{:,} runs" + more + ". No run is open: the link's run=... opens one.",
                         total, *([len(runs)] if len(runs) < total else [])),
                  b.Table(label_first(runs, runs["difficulty"], names_of(query, runs["run"])), "runs",
                          caption="The slice's runs (label, then the full id)")]


# ------------------------------------------------------------------------ the text search


def actions_in_slice(query: Query, slice_: Mapping[str, Any]) -> list[str]:
    """The actions the slice's steps take (the text search's action filter offers them)."""
    return query("explorer_actions", {"slice": dict(slice_)})["action"].tolist()


def keep_default(query: Query) -> None:
    """Ask ``query`` (which keeps what it is told to keep, ``queries.kept.KEPT_QUERIES``) for
    the whole store's actions, as the page asks for them: a scan of every step's action (0.2 s
    of a first open at a million rooms)."""
    actions_in_slice(query, {})


def unknown_actions(actions: list[str]) -> list[b.Block]:
    if not actions:
        return []
    return [b.warning("The slice has no step of action {}; the search leaves that filter out.",
                      ", ".join(f"'{a}'" for a in actions))]


def search_page(n_hits: int, page: int, pages: int) -> list[b.Block]:
    if n_hits == 0:
        return [b.info("No step of the slice contains this phrase.")]
    return [b.note("{:,} steps match; page {} of {}. Select a row to open that step here, or follow its link.",
                   n_hits, page, pages)]


# ------------------------------------------------------------------------ the open run


def no_run(run_id: str) -> str:
    return f"The store holds no run with id '{run_id}'."


def run_head(run: Mapping[str, Any], slice_: Mapping[str, Any]) -> list[b.Block]:
    """The run's id and facts, its label process, and whether it lies outside the slice."""
    words, values = ["corpus {}"], [str(run["corpus"])]
    for column in ("backbone", "difficulty", "domain"):
        if pd.notna(run.get(column)):
            words.append(column + " {}")
            values.append(str(run[column]))
    words += ["outcome **{}**", "{} steps", "{} labeled", "{} anomalous", "chain length {}", "{} scope(s)"]
    values += [str(run["outcome"]), int(run["n_steps"]), int(run["labeled_steps"]), int(run["anomalous_steps"]),
               int(run["chain_length"]), int(run["n_scopes"])]
    out: list[b.Block] = [b.Heading(b.Text("Run {}", (row_label(run),))), b.Pre("run id", str(run["run_id"])),
                          b.Text(" · ".join(words), tuple(values)), b.note("Labels: {}.", str(run["label_process"]))]
    in_slice = all(not v or str(run.get(c)) in [str(x) for x in v] for c, v in slice_.items() if c != "labels")
    if not in_slice:
        out.append(b.note("This run lies outside the sidebar slice (the link names it directly)."))
    return out


def open_step(n: int, step: int | None, asked: str | None = None) -> tuple[int | None, list[b.Block]]:
    """The step the link opens, or None with a sentence when the run has no such step
    (``asked``: the link's own text for it)."""
    if step is None or 0 <= step < n:
        return step, []
    return None, [b.warning("This run has {} steps (0 to {}); the link's step {} is not one of them, so no step is open.",
                            n, n - 1, asked or str(step))]


def rule_of(values: Mapping[str, Any]) -> tg.DecisionRule:
    """The link's decision rule: the set's own decisions (rule=own), its threshold, else its
    top_k, else the top 1 (as the page)."""
    if values.get("rule") == "own":
        return tg.DecisionRule(own=True)
    if values["threshold"] is not None:
        return tg.DecisionRule(threshold=float(values["threshold"]))
    return tg.DecisionRule(top_k=int(values["top_k"] if values["top_k"] is not None else DEFAULT_TOP_K))


def set_not_drawn(query: Query, set_id: str | None, scoring: list[str]) -> list[b.Block]:
    """Why the link's set is not drawn (none in the store, or none scoring this run)."""
    if not set_id or set_id in scoring:
        return []
    if query("explorer_set", {"set": set_id}).empty:
        return [b.warning("The store holds no prediction set '{}'; no detector is drawn.", set_id)]
    return [b.warning("Prediction set '{}' scores no step of this run; no detector is drawn.", set_id)]


def no_set_scores() -> list[b.Block]:
    return [b.note("No prediction set in the store scores this run.")]


@dataclass
class RunGraph:
    """One run's steps, edges and a set's scores, and the graph marked with them."""

    run_id: str
    steps: pd.DataFrame
    edges: pd.DataFrame
    scores: pd.DataFrame | None
    rule: tg.DecisionRule | None
    g: nx.MultiDiGraph

    @property
    def scopes(self) -> list[str]:
        return tg.scopes_in_order(self.g)

    @property
    def has_context(self) -> bool:
        """Whether the run has inferred full-context edges (hidden unless asked for)."""
        return any(d.get("kind") == tg.INFERRED_CONTEXT_KIND and d.get("provenance") == "inferred"
                   for _, _, d in self.g.edges(data=True))

    @property
    def decisive(self) -> int | None:
        return next((n for n, d in self.g.nodes(data=True) if d.get("decisive")), None)


def run_graph(query: Query, run_id: str, labels: str, set_id: str | None, rule: tg.DecisionRule | None,
              lanes: str) -> RunGraph:
    steps = query("explorer_steps", {"run": run_id, "labels": labels})
    edges = query("explorer_edges", {"run": run_id})
    scores = query("explorer_scores", {"run": run_id, "set": set_id}) if set_id else None
    g = tg.build(steps, edges, run_id, lanes=lanes)
    tg.mark(g, scores, rule)
    return RunGraph(run_id, steps, edges, scores, rule, g)


def unknown_scopes(run: RunGraph, expand: list[str]) -> list[b.Block]:
    """The link's scopes to open that this run does not have (only a long run's scopes collapse)."""
    unknown = [s for s in expand if s not in run.scopes] if len(run.steps) > tg.COLLAPSE_ABOVE else []
    if not unknown:
        return []
    return [b.warning("This run has no scope {}; it stays collapsed.", ", ".join(f"'{s}'" for s in unknown))]


def collapsed_scopes(run: RunGraph, expand: list[str], selected: int | None) -> list[str]:
    """The scopes drawn as one node: every scope of a run over ``tg.COLLAPSE_ABOVE`` steps but the
    ones the link opens and the open step's."""
    if len(run.steps) <= tg.COLLAPSE_ABOVE:
        return []
    keep = {s for s in expand if s in run.scopes} | ({run.g.nodes[selected]["scope"]} if selected is not None else set())
    return tg.default_collapsed(run.g, keep_open=keep)


def collapsed_note(run: RunGraph, collapsed: list[str], opened_by: str) -> list[b.Block]:
    """How many scopes are collapsed; ``opened_by``: our words saying what opens them."""
    if not collapsed:
        return []
    return [b.note("{} of {} scopes are collapsed (over {} steps); " + opened_by,
                   len(collapsed), len(run.scopes), tg.COLLAPSE_ABOVE)]


def confusion(run: RunGraph, set_name: str | None) -> list[b.Block]:
    """The set's flags against the labels on this run (``set_name``: the set's label)."""
    if run.rule is None:
        return []
    c = tg.confusion(run.g)
    unlabeled = " · {} flagged step(s) unlabeled" if c["flagged_unlabeled"] else ""
    return [b.note("{}, {}: TP {} · FP {} · FN {} · TN {}" + unlabeled + ". Unlabeled steps are neither right nor wrong.",
                   str(set_name), run.rule.describe(), c["TP"], c["FP"], c["FN"], c["TN"],
                   *([c["flagged_unlabeled"]] if c["flagged_unlabeled"] else []))]


def graph(run: RunGraph, selected: int | None, color: str, context: bool, collapsed: list[str],
          render: Callable[..., str] = page_for_run) -> list[b.Block]:
    """The run's graph (``render``: ``page_for_run``, or the app's cached copy of it)."""
    rule = run.rule
    return [b.Graph(render(run.steps, run.edges, run.scores, rule.top_k if rule else None,
                           rule.threshold if rule else None, run.run_id, selected, color, context, tuple(collapsed),
                           rule is not None, vis_script=VIS_MARK, lanes=run.g.graph.get("lanes", "scope"),
                           own=bool(rule and rule.own)))]


def steps_table(run: RunGraph) -> pd.DataFrame:
    return steps_frame(run.g)


# ------------------------------------------------------------------------ the open step


def _extra(step: Mapping[str, Any]) -> Any | None:
    raw = step.get("extra")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


def _text(label: str, value: Any, empty: str) -> b.Fold:
    value = _value(value)
    body = (b.Pre(b.Text("{:,} characters", (len(str(value)),)), str(value)),) if value else (b.note(empty),)
    return b.Fold(label, body, open=True)


def step_detail(step: Mapping[str, Any], scores: pd.DataFrame, key: str,
                similar_url: str | None = None) -> list[b.Block]:
    """One step in full: its fields, its score and rank in every set that scores its run, its
    texts, structured output and other recorded fields, every value as text. ``similar_url``
    (the Patterns page on this step) adds a "steps like this one" link."""
    out: list[b.Block] = [b.say("**Step {}** · {} · agent {}", int(step["step_idx"]), str(step.get("action")),
                                str(step.get("agent")))]
    if similar_url:
        out.append(b.Link("Steps like this one", similar_url))
    right: tuple[b.Block, ...] = (b.note("Score and rank of this step in every prediction set that scores its run "
                                         "(rank 1 = the set's most suspicious step of the run)."),)
    right += tuple(no_set_scores()) if scores.empty else (
        b.Table(named_sets(scores).rename(columns={"n_scored": "steps scored"}), f"{key}-scores",
                height=38 + 35 * 12, columns=(b.Column("prediction set", pinned=True),)),)
    out.append(b.Row(((b.Table(fields_frame(step), f"{key}-fields", height=38 + 35 * 13),), right), (2, 3)))
    text_out = step.get("text_out")
    out += [_text("Input text", step.get("text_in"),
                  "This step has no input text (the release did not record its prompt)."),
            _text("Output text", text_out, "This step has no output text.")]
    structured = structured_output(text_out)
    out.append(b.Fold("Structured output", (b.note("The output ends with no JSON object."),) if structured is None else
                      (b.Pre("", json.dumps(structured, indent=2, ensure_ascii=False), "json"),),
                      open=structured is not None))
    extra = _extra(step)
    out.append(b.Fold("Verification and other recorded fields",
                      (b.note("Nothing else was recorded for this step."),) if extra is None else
                      (b.Pre("", extra),) if isinstance(extra, str) else
                      (b.Pre("", json.dumps(extra, indent=2, ensure_ascii=False), "json"),)))
    return out


def named_sets(frame: pd.DataFrame) -> pd.DataFrame:
    """A table of prediction sets read by their labels (``set_labels``), the id last, to copy."""
    names = set_labels(frame.to_dict("records"))
    shown = frame.drop(columns=[c for c in ("method", "protocol", "model", "seed") if c in frame.columns])
    shown.insert(0, "prediction set", [names[str(s)] for s in frame["set_id"]])
    return shown[[c for c in shown.columns if c != "set_id"] + ["set_id"]]


def step_section(query: Query, run_id: str, selected: int | None, slice_: Mapping[str, Any]) -> list[b.Block]:
    """The open step of the run in full, or how to open one."""
    out: list[b.Block] = [b.Heading(STEP_HEADING, 3)]
    if selected is None:
        return out + [b.info("Choose a step in the table or the selector to read it in full.")]
    step = query("explorer_step", {"run": run_id, "step": selected, "labels": labels_of(slice_)}).iloc[0].to_dict()
    scores = query("explorer_step_scores", {"run": run_id, "step": selected})
    return out + step_detail(step, scores, f"detail-{selected}", similar_url=patterns_url(run_id, selected, slice=slice_))


# ------------------------------------------------------------------------ the judges' strip


def judges(query: Query, run: Mapping[str, Any], graph_: RunGraph, key: str = "judges") -> list[b.Block]:
    """Which step each judge (or detector) picked on this run against the human decisive step; nothing
    when no step-level set scores the run's corpus."""
    frame = query("explorer_judges", {"run": run["run_id"], "run_key": run.get("run_key"),
                                      "legacy_key": run.get("legacy_key"), "corpus": run["corpus"]})
    if frame.empty:
        return []
    out: list[b.Block] = [b.Heading(JUDGES_HEADING, 3)]
    decisive = graph_.decisive
    picks = judge_figures.verdicts(frame, decisive)
    if picks.empty:
        return out + [b.info("No prediction set in the store scores this run's corpus at step level.")]
    counts = picks["verdict"].value_counts()
    words, values = ["{} prediction sets"], [len(picks)]
    if decisive is not None:
        words.append("{} picked the human decisive step (step {})")
        values += [int(counts.get(judge_figures.HIT, 0)), decisive]
    else:
        words.append("this run has no human decisive step")
    if counts.get(judge_figures.ABSTAINED):
        words.append("{} abstained")
        values.append(int(counts[judge_figures.ABSTAINED]))
    if counts.get(judge_figures.NO_VERDICT):
        words.append("{} have no verdict on this run")
        values.append(int(counts[judge_figures.NO_VERDICT]))
    return out + [b.note("; ".join(words) + ". A pick is the judge's released top step, or the step it ranks first.",
                         *values),
                  b.Figure(judge_figures.figure(picks, len(graph_.steps), decisive), key=f"{key}-strip"),
                  b.Fold("The strip as a table", (b.Table(picks, f"{key}-table"),))]


# ------------------------------------------------------------------------ the export


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """The link's run (its facts, graph, steps, open step and judges), or the run list when it
    names none."""
    values, slice_ = link.values, link.slice
    if not values["run"]:
        return run_list(query, slice_)
    found = query("explorer_run", {"run": values["run"], "labels": labels_of(slice_)})
    if found.empty:
        raise ExportError(no_run(values["run"]))
    run = found.iloc[0].to_dict()
    run_id = str(run["run_id"])
    out = run_head(run, slice_)
    asked = (link.params.get("step") or [None])[-1]
    selected, problems = open_step(int(run["n_steps"]), values["step"], asked)
    out += problems
    run_sets = query("explorer_run_sets", {"run": run_id})
    scoring = run_sets["set_id"].tolist()
    out += set_not_drawn(query, values["set"], scoring)
    set_id = values["set"] if values["set"] in scoring else None
    run_ = run_graph(query, run_id, labels_of(slice_), set_id, rule_of(values) if set_id else None, values["lanes"])
    out += unknown_scopes(run_, values["expand"])
    collapsed = collapsed_scopes(run_, values["expand"], selected)
    out += collapsed_note(run_, collapsed, "the link's expand=... opens them.")
    out += confusion(run_, set_labels(run_sets.to_dict("records")).get(set_id) if set_id else None)
    out += [b.Heading("Dependency graph", 3),
            *graph(run_, selected, values["color"], values["context"], collapsed),
            b.Table(steps_table(run_), f"steps-{run_id}", caption="The run's steps")]
    return out + step_section(query, run_id, selected, slice_) + judges(query, run, run_)
