"""A page's declared view state, read from the URL, its problems reported one way everywhere.

Every page calls ``read(DECLARATION)`` before drawing a widget. The declaration
(``auditatlas.views``) parses ``st.query_params``; each value the page cannot use (a wrong
type, out of range, an unknown choice, a parameter the page does not read) becomes one plain
sentence, drawn by ``report`` as one ``st.warning`` each, escaped, so a link's text shows as
text. Values the store does not hold are checked by the page after its widget exists
(``LinkView.not_held``), with the same sentence shape and the same ``report``.

Pages whose widgets are bound to the URL (``bind="query-params"``) lose a value a widget does
not offer: Streamlit drops it from the URL on the first run, without a word. So the link as it
was opened is remembered for as long as the reader stays on the page and has not set that
parameter to a value of their own, and its problems stay on screen until then.

Pages that write the URL themselves (``bound=False``) would open their default view when the
reader comes back through the app's navigation (a sidebar link carries no parameters, and
their state is the URL), where a bound widget keeps its value in the session: so each page's
own parameters are remembered per session and written back on such a return.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from auditatlas.view_state.state_fields import FALSE_TEXTS, TRUE_TEXTS, names_in, values_of
from auditatlas.views import LABELS, PageState, not_held
from components.safe import md

OPENING_KEY = "_view_state_opening_link"  # {"page": path, "raw": {name: [values]}}
LAST_KEY = "_view_state_last_views"  # {page path: {name: [values]}}: each page's own URL as last seen


@dataclass
class LinkView:
    page: PageState
    values: dict[str, Any]  # what the URL asks for now (defaults where it gives nothing usable)
    asked: dict[str, Any]  # what the link asked for when the page was opened (or the URL now)
    problems: list[str] = field(default_factory=list)

    def not_held(self, name: str, what: str, shown: Any, instead: str | None = None) -> None:
        """Report the link's ``name`` when the view shows ``shown`` instead (the store, or this
        view of it, does not hold what the link asked for)."""
        asked = self.asked.get(name)
        if _changed_since_first_drawn(name, shown) or asked in (None, "", []) or asked == shown:
            _forget(name)
            return
        report([not_held(what, asked, instead or f"showing '{shown}' instead")])

    def not_held_items(self, name: str, what: str, options: Iterable[Any]) -> None:
        """Report the items of a repeatable ``name`` that are not among ``options``."""
        held = {str(o) for o in options}
        missing = [str(v) for v in self.asked.get(name) or [] if str(v) not in held]
        if missing:
            report([not_held(what, ", ".join(missing), "left out")])


def _lost(now: list[str] | None, asked: list[str]) -> bool:
    return not now or (set(now) <= set(asked) and now != asked)


def _forget(name: str) -> None:
    """The view shows the link's value (nothing of it was lost), or the reader chose another:
    either way the URL speaks for ``name`` from now on."""
    opening = st.session_state.get(OPENING_KEY) or {}
    opening.get("raw", {}).pop(name, None)


def _changed_since_first_drawn(name: str, shown: Any) -> bool:
    """Whether the widget shows something else than on the page's first run: the reader chose
    (the check does not rely on the URL: a widget's change reaches it only from the browser)."""
    opening = st.session_state.get(OPENING_KEY) or {}
    first = opening.setdefault("shown", {}).setdefault(name, shown)
    return first != shown


def report(problems: Iterable[str]) -> None:
    """The one way a page reports a link's problem: one warning per sentence, as text."""
    for problem in problems:
        st.warning(md(problem))


def read(page: PageState, bound: bool = True, show: bool = True) -> LinkView:
    """``page``'s state from ``st.query_params``; its problems are reported here unless
    ``show`` is False (the page then calls ``report(view.problems)`` where it wants them)."""
    if bound:
        _bool_texts_for_toggles(page)
    else:
        _restore_on_return(page)
    current = {name: values_of(st.query_params, name) for name in names_in(st.query_params)}
    opening = st.session_state.get(OPENING_KEY)
    if not opening or opening.get("page") != page.path:
        opening = {"page": page.path, "raw": dict(current) if bound else {}}
    else:
        # Streamlit drops a value a widget does not offer, or keeps the items of a list it
        # does offer: then the URL lost (part of) the link, which is remembered. Once the URL
        # carries the link's value whole, or a value of the reader's own, it speaks for itself.
        opening = {"page": page.path, "raw": {k: v for k, v in opening["raw"].items() if _lost(current.get(k), v)},
                   "shown": opening.get("shown", {})}
    st.session_state[OPENING_KEY] = opening
    _remember(page, {name: current[name] for name in page.names if name in current})
    # The label choice is the sidebar's (components/filters.py): it reads and reports it before
    # its bound widget exists, as the slice.
    current.pop(LABELS.name, None)
    values, _ = page.parse(current)
    asked, problems = page.parse({**current, **{k: v for k, v in opening["raw"].items() if k != LABELS.name}})
    view = LinkView(page, values, asked, problems)
    if show:
        report(problems)
    return view


def _remember(page: PageState, raw: dict[str, list[str]]) -> None:
    st.session_state.setdefault(LAST_KEY, {})[page.path] = raw


def _restore_on_return(page: PageState) -> None:
    """Back on a page through the app's navigation (a sidebar link carries no parameters), the
    page shows the view the reader left it on in this session (the open run, the search),
    as a page whose widgets are bound to the URL does by itself: its last parameters are
    written back. Only on arrival from another page with none of this page's parameters: a
    link that gives any, or a click on the page's own link while on it, opens what it says."""
    opening = st.session_state.get(OPENING_KEY)
    last = (st.session_state.get(LAST_KEY) or {}).get(page.path)
    if not opening or opening.get("page") == page.path or not last:
        return
    if any(name in st.query_params for name in page.names):
        return
    for name, texts in last.items():
        st.query_params[name] = texts if len(texts) > 1 else texts[0]


def _bool_texts_for_toggles(page: PageState) -> None:
    """A declared bool is written ``1`` in a link (``Field.items``) and read as 1/true/yes, but a
    toggle bound to the URL reads only ``true``/``false`` and drops the rest without a word: the
    URL's spellings the declaration accepts are written as the toggle's, and the page run again
    (a toggle reads the URL the run started with; setting its state instead drops the parameter
    from the URL). Once per such link: the second run finds the toggle's spelling."""
    respelled = False
    for f in page.fields:
        if f.kind != "bool" or f.name not in st.query_params:
            continue
        text = st.query_params[f.name].lower()
        spelled = "true" if text in TRUE_TEXTS else "false" if text in FALSE_TEXTS else None
        if spelled is not None and st.query_params[f.name] != spelled:
            st.query_params[f.name] = spelled
            respelled = True
    if respelled:
        st.rerun()


def write(page: PageState, values: dict[str, Any]) -> None:
    """Replace ``page``'s own parameters in ``st.query_params`` with ``values`` (for pages
    that write the URL themselves; the slice's names are left to its widgets)."""
    wanted: dict[str, list[str]] = {}
    for f in page.fields:
        for name, text in f.items(values.get(f.name, f.default)):
            wanted.setdefault(name, []).append(text)
    for name in page.names:
        if name in wanted:
            if values_of(st.query_params, name) != wanted[name]:
                st.query_params[name] = wanted[name] if len(wanted[name]) > 1 else wanted[name][0]
        elif name in st.query_params:
            del st.query_params[name]
    _remember(page, {name: wanted[name] for name in page.names if name in wanted})
