"""The command line's drawer of the progress protocol (``auditatlas.progress``): tqdm's bar on a
terminal; on a pipe or a file, one plain line per tenth of the work (and the last), so logs stay
short and readable. tqdm rather than a hand-drawn bar: it already sizes the bar to the terminal,
throttles redraws and keeps the line clean when it shrinks."""
from __future__ import annotations

import sys
import time
from typing import TextIO

from ..progress import clamp

STEPS = 1000  # the bar's resolution: tqdm counts integers


class ProgressBar:
    """Hears ``(fraction, message)`` from any long command and draws it on ``stream`` (stderr)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr  # looked up now: it may be replaced
        self.tty = self.stream.isatty()
        self.last_tenth = -1
        self.began = time.perf_counter()
        self.bar = None
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=STEPS, file=self.stream, dynamic_ncols=True, leave=True,
                            bar_format="{percentage:3.0f}%|{bar:30}| {elapsed} {desc}")

    def __call__(self, fraction: float, message: str) -> None:
        fraction = clamp(fraction)
        if self.bar is not None:
            self.bar.set_description_str(message, refresh=False)
            self.bar.update(int(round(fraction * STEPS)) - self.bar.n)
            return
        tenth = int(fraction * 10)
        if tenth > self.last_tenth:
            self.last_tenth = tenth
            elapsed = time.perf_counter() - self.began
            self.stream.write(f"[{fraction:4.0%}] {elapsed:5.1f}s {message}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
