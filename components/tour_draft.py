"""The tour being made: added to from every page's sidebar, edited and saved on /tour.

The draft is an ``auditatlas.views.tours.Tour`` held in the reader's session until it is saved in
the store, and kept in the URL too (``draft=``, compressed JSON), so a reload keeps it. Why the
URL, not the store: the draft is one author's work in progress in one tab, edited click by click;
written to the store, every add, move and sentence would switch the store's manifest, which
makes every page's cached queries cold (they are cached per store version) and shares one draft
between everyone reading that store. The view links (the export, "link to this view", a tour
stop) are written from each page's declared fields, so they never carry the draft. A view is added by its link as the URL holds it when the button is clicked (the
callback runs before the page, with the URL the browser sent), so what is added is what the
reader sees, whichever widgets the page binds to the URL. Every sentence and name is the
author's text: shown in text widgets or escaped (``components.safe``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from auditatlas.errors import AtlasError
from auditatlas.views import PageState, tours
from components import cached
from components.export_button import current_link
from components.safe import md

DRAFT_KEY = "tour_draft"
NOTE_KEY = "tour_draft_note"  # (kind, sentence) said once after the last action
SENTENCE_KEY = "tour_sentence"
NAME_KEY = "tour_draft_name"
AUTHOR_KEY = "tour_draft_author"
DRAFT_PARAM = "draft"  # the URL's copy of the draft


def draft() -> tours.Tour:
    """The session's draft; in a new session (a reload), the one the URL carries."""
    if DRAFT_KEY not in st.session_state:
        st.session_state[DRAFT_KEY] = _from_url()
    return st.session_state[DRAFT_KEY] or tours.Tour("")


def _from_url() -> tours.Tour | None:
    text = st.query_params.get(DRAFT_PARAM)
    if not text:
        return None
    try:
        tour = tours.decode_draft(text)
    except AtlasError as exc:
        st.session_state[NOTE_KEY] = ("warning", f"{exc} The draft starts empty.")
        return None
    st.session_state.setdefault(NAME_KEY, tour.name)
    st.session_state.setdefault(AUTHOR_KEY, tour.author or "")
    return tour


def _keep_in_url(tour: tours.Tour) -> None:
    """The URL's copy follows the draft (a page switch starts a URL without it: written again)."""
    text = tours.encode_draft(tour) if tour.stops else None
    if text and st.query_params.get(DRAFT_PARAM) != text:
        st.query_params[DRAFT_PARAM] = text
    elif not text and DRAFT_PARAM in st.query_params:
        del st.query_params[DRAFT_PARAM]


def _set(tour: tours.Tour, note: tuple[str, str] | None = None) -> None:
    st.session_state[DRAFT_KEY] = tour
    st.session_state[NOTE_KEY] = note
    _keep_in_url(tour)


def _note() -> None:
    note = st.session_state.pop(NOTE_KEY, None)
    if note:
        getattr(st, note[0])(md(note[1]))


# ---------------------------------------------------------------------------- the sidebar, every page


def sidebar(page: PageState) -> None:
    """The sidebar's Tour box: a sentence and "Add this view", or on /tour where the draft is."""
    current = draft()
    _keep_in_url(current)
    with st.sidebar.expander(f"Tour · {len(current.stops)} stop(s) in the draft", expanded=False):
        if page.path == tours.TOUR_PATH:
            st.caption("The draft is on this page, below the tour shown. A tour's stops are views of the other pages.")
            return
        st.text_area("Why this view (one sentence)", key=SENTENCE_KEY, max_chars=tours.SENTENCE_LIMIT,
                     placeholder="What the reader should see here")
        st.button("Add this view to the tour", key="tour_add", on_click=_add, args=(page,), width="stretch")
        _note()
        st.page_link("pages/tour.py", label="Reorder, remove, save the draft")


def _add(page: PageState) -> None:
    sentence = str(st.session_state.get(SENTENCE_KEY) or "").strip()
    if not sentence:
        st.session_state[NOTE_KEY] = ("warning", "Write the sentence first: it is shown above the view in the tour.")
        return
    try:
        tour = draft().add(current_link(page), sentence)
    except AtlasError as exc:
        st.session_state[NOTE_KEY] = ("warning", str(exc))
        return
    st.session_state[SENTENCE_KEY] = ""
    _set(tour, ("success", f"Added as stop {len(tour.stops)} of the draft."))


# ---------------------------------------------------------------------------- the editor, on /tour


def editor(on_saved: Callable[[str], None]) -> None:
    """The draft's stops (sentence editable, up, down, remove), its name and Save; ``on_saved``
    gets the name of a tour just saved (the page opens it)."""
    current = draft()
    _note()
    if not current.stops:
        st.info("The draft is empty. Open any page, set up its view, write a sentence under Tour in the sidebar "
                "and click Add this view to the tour.")
        return
    for i, stop in enumerate(current.stops):
        _stop_row(i, stop, len(current.stops))
    st.session_state.setdefault(NAME_KEY, current.name)
    st.session_state.setdefault(AUTHOR_KEY, current.author or "")
    left, middle, right = st.columns([2, 1, 1], vertical_alignment="bottom")
    left.text_input("Tour name", key=NAME_KEY, max_chars=tours.NAME_LIMIT, placeholder="e.g. paper figure 3")
    middle.text_input("Author (optional)", key=AUTHOR_KEY, max_chars=tours.NAME_LIMIT)
    # Every action is a callback: it runs before the script, so a rerun on the way (the page guard's) keeps it.
    right.button("Save the tour", key="tour_save", type="primary", width="stretch", on_click=_save, args=(on_saved,))
    st.caption("Saving under a name the store holds makes a new version of that tour (earlier versions are kept). "
               "The draft stays here until it is cleared.")
    st.button("Clear the draft", key="tour_clear", on_click=_clear)


def _stop_row(i: int, stop: tours.Stop, n: int) -> None:
    with st.container(border=True):
        head, up, down, drop = st.columns([8, 1, 1, 1], vertical_alignment="bottom")
        head.text_input(f"Stop {i + 1}: {tours.page_title(stop)}", value=stop.sentence, key=f"tour_sentence_{i}_{stop.link}",
                        on_change=_edit_sentence, args=(i, f"tour_sentence_{i}_{stop.link}"),
                        max_chars=tours.SENTENCE_LIMIT)
        up.button("↑", key=f"tour_up_{i}", disabled=i == 0, help="earlier", on_click=_move, args=(i, -1))
        down.button("↓", key=f"tour_down_{i}", disabled=i == n - 1, help="later", on_click=_move, args=(i, 1))
        drop.button("✕", key=f"tour_remove_{i}", help="remove this stop", on_click=_remove, args=(i,))
        st.text(stop.link)


def _clear() -> None:
    st.session_state[NAME_KEY] = st.session_state[AUTHOR_KEY] = ""
    _set(tours.Tour(""), ("info", "The draft is cleared."))


def _edit_sentence(i: int, key: str) -> None:
    _set(draft().with_sentence(i, str(st.session_state.get(key) or "")))


def _move(i: int, offset: int) -> None:
    _set(draft().move(i, offset))


def _remove(i: int) -> None:
    _set(draft().remove(i), ("info", f"Stop {i + 1} removed from the draft."))


def _save(on_saved: Callable[[str], None]) -> None:
    tour = replace(draft().renamed(str(st.session_state.get(NAME_KEY) or "")),
                   author=str(st.session_state.get(AUTHOR_KEY) or "").strip() or None)
    try:
        saved = tours.save(cached.store_root(), tour)
    except AtlasError as exc:
        st.session_state[NOTE_KEY] = ("error", str(exc))
        return
    _set(saved, ("success", f"Saved the tour '{saved.name}' ({len(saved.stops)} stops)."))
    on_saved(saved.name)


def load(tour: tours.Tour) -> None:
    """Put a saved tour in the draft (to edit it and save a new version)."""
    st.session_state[NAME_KEY] = tour.name
    st.session_state[AUTHOR_KEY] = tour.author or ""
    _set(tour, ("info", f"The tour '{tour.name}' is in the draft: edit it below and save it again."))
