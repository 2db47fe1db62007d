"""Patterns: steps like this one, and failure clusters of the slice's anomalous steps.

The URL holds the anchor step (run, step), k, the open cluster and the clustering's seed; the
sidebar's slice restricts both. The step vectors are built once per store version (progress
shown); clusters are cached per store version, slice and seed.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.errors import AtlasError
from auditatlas.patterns import MAX_CLUSTERS, build, clusters, similar, tables, vectors
from auditatlas.views.pages import PATTERNS
from components import cached, export_button, patterns_view, view_state
from components.filters import describe
from components.safe import md

slice_ = st.session_state.get("slice", {})
values = dict(view_state.read(PATTERNS, bound=False).values)


def _go(**changes) -> None:
    values.update(changes)
    view_state.write(PATTERNS, values)


def _from_widget(key: str, name: str, **also) -> None:
    _go(**{name: st.session_state[key]}, **also)


def _load() -> vectors.StepVectors:
    root = cached.store_root()
    if build.is_built(build.vectors_home(root) / build.version_key(root)):
        return vectors.load(root, cached.query)
    with st.status("Building the step vectors of this store version (once per version)…", expanded=True) as status:
        bar = st.progress(0.0)
        found = vectors.load(root, cached.query, lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=md(m)))
        status.update(label="Step vectors ready.", state="complete", expanded=False)
    return found


st.title("Patterns")
export_button.draw(PATTERNS)
st.caption(f"Is this failure a pattern? Steps of the slice ({md(describe(slice_))}) like a chosen step, and the "
           "slice's anomalous steps in clusters.")
try:
    found = _load()
except AtlasError as exc:
    st.error(md(str(exc)))
    st.stop()

st.header("Steps like this one")
left, middle, right = st.columns([3, 1, 1])
left.text_input("Run", value=values["run"] or "", key="patterns_run", placeholder="a run id (open a step in the "
                "Explorer and follow its “steps like this one”)", on_change=_from_widget, args=("patterns_run", "run"))
middle.number_input("Step", min_value=0, value=int(values["step"] or 0), step=1, key="patterns_step",
                    on_change=_from_widget, args=("patterns_step", "step"))
right.number_input("k", min_value=1, max_value=similar.MAX_K, value=int(values["k"]), step=1, key="patterns_k",
                   on_change=_from_widget, args=("patterns_k", "k"))
if values["run"]:
    try:
        nearest = similar.similar_steps(found, cached.query, values["run"], int(values["step"] or 0), slice_,
                                        int(values["k"]))
    except AtlasError as exc:
        st.warning(md(str(exc)))
    else:
        st.markdown(f"**{md(nearest.summary)}**")
        st.caption("Similarity = 0.6 × text cosine (TF-IDF words) + 0.2 same action + 0.1 same agent + 0.05 position "
                   "+ 0.05 size; 1 = the same step.")
        rows = tables.neighbour_rows(nearest, slice_)
        patterns_view.table(rows, "patterns-neighbours")
        patterns_view.download(rows, "similar-steps", "patterns-neighbours-csv")
else:
    st.info("Choose a step: give its run and step above, or open it in the Explorer and follow "
            "“steps like this one”.")

st.header("Failure clusters")
seed_box, count_box = st.columns(2)
seed_box.number_input("Seed", min_value=0, value=int(values["seed"]), step=1, key="patterns_seed",
                      on_change=_from_widget, args=("patterns_seed", "seed"), kwargs={"cluster": None})
count_box.number_input("Clusters", min_value=2, max_value=MAX_CLUSTERS, value=int(values["clusters"]),
                       step=1, key="patterns_clusters", on_change=_from_widget, args=("patterns_clusters", "clusters"),
                       kwargs={"cluster": None})
with st.status("Clustering the slice's anomalous steps…", expanded=False) as status:
    bar = st.progress(0.0)
    try:
        found_clusters = clusters.failure_clusters(found, cached.query, slice_, int(values["seed"]),
                                                   n_clusters=int(values["clusters"]),
                                                   progress=lambda f, m: bar.progress(min(max(f, 0.0), 1.0), text=md(m)))
    except AtlasError as exc:
        status.update(label="No clusters.", state="error")
        found_clusters, problem = None, str(exc)
    else:
        status.update(label=f"{len(found_clusters.members):,} {found_clusters.source} in "
                            f"{len(found_clusters.clusters)} clusters.", state="complete")
if found_clusters is None:
    st.warning(md(problem))
    st.stop()
summary = tables.cluster_rows(found_clusters)
patterns_view.table(summary, "patterns-clusters")
numbers = [c.number for c in found_clusters.clusters]
chosen = values["cluster"] if values["cluster"] in numbers else None
picked = st.selectbox("Open a cluster", [None] + numbers, index=0 if chosen is None else numbers.index(chosen) + 1,
                      format_func=lambda n: "—" if n is None else f"cluster {n}", key="patterns_cluster",
                      on_change=_from_widget, args=("patterns_cluster", "cluster"))
if values["cluster"] is not None and chosen is None:
    view_state.report([f"The link's cluster {values['cluster']} is not among the {len(numbers)} clusters of this "
                       "slice; no cluster is open."])
if chosen is not None:
    st.subheader(f"Cluster {chosen}")
    st.markdown("**Three example steps** (nearest the cluster's centre)")
    patterns_view.table(tables.example_rows(found_clusters, chosen, slice_), "patterns-examples")
    members = tables.member_rows(found_clusters, chosen, slice_)
    st.markdown(f"**Its {len(members):,} steps**")
    patterns_view.table(members.head(patterns_view.MEMBERS_SHOWN), "patterns-members", height=400)
    patterns_view.download(members, f"cluster-{chosen}", "patterns-members-csv")
