"""Each phase of the work after a write, timed and its memory peak measured, told as it ends.

The build of a large store runs for minutes after its import: a user watching it should see which
part is running and what each cost, and a memory budget is only checked if each part's peak is
known. The peak is the process's high-water resident size over the phase alone: Linux lets a
process reset its own high-water mark (``/proc/self/clear_refs``), so a small phase after a
large one still shows its own peak. Where that is not available the peak is the process's
high-water mark so far (``resource.getrusage``), which the report says.
"""
from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

Say = Callable[[str], None]
_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _reset_peak() -> bool:
    """Start a new high-water mark of this process's resident size; whether it could."""
    try:
        _CLEAR.write_text("5")
    except OSError:
        return False
    return True


def peak_mb() -> float:
    """This process's high-water resident size in MB (since the last reset, where there was one)."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
    return kb / (1024 * 1024 if sys.platform == "darwin" else 1024)


class Phase:
    """A phase's clock and memory high-water mark, both started when it is made."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.own = _reset_peak()
        self.start = time.perf_counter()

    def told(self) -> str:
        """The phase's wall time and memory peak so far, as one sentence."""
        scope = "peak" if self.own else "process peak so far"
        return f"{self.name}: {time.perf_counter() - self.start:.1f} s, {scope} {peak_mb():,.0f} MB"


@contextmanager
def phase(name: str, say: Say) -> Iterator[None]:
    """Say that ``name`` starts, run it, then say its wall time and memory peak (also when it
    fails: the failure is the caller's to report)."""
    started = Phase(name)
    say(f"{name}...")
    try:
        yield
    finally:
        say(started.told())
