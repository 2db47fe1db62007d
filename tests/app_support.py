"""AppTest helpers the page tests share: open a page of the real app, read what it says."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from conftest import REPO


def page_texts(at: AppTest) -> str:
    """Every Markdown, title, header, caption, info and warning text of a run, one per line."""
    parts = [m.value for m in at.markdown] + [t.value for t in at.title] + [s.value for s in at.subheader]
    parts += [c.value for c in at.caption] + [i.value for i in at.info] + [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def badge_texts(at: AppTest) -> list[str]:
    """The page badge's items (``components/view_blocks.badge``) as the reader sees them."""
    import re

    found = [re.fullmatch(r":(\w+)-badge\[(.*)\]", str(m.value), re.S) for m in at.markdown]
    return [m[2].replace("\\", "").replace("\u2060", "") for m in found if m]


def open_page(store: Path, monkeypatch, page: str, timeout: float = 240, **params) -> AppTest:
    """The app on ``store``, opened straight on ``page`` with ``params`` as the link's query
    (as a deep link does: a first run of the entry page would draw the Overview for nothing)."""
    monkeypatch.setenv("AUDITATLAS_STORE", str(store))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout)
    at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at
