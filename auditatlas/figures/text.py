"""Data strings for Plotly: HTML-escaped, so a name with markup shows as its text.

Plotly renders a subset of HTML (``<a href>``, ``<b>``) in every label, tick, hover text and
title; every name read from a release file goes through ``plotly`` before it reaches one.
The app (``components.safe``) and the export use the same function.
"""
from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any


def plotly(value: Any) -> str:
    """``value`` for a Plotly label, tick, hover text or title: HTML-escaped, so tags stay text."""
    text = "" if value is None else str(value)
    return html.escape(text, quote=True)


def plotly_list(values: Iterable[Any]) -> list[str]:
    return [plotly(v) for v in values]
