"""The Re-score page's content: what a re-score does, the slice's steps per corpus by label (what
it can fit on), this session's last re-score, the re-scored prediction sets on the slice's
corpora; the LLM judges (what a judge run does, this session's last one, every judge set of the
slice's corpora with its calls, tokens, cost, latency and abstentions, read from the set's
provenance); and the cross-backbone matrices.

Running a re-score, a judge or a matrix is an action of the reader's session: the app draws its widgets
and progress between the sections; ``page`` (the export) says what the link chose and shows
what the store holds.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analyses.board_kept import Remember
from ..detectors.request import scorable_corpora
from ..figures.text import plotly, plotly_list
from ..view_state.state_fields import describe_slice, labels_of
from . import blocks as b

Query = Callable[..., pd.DataFrame]


def intro(slice_: Mapping[str, Any]) -> list[b.Block]:
    return [b.note("Fit detectors from the registry on the steps of the sidebar slice and write one prediction set "
                   "per detector and seed into the store. Each seed holds out 20% of the rooms (runs, for corpora "
                   "without rooms): a room is never on both sides. Unsupervised detectors fit on the training steps, "
                   "one-class ones on the normal training steps, supervised ones on the labeled training steps; "
                   "unlabeled steps are scored but never used as labels."),
            b.say("**Slice:** {}", describe_slice(slice_))]


def label_counts(query: Query, slice_: Mapping[str, Any]) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The slice's steps per corpus by label, the corpora a re-score can fit on, and why the
    others cannot be."""
    counts = query("step_label_counts", {"slice": dict(slice_)})
    scorable, notes = scorable_corpora(counts.to_dict(orient="records"))
    return counts, list(scorable), list(notes)


def counts_table(counts: pd.DataFrame) -> list[b.Block]:
    if counts.empty:
        return []
    return [b.Table(counts, "rescore-label-counts", caption="Steps of the slice per corpus, by label.")]


def run_heading(notes: list[str], scorable: list[str]) -> list[b.Block]:
    out: list[b.Block] = [b.Heading("Run a re-score"), *(b.Text.plain(n, "info") for n in notes)]
    if not scorable:
        out.append(b.warning("This slice cannot be re-scored: no corpus in it holds both anomalous and normal labeled "
                             "steps, so no detector could be evaluated. Widen the slice in the sidebar."))
    return out


def last_run(last: Mapping[str, Any]) -> list[b.Block]:
    """This session's last re-score (what it wrote, its notes, its sets)."""
    out: list[b.Block] = []
    if last["source"]:
        out += [b.Text("Wrote {} prediction set(s) into store source {} in {:.1f} s. They are entrants on every "
                       "view now.", (len(last["sets"]), last["source"], last["seconds"]), "success"),
                b.Pre("", "\n".join(s["set_id"] for s in last["sets"]))]
    out += [b.Text.plain(n, "info") for n in last["notes"]]
    out.append(b.Table(pd.DataFrame(last["sets"]), "rescore-last", caption="This session's last re-score (test "
                       "ROC-AUC over the labeled test steps; blank: undefined)."))
    return out


def rescored_sets(query: Query, slice_: Mapping[str, Any], counts: pd.DataFrame) -> list[b.Block]:
    sets = query("rescore_sets", {"corpora": sorted(set(counts["corpus"])) if not counts.empty else [],
                                  "labels": labels_of(slice_)})
    out: list[b.Block] = [b.Heading("Re-scored prediction sets")]
    if sets.empty:
        out.append(b.note("No re-scored prediction set on the slice's corpora yet."))
    else:
        out.append(b.Table(sets.drop(columns=["params", "slice"]), "rescore-sets", caption=b.Text(
            "{} re-scored set(s) on the slice's corpora, newest first. test_roc_auc: over each set's labeled test "
            "steps (blank: one class only, undefined).", (len(sets),))))
    out.append(b.say("Per-action AUROC grids and the overall comparison: [Detectors](/detectors)"))
    return out


def keep_default_sets(query: Query) -> None:
    """Ask ``query`` (which keeps what it is told to keep, ``queries.kept.KEPT_QUERIES``) for the
    page's re-scored sets of the whole store, as the page asks for them."""
    counts, _, _ = label_counts(query, {})
    rescored_sets(query, {}, counts)


# -------------------------------------------------------------------------------------- judges

# The judge table's columns read from a set's provenance (``judges.engine._params``): column,
# path in ``params``. A released judge's provenance records none of them (blank cells).
JUDGE_FIGURES = (
    ("runs", ("runs",)), ("abstained", ("abstained",)), ("abstention_rate", ("abstention_rate",)),
    ("calls", ("calls",)), ("calls_per_run", ("calls_per_run",)), ("new_calls", ("new_calls",)),
    ("retries", ("retries",)), ("tokens_in", ("tokens_in",)), ("tokens_out", ("tokens_out",)),
    ("tokens_per_run", ("tokens_per_run",)), ("cost", ("cost",)),
    ("latency_p50_s", ("latency", "p50_s")), ("latency_p95_s", ("latency", "p95_s")),
)


def judge_intro() -> list[b.Block]:
    return [b.Heading("LLM judges"),
            b.note("Run an LLM judge on the runs of the sidebar slice through any OpenAI-compatible Chat Completions "
                   "endpoint (a hosted API, or a local vLLM, llama.cpp or Ollama server), as `auditatlas judge` "
                   "does: the Who&When protocols (all-at-once, step-by-step, binary-search) or a per-step score. "
                   "The API key is read from the environment variable you name, in the app's own environment; it "
                   "is never asked for here, shown, or written to the store. Replies are cached in the store: "
                   "running the same judge again costs only the calls the cache does not hold, and a cancelled "
                   "run writes nothing and loses no reply. The set is an entrant on every view like the released "
                   "judges.")]


def judge_key_note(env_name: str, is_set: bool) -> list[b.Block]:
    """Whether the key's variable is set in the app's environment (never its value)."""
    if is_set:
        return [b.note("The API key is read from the environment variable {} (set in the app's environment).", env_name)]
    return [b.note("The environment variable {} is not set in the app's environment: calls go without a key (a "
                   "local server usually needs none).", env_name)]


def judge_last(last: Mapping[str, Any]) -> list[b.Block]:
    """This session's last judge run: what it wrote, its summary line and notes."""
    out: list[b.Block] = []
    if last["source"]:
        out.append(b.Text("Wrote {} judge set(s) into store source {} in {:.1f} s. They are entrants on every view "
                          "now.", (len(last["sets"]), last["source"], last["seconds"]), "success"))
    else:
        out.append(b.warning("No run was judged; nothing was written."))
    out += [b.Text.plain(line) for line in last["lines"]]
    out += [b.Text.plain(n, "info") for n in last["notes"]]
    return out


def _figure(params: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = params
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def judge_rows(sets: pd.DataFrame) -> pd.DataFrame:
    """One row per judge set: its identity and the figures its provenance records."""
    rows = []
    for rec in sets.to_dict(orient="records"):
        try:
            params = json.loads(rec["params"]) if rec["params"] else {}
        except ValueError:
            params = {}
        params = params if isinstance(params, dict) else {}
        row = {k: rec[k] for k in ("set_id", "corpus", "origin", "protocol", "model")}
        row.update({name: _figure(params, path) for name, path in JUDGE_FIGURES})
        row.update({"created_at": rec["created_at"], "store_source": rec["store_source"]})
        rows.append(row)
    columns = ["set_id", "corpus", "origin", "protocol", "model", *(n for n, _ in JUDGE_FIGURES), "created_at",
               "store_source"]
    return pd.DataFrame(rows, columns=columns)


def judge_sets(query: Query, counts: pd.DataFrame) -> list[b.Block]:
    """Every judge set of the slice's corpora, with what each cost (its provenance)."""
    corpora = sorted(set(counts["corpus"])) if not counts.empty else []
    sets = query("judge_sets", {"corpora": corpora}) if corpora else pd.DataFrame()
    if sets.empty:
        return [b.note("No LLM judge set on the slice's corpora yet.")]
    table = judge_rows(sets)
    return [b.Table(table, "judge-sets", caption=b.Text(
        "{} judge set(s) on the slice's corpora, newest first, with what each set's provenance records: calls "
        "(new and cached) and tokens of the judge run that wrote it, tokens and calls per judged run, cost (blank: "
        "no price given), reply latency of its new calls, and the share of runs it abstained on (an unreadable, "
        "empty or refused reply: never a hit, never a miss). A released judge's provenance records none of these.",
        (len(table),)))]


def cross_intro(scorable: list[str]) -> list[b.Block]:
    out: list[b.Block] = [
        b.Heading("Cross-backbone robustness"),
        b.note("Train on one backbone's steps, test on another's (MAADBench Figure 7, left). One room-disjoint split "
               "over all backbones per seed, so the diagonal is the within-backbone score on the same held-out "
               "rooms. Computed on request; not stored.")]
    if not scorable:
        out.append(b.note("Needs a slice with anomalous and normal labeled steps."))
    return out


def cross_heatmap(entry: Mapping[str, Any]):
    """ROC-AUC matrix: rows trained on, columns tested on; blank where undefined."""
    import plotly.graph_objects as go

    z = np.array([[np.nan if v is None else v for v in row] for row in entry["roc_auc"]], dtype=float)
    labels = plotly_list(entry["backbones"])
    text = np.where(np.isnan(z), "", np.char.mod("%.3f", np.nan_to_num(z)))
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, text=text, texttemplate="%{text}", colorscale="RdBu", zmin=0.0, zmax=1.0, zmid=0.5,
        hoverongaps=False, colorbar={"title": "ROC-AUC"},
        hovertemplate="trained on %{y}<br>tested on %{x}<br>ROC-AUC %{z:.3f}<extra></extra>",
    ))
    fig.update_layout(title=plotly(entry["detector"]), height=120 + 48 * len(labels),
                      margin=dict(l=10, r=10, t=40, b=10), xaxis_title="tested on", yaxis_title="trained on")
    fig.update_yaxes(autorange="reversed")
    return fig


def cross_result(cross: Mapping[str, Any]) -> list[b.Block]:
    """The matrices of a computed cross-backbone run (``detectors.cross.result_json``)."""
    out: list[b.Block] = [b.note("{}, feature set {}, seeds {}.", cross["corpus"], cross["feature_set"],
                                 cross["seeds"])]
    out += [b.Text.plain(n, "info") for n in cross["notes"]]
    for entry in cross["detectors"]:
        out.append(b.Figure(cross_heatmap(entry), key=f"cross-{entry['detector']}"))
        out += [b.Text.plain(n, "note") for n in entry["notes"]]
    return out


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """What the store holds for the slice; the link's choices of what to run, said in words."""
    slice_, values = {k: v for k, v in link.slice.items() if v}, link.values
    counts, scorable, notes = label_counts(query, slice_)
    out = [*intro(slice_), *counts_table(counts), *run_heading(notes, scorable)]
    out.append(b.note("The link chooses detectors {} on feature set {}, seeds 0..{}. A re-score runs in the app (it "
                      "writes new prediction sets into the store); this file shows what the store holds.",
                      ", ".join(values["rescore_detectors"]) or "none", values["rescore_feature_set"],
                      int(values["rescore_seeds"]) - 1))
    out += rescored_sets(query, slice_, counts) + judge_intro()
    out.append(b.note("The link chooses judge protocol {} on model {}{}. A judge runs in the app (it calls the "
                      "endpoint and writes a prediction set); this file shows the judge sets the store holds.",
                      values["judge_protocol"], values["judge_model"] or "(none given)",
                      ", with the task's correct answer" if values["judge_with_truth"] else ""))
    out += judge_sets(query, counts) + cross_intro(scorable)
    out.append(b.note("The matrix is computed in the app on request (detectors {}, {} seed(s)); it is not kept in "
                      "the store, so the file does not hold it.", ", ".join(values["cross_detectors"]) or "none",
                      int(values["cross_seeds"])))
    return out
