"""Re-score: fit registry detectors on the shared slice and write their prediction sets; run an
LLM judge on it (``auditatlas.judges``) and write its set.

The run happens in this process (no cluster to start from a web page), through the same
engine the CLI runs on Dask. The sets land in the store as a new source, so every view sees
them at once (the caches key on the store manifest). Cancelling reruns the page, which stops
the run between two jobs; the engine writes only at the very end, so nothing is written.
A judge runs the same way (progress, Cancel, nothing written until the end; its replies are
cached as they arrive, so a cancelled judge loses none). Its API key is read from the
environment variable the reader names, in this process: the page never asks for the key itself.
The content is ``auditatlas.views.rescore_view``'s; this file holds the widgets and the runs.
"""
from __future__ import annotations

import os

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.detectors import DEFAULT_FEATURE_SET, FEATURE_SETS, engine
from auditatlas.detectors.cross import cross_backbone, result_json
from auditatlas.detectors.registry import engine_detectors, registry
from auditatlas.errors import AtlasError
from auditatlas.judges.engine import JudgeConfig, judge
from auditatlas.views import rescore_view as view
from auditatlas.views.pages import JUDGE_PROTOCOLS, RESCORE
from components import cached, export_button, view_blocks, view_state
from components.progress_view import ProgressView
from components.safe import md

slice_ = {k: v for k, v in st.session_state.get("slice", {}).items() if v}
detectors = registry()

st.title(RESCORE.title)
view_blocks.draw(view.intro(slice_))
# Read before the widgets: a bound widget drops a value it does not offer (see view_state).
link = view_state.read(RESCORE)
export_button.draw(RESCORE)

counts, scorable, notes = view.label_counts(cached.query, slice_)
view_blocks.draw(view.counts_table(counts))


def _request(what: str) -> None:
    st.session_state[f"{what}_requested"] = True


def _run_rescore(chosen: list[str], feature_set: str, seeds: int) -> None:
    st.session_state["rescore_running"] = True
    bar = ProgressView()
    cancel = st.empty()  # the Cancel button lives only as long as the run
    cancel.button("Cancel", key="rescore_cancel", help="Stops the run after the current job; nothing is written.")
    try:
        result = engine.score(cached.store_root(), chosen, slice_, seeds, feature_set,
                              progress=bar)
    except AtlasError as exc:
        st.session_state["rescore_running"] = False
        cancel.empty()
        st.warning(md(str(exc)))
        return
    st.session_state["rescore_running"] = False
    cancel.empty()
    bar.done()
    st.session_state["rescore_last"] = {
        "source": result.source, "seconds": result.seconds, "notes": result.notes,
        "sets": [{"set_id": s.set_id, "detector": s.detector, "supervision": s.supervision, "seed": s.seed,
                  "corpus": s.corpus, "feature_set": s.feature_set, "test_roc_auc": s.test_roc_auc,
                  "test_anomalies": s.test_pos, "test_normals": s.test_neg, "fit_seconds": round(s.fit_seconds, 3),
                  "score_seconds": round(s.score_seconds, 3), "peak_memory_mb": round(s.peak_memory_mb, 1)}
                 for s in result.sets],
    }


view_blocks.draw(view.run_heading(notes, scorable))
if scorable:
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
    view_blocks.draw(view.last_run(last))
view_blocks.draw(view.rescored_sets(cached.query, slice_, counts))

# ------------------------------------------------------------------------------------- judges
view_blocks.draw(view.judge_intro())


def _optional(value) -> float | None:
    return None if value is None else float(value)


def _run_judge(config: JudgeConfig) -> None:
    st.session_state["judge_running"] = True
    with st.status("Judging the slice…", expanded=True) as status:
        bar = ProgressView()
        cancel = st.empty()  # the Cancel button lives only as long as the run
        cancel.button("Cancel", key="judge_cancel", help="Stops the judge; nothing is written (every reply so far "
                                                         "is cached: running it again costs nothing for them).")
        try:
            result = judge(cached.store_root(), config, slice_,
                           progress=bar)
        except AtlasError as exc:
            st.session_state["judge_running"] = False
            cancel.empty()
            status.update(label="The judge did not run.", state="error")
            st.warning(md(str(exc)))
            return
        st.session_state["judge_running"] = False
        cancel.empty()
        bar.done()
        status.update(label=f"Judged {result.judged:,} of {result.runs:,} runs.", state="complete", expanded=False)
    st.session_state["judge_last"] = {"source": result.source, "seconds": result.seconds, "notes": result.notes,
                                      "lines": result.lines(), "sets": result.set_ids}


j1, j2 = st.columns(2)
protocol = j1.selectbox("Protocol", list(JUDGE_PROTOCOLS), key="judge_protocol", bind="query-params",
                        help="all-at-once: one call per run; step-by-step: one per step until the mistake; "
                             "binary-search: about log2 N calls; step-score: a probability per step")
model = j2.text_input("Model", key="judge_model", bind="query-params", placeholder="the model the endpoint serves")
base_url = j1.text_input("Base URL", key="judge_base_url", bind="query-params",
                         placeholder="http://localhost:8000/v1", help="the endpoint's OpenAI-compatible base URL")
key_env = j2.text_input("API key's environment variable", value=RESCORE["judge_api_key_env"].default,
                        key="judge_api_key_env", bind="query-params",
                        help="the NAME of the variable in the app's environment that holds the key; never the key")
with_truth = j1.checkbox("Show the judge the correct answer", key="judge_with_truth", bind="query-params")
conn_field = RESCORE["judge_max_connections"]
max_connections = j2.number_input("Max connections", min_value=conn_field.low, max_value=conn_field.high,
                                  value=conn_field.default, step=1, key="judge_max_connections", bind="query-params")
b1, b2, b3, b4 = st.columns(4)
max_calls = b1.number_input("Max new calls", min_value=1, value=None, step=1, key="judge_max_calls",
                            bind="query-params", placeholder="no limit", help="cached replies are free")
price_in = b2.number_input("Price in / M tokens", min_value=0.0, value=None, key="judge_price_in",
                           bind="query-params", placeholder="no price")
price_out = b3.number_input("Price out / M tokens", min_value=0.0, value=None, key="judge_price_out",
                            bind="query-params", placeholder="no price")
max_cost = b4.number_input("Max cost", min_value=0.0, value=None, key="judge_max_cost", bind="query-params",
                           placeholder="no limit", help="needs both prices")
key_env = (key_env or "").strip() or RESCORE["judge_api_key_env"].default
view_blocks.draw(view.judge_key_note(key_env, bool(os.environ.get(key_env))))
ready = bool((model or "").strip() and (base_url or "").strip())
st.button("Run judge", type="primary", disabled=not ready, key="judge_run", on_click=_request, args=("judge",),
          help=None if ready else "Give the model and the base URL first.")
if st.session_state.pop("judge_requested", False) and ready:
    _run_judge(JudgeConfig(
        protocol=protocol.replace("-", "_"), model=model.strip(), base_url=base_url.strip(), api_key_env=key_env,
        with_truth=bool(with_truth), max_connections=int(max_connections),
        max_calls=None if max_calls is None else int(max_calls), max_cost=_optional(max_cost),
        price_in=_optional(price_in), price_out=_optional(price_out)))
elif st.session_state.get("judge_running"):
    st.session_state["judge_running"] = False
    st.info("Judge cancelled; nothing was written (every reply so far is cached: running it again costs nothing "
            "for them).")
judged = st.session_state.get("judge_last")
if judged:
    view_blocks.draw(view.judge_last(judged))
view_blocks.draw(view.judge_sets(cached.query, counts))

# ------------------------------------------------------------------------------- cross-backbone
view_blocks.draw(view.cross_intro(scorable))
if scorable:
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
        bar = ProgressView()
        try:
            result = cross_backbone(cached.store_root(), cross_chosen, slice_, int(cross_seeds), DEFAULT_FEATURE_SET,
                                    corpus=cross_corpus,
                                    progress=bar)
        except AtlasError as exc:
            st.warning(md(str(exc)))
        else:
            st.session_state["cross_last"] = {"slice": slice_, **result_json(result)}
    cross = st.session_state.get("cross_last")
    if cross and cross.get("slice") == slice_:
        view_blocks.draw(view.cross_result(cross))
