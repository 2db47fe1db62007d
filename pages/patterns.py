"""Patterns: steps like this one, and failure clusters of the slice's anomalous steps.

The URL holds the anchor step (run, step), k, the open cluster and the clustering's seed; the
sidebar's slice restricts both. The step vectors are built once per store version (progress
shown); clusters are cached per store version, slice and seed. The content is
``auditatlas.views.patterns_view``'s.
"""
from __future__ import annotations

import streamlit as st

from components.shell import ensure_app_navigation

ensure_app_navigation()

from auditatlas.errors import AtlasError
from auditatlas.patterns import MAX_CLUSTERS, MAX_K, build, vectors
from auditatlas.views import patterns_view as view
from auditatlas.views.pages import PATTERNS
from components import cached, export_button, view_blocks, view_state
from components.progress_view import ProgressView
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
        found = vectors.load(root, cached.query, ProgressView())
        status.update(label="Step vectors ready.", state="complete", expanded=False)
    return found


st.title(PATTERNS.title)
export_button.draw(PATTERNS)
view_blocks.draw(view.intro(slice_))
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
right.number_input("k", min_value=1, max_value=MAX_K, value=int(values["k"]), step=1, key="patterns_k",
                   on_change=_from_widget, args=("patterns_k", "k"))
view_blocks.draw(view.neighbours(found, cached.query, slice_, values))

st.header("Failure clusters")
seed_box, count_box = st.columns(2)
seed_box.number_input("Seed", min_value=0, value=int(values["seed"]), step=1, key="patterns_seed",
                      on_change=_from_widget, args=("patterns_seed", "seed"), kwargs={"cluster": None})
count_box.number_input("Clusters", min_value=2, max_value=MAX_CLUSTERS, value=int(values["clusters"]),
                       step=1, key="patterns_clusters", on_change=_from_widget, args=("patterns_clusters", "clusters"),
                       kwargs={"cluster": None})
with st.status("Clustering the slice's anomalous steps…", expanded=False) as status:
    result = view.grouped(found, cached.query, slice_, values, progress=ProgressView())
    if isinstance(result, list):
        status.update(label="No clusters.", state="error")
    else:
        status.update(label=view_blocks.markdown(view.clusters_line(result)), state="complete")
if isinstance(result, list):
    view_blocks.draw(result)
    st.stop()
view_blocks.draw(view.cluster_list(result))
numbers = [c.number for c in result.clusters]
chosen = values["cluster"] if values["cluster"] in numbers else None
picked = st.selectbox("Open a cluster", [None] + numbers, index=0 if chosen is None else numbers.index(chosen) + 1,
                      format_func=lambda n: "—" if n is None else f"cluster {n}", key="patterns_cluster",
                      on_change=_from_widget, args=("patterns_cluster", "cluster"))
view_blocks.draw(view.open_cluster(result, values["cluster"], slice_))
