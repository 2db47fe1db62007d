"""Audit Atlas: entry point. Shared sidebar slice, first-launch store build, navigation."""
from __future__ import annotations

import streamlit as st

from components import cached
from components.filters import slice_sidebar
from auditatlas.store import is_empty

# No page_icon: a material-symbol favicon is fetched from fonts.gstatic.com (offline means offline).
st.set_page_config(page_title="Audit Atlas", layout="wide")


def ensure_store() -> None:
    """Build the embedded default corpus on first launch (offline, simulated, a few seconds)."""
    root = cached.store_root()
    if not is_empty(root):
        return
    from auditatlas.ingest.demo import build_default_store

    with st.status("First launch: building the embedded default corpus (simulated MAADBench + CatchBench release)…", expanded=True) as status:
        bar = st.progress(0.0)

        def progress(fraction: float, message: str) -> None:
            bar.progress(min(max(fraction, 0.0), 1.0), text=message)

        build_default_store(root, progress=progress)
        status.update(label="Default corpus built.", state="complete", expanded=False)
    st.cache_data.clear()


ensure_store()

st.session_state["slice"] = slice_sidebar(cached.query("slice_options"))

# No page icons either: the current page's icon becomes the favicon, fetched from fonts.gstatic.com.
pages = [
    # The default page lives at "/" (Streamlit gives it no other path): link to the Overview as "/?...".
    st.Page("pages/overview.py", title="Overview", default=True),
    st.Page("pages/boards.py", title="Boards", url_path="boards"),
]
st.navigation(pages).run()
