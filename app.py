"""Audit Atlas: entry point. Shared sidebar slice, first-launch store build, navigation."""
from __future__ import annotations

import streamlit as st

from auditatlas.errors import AtlasError, StoreError
from auditatlas.store import is_empty
from auditatlas.views import page_frame
from auditatlas.views.pages import PAGES
from components import cached, tour_draft, view_blocks
from components.filters import labels_sidebar, slice_sidebar
from components.progress_view import ProgressView
from components.safe import md

# No page_icon: a material-symbol favicon is fetched from fonts.gstatic.com (offline means offline).
st.set_page_config(page_title="Audit Atlas", layout="wide")


def ensure_store() -> None:
    """Build the embedded default corpus on first launch (offline, simulated, a few seconds).

    Under the store lock, so five first visitors build it once: the others wait, then find it.
    """
    root = cached.store_root()
    if not is_empty(root):
        return
    from auditatlas.ingest.demo import ensure_default_store

    with st.status("First launch: building the embedded default corpus (simulated MAADBench, the CatchBench "
                   "release and a standard detector panel)…", expanded=True) as status:
        progress = ProgressView()
        if ensure_default_store(root, progress=progress, notify=lambda message: st.write(md(message))):
            progress(1.0, "Scoring the boards and fitting label doubt once, so that /boards and /review open "
                          "without waiting…")
            try:
                cached.keep_boards(notify=lambda sentence: st.write(md(sentence)))
            except Exception as exc:  # noqa: BLE001 - the corpus is built: a sentence, not a stop
                st.write(md(f"The boards could not be scored now ({exc}); /boards scores them on first open."))
        status.update(label="Default corpus ready.", state="complete", expanded=False)
    st.cache_data.clear()


def stop_on_broken_store() -> None:
    """A store that cannot be read gets one sentence in place of the pages, never a traceback."""
    problems = cached.store_problems()
    if problems:
        st.title("Audit Atlas")
        for problem in problems:
            st.error(md(problem))
        st.stop()


try:
    ensure_store()
except StoreError:
    pass  # reported just below, in one sentence
except AtlasError as exc:  # e.g. a default-store size in the environment that is not a number
    st.title("Audit Atlas")
    st.error(md(str(exc)))
    st.stop()
stop_on_broken_store()

# The label choice rides in the slice mapping: whatever takes the slice reads the chosen labels.
st.session_state["slice"] = {**slice_sidebar(cached.query("slice_options")), "labels": labels_sidebar()}
# The pages are their declarations (auditatlas/views): adding one is a declaration plus its module.
# No page icons: the current page's icon becomes the favicon, fetched from fonts.gstatic.com.
# The default page lives at "/" (Streamlit gives it no other path): link to the Overview as "/?...".
pages = [st.Page(p.script, title=p.title, default=True) if p.path == "/" else
         st.Page(p.script, title=p.title, url_path=p.path.strip("/")) for p in PAGES]
current = st.navigation(pages)
declared = next((p for p in PAGES if p.path.strip("/") == current.url_path), PAGES[0])
# Every page wears one badge, drawn here once: which labels its numbers read (how far the
# verdicts reach into its slice) and which of its corpora are simulated (views/page_frame.py,
# the exports' badge too).
if declared.badge:
    view_blocks.draw([page_frame.badge(cached.query, st.session_state["slice"])])
# Every page's view can be added to the tour being made (components/tour_draft.py).
tour_draft.sidebar(declared)
current.run()
