"""Re-score: fit registry detectors on the shared slice and write their prediction sets.

The run happens in this process (no cluster to start from a web page), through the same
engine the CLI runs on Dask. The sets land in the store as a new source, so every view sees
them at once (the caches key on the store manifest). Cancelling reruns the page, which stops
the run between two jobs; the engine writes only at the very end, so nothing is written.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.detectors import engine
from auditatlas.detectors.cross import cross_backbone, result_json
from auditatlas.detectors.features import DEFAULT_FEATURE_SET, FEATURE_SETS
from auditatlas.detectors.registry import engine_detectors, registry
from auditatlas.errors import AtlasError
from auditatlas.views import labels_of
from auditatlas.views.pages import RESCORE
from components import cached, export_button, view_state
from components.filters import describe
from components.safe import md, plotly, plotly_list
from components.tables import table

REPO = Path(__file__).resolve().parents[1]

slice_ = {k: v for k, v in st.session_state.get("slice", {}).items() if v}
detectors = registry()

st.title("Re-score")
st.caption("Fit detectors from the registry on the steps of the sidebar slice and write one prediction set per "
           "detector and seed into the store. Each seed holds out 20% of the rooms (runs, for corpora without "
           "rooms): a room is never on both sides. Unsupervised detectors fit on the training steps, one-class "
           "ones on the normal training steps, supervised ones on the labeled training steps; unlabeled steps are "
           "scored but never used as labels.")
st.markdown(f"**Slice:** {md(describe(slice_))}")
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(RESCORE)
export_button.draw(RESCORE)

counts = cached.query("step_label_counts", {"slice": slice_})
scorable, notes = engine.scorable_corpora(counts.to_dict(orient="records"))
if not counts.empty:
    table(counts, "rescore-label-counts", caption="Steps of the slice per corpus, by label.")


def _request(what: str) -> None:
    st.session_state[f"{what}_requested"] = True


def _run_rescore(chosen: list[str], feature_set: str, seeds: int) -> None:
    st.session_state["rescore_running"] = True
    bar = st.progress(0.0, text="Starting…")
    cancel = st.empty()  # the Cancel button lives only as long as the run
    cancel.button("Cancel", key="rescore_cancel", help="Stops the run after the current job; nothing is written.")
    try:
        result = engine.score(cached.store_root(), chosen, slice_, seeds, feature_set,
                              progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=md(m)))
    except AtlasError as exc:
        st.session_state["rescore_running"] = False
        cancel.empty()
        st.warning(md(str(exc)))
        return
    st.session_state["rescore_running"] = False
    cancel.empty()
    bar.progress(1.0, text="Done.")
    st.session_state["rescore_last"] = {
        "source": result.source, "seconds": result.seconds, "notes": result.notes,
        "sets": [{"set_id": s.set_id, "detector": s.detector, "supervision": s.supervision, "seed": s.seed,
                  "corpus": s.corpus, "feature_set": s.feature_set, "test_roc_auc": s.test_roc_auc,
                  "test_anomalies": s.test_pos, "test_normals": s.test_neg, "fit_seconds": round(s.fit_seconds, 3),
                  "score_seconds": round(s.score_seconds, 3), "peak_memory_mb": round(s.peak_memory_mb, 1)}
                 for s in result.sets],
    }


st.subheader("Run a re-score")
for note in notes:
    st.info(md(note))
if not scorable:
    st.warning("This slice cannot be re-scored: no corpus in it holds both anomalous and normal labeled steps, so "
               "no detector could be evaluated. Widen the slice in the sidebar.")
else:
    chosen = st.multiselect(
        "Detectors", engine_detectors(), default=RESCORE["rescore_detectors"].default, key="rescore_detectors", bind="query-params",
        help="; ".join(f"{d.name}: {d.title}, {d.supervision}" for d in detectors.values() if d.engine))
    left, right = st.columns(2)
    feature_set = left.selectbox(
        "Feature set", list(FEATURE_SETS), index=list(FEATURE_SETS).index(RESCORE["rescore_feature_set"].default),
        key="rescore_feature_set", bind="query-params", help="; ".join(f"{k}: {v}" for k, v in FEATURE_SETS.items()))
    seeds_field = RESCORE["rescore_seeds"]
    seeds = right.number_input("Seeds", min_value=seeds_field.low, max_value=seeds_field.high,
                               value=seeds_field.default, step=1, key="rescore_seeds",
                               bind="query-params", help="Seeds 0..N-1: one split and one fit per seed.")
    # A click records a request in session state (on_click runs before the page does), so the
    # request survives the navigation guard's rerun instead of being lost with the button value.
    st.button("Run re-score", type="primary", disabled=not chosen, key="rescore_run", on_click=_request,
              args=("rescore",))
    if st.session_state.pop("rescore_requested", False) and chosen:
        _run_rescore(chosen, feature_set, int(seeds))
    elif st.session_state.get("rescore_running"):
        # The last run was interrupted by a rerun (the Cancel button, or any other widget).
        st.session_state["rescore_running"] = False
        st.info("Re-score cancelled; nothing was written.")

last = st.session_state.get("rescore_last")
if last:
    if last["source"]:
        st.success(f"Wrote {len(last['sets'])} prediction set(s) into store source {md(last['source'])} in "
                   f"{last['seconds']:.1f} s. They are entrants on every view now.")
        st.code("\n".join(s["set_id"] for s in last["sets"]), language=None)
    for note in last["notes"]:
        st.info(md(note))
    table(pd.DataFrame(last["sets"]), "rescore-last", caption="This session's last re-score (test ROC-AUC over the "
          "labeled test steps; blank: undefined).")

st.subheader("Re-scored prediction sets")
sets = cached.query("rescore_sets", {"corpora": sorted(set(counts["corpus"])) if not counts.empty else [],
                                     "labels": labels_of(slice_)})
if sets.empty:
    st.caption("No re-scored prediction set on the slice's corpora yet.")
else:
    shown = sets.drop(columns=["params", "slice"])
    table(shown, "rescore-sets", caption=f"{len(sets)} re-scored set(s) on the slice's corpora, newest first. "
          "test_roc_auc: over each set's labeled test steps (blank: one class only, undefined).")
if (REPO / "pages" / "detectors.py").exists():
    st.markdown("Per-action AUROC grids and the overall comparison: [Detectors](/detectors)")


# ------------------------------------------------------------------------------- cross-backbone

def _heatmap(entry: dict) -> go.Figure:
    """ROC-AUC matrix: rows trained on, columns tested on; blank where undefined."""
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


st.subheader("Cross-backbone robustness")
st.caption("Train on one backbone's steps, test on another's (MAADBench Figure 7, left). One room-disjoint split "
           "over all backbones per seed, so the diagonal is the within-backbone score on the same held-out rooms. "
           "Computed on request; not stored.")
if not scorable:
    st.caption("Needs a slice with anomalous and normal labeled steps.")
else:
    cross_chosen = st.multiselect("Detectors for the matrix", engine_detectors(), default=RESCORE["cross_detectors"].default,
                                  key="cross_detectors", bind="query-params")
    c1, c2 = st.columns(2)
    cross_corpus = c1.selectbox("Corpus", scorable, key="cross_corpus", bind="query-params")
    link.not_held("cross_corpus", "corpus", cross_corpus)
    cross_field = RESCORE["cross_seeds"]
    cross_seeds = c2.number_input("Seeds", min_value=cross_field.low, max_value=cross_field.high,
                                  value=cross_field.default, step=1, key="cross_seeds",
                                  bind="query-params")
    st.button("Compute the matrix", disabled=not cross_chosen, key="cross_run", on_click=_request, args=("cross",))
    if st.session_state.pop("cross_requested", False) and cross_chosen:
        bar = st.progress(0.0, text="Starting…")
        try:
            result = cross_backbone(cached.store_root(), cross_chosen, slice_, int(cross_seeds), DEFAULT_FEATURE_SET,
                                    corpus=cross_corpus,
                                    progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=md(m)))
        except AtlasError as exc:
            st.warning(md(str(exc)))
        else:
            st.session_state["cross_last"] = {"slice": slice_, **result_json(result)}
    cross = st.session_state.get("cross_last")
    if cross and cross.get("slice") == slice_:
        st.caption(f"{md(cross['corpus'])}, feature set {md(cross['feature_set'])}, seeds {cross['seeds']}.")
        for note in cross["notes"]:
            st.info(md(note))
        for entry in cross["detectors"]:
            st.plotly_chart(_heatmap(entry), key=f"cross-{entry['detector']}")
            for note in entry["notes"]:
                st.caption(md(note))
