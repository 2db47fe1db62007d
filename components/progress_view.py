"""The app's drawer of the progress protocol (``auditatlas.progress``): ``st.progress`` whose text
is the producer's sentence, rendered as text (it may quote a run or a file name)."""
from __future__ import annotations

import streamlit as st

from auditatlas.progress import clamp

from .safe import md


class ProgressView:
    """A bar drawn where it is made; call it as any producer's ``progress``."""

    def __init__(self, text: str = "Starting…") -> None:
        self.bar = st.progress(0.0, text=md(text))

    def __call__(self, fraction: float, message: str) -> None:
        self.bar.progress(clamp(fraction), text=md(message))

    def done(self, text: str = "Done.") -> None:
        self.bar.progress(1.0, text=md(text))
