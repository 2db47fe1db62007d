"""Untrusted text, rendered as text.

Trace text is LLM output and every name read from a release file (backbone, agent, domain,
judge, file) is data. Streamlit renders Markdown (and its own ``:color[...]``, ``:emoji:`` and
``$latex$`` directives) in ``st.markdown``, ``st.caption``, ``st.info``, widget labels and
help; Plotly renders a subset of HTML (``<a href>``, ``<img>`` is dropped but ``<b>`` and
links are not) in every label, hover text and title. These helpers turn such a string into
one that each renderer shows literally. Use ``st.text``/``st.code``/``st.dataframe`` where
you can (they never interpret); use these where a sentence must mix our words and data.
"""
from __future__ import annotations

import re
from typing import Any

from auditatlas.figures.text import plotly, plotly_list  # noqa: F401 - one escape for app and export

# Every character CommonMark or Streamlit's Markdown extensions give a meaning to.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'])")


# U+2060 WORD JOINER: invisible, but it breaks the patterns of GitHub-flavoured autolinks, which
# Streamlit applies to bare URLs, www. names and e-mail addresses even when every Markdown
# character is escaped.
_JOIN = "\u2060"


def md(value: Any) -> str:
    """``value`` as Markdown that renders as exactly its text (one line; newlines become spaces)."""
    text = "" if value is None else str(value)
    text = text.replace("\r", " ").replace("\n", " ")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return (text.replace("\\:", "\\:" + _JOIN).replace("www\\.", "www" + _JOIN + "\\.")
            .replace("@", _JOIN + "@" + _JOIN))
