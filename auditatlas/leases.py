"""Leases: a file lock that says "a live process uses this folder", gone when the process dies.

Scratch folders (a derived build in progress, a Dask cluster's worker space) and derived
builds a reader has bound are left behind by a process killed with SIGKILL; their age says
nothing about whether their owner still lives (a build at a million rooms takes minutes, an
app keeps a version for hours). An ``flock`` does: the kernel drops it with the process. So
the owner holds a lease on a file inside the folder (exclusive while it writes, shared while
it reads), and whoever cleans removes a folder only when it can take that file's lock itself.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

LEASE = ".lease"
# A folder without a lease file is left this long: its owner may have made it a moment ago
# and not yet taken the lease (after that, it died first, or the folder predates leases).
UNLEASED_GRACE_S = 60.0


class Lease:
    """A held lock on ``folder/.lease``; :meth:`release` (or the process's end) lets it go."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def hold(folder: str | Path, *, shared: bool = False) -> Lease | None:
    """Take a lease on ``folder`` (creating its lease file); None when the folder is gone or
    (exclusive) someone else holds it."""
    try:
        fd = os.open(Path(folder) / LEASE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return Lease(fd)


def is_free(folder: str | Path) -> bool:
    """Whether no live process holds a lease on ``folder`` (a folder without a lease file is
    free once ``UNLEASED_GRACE_S`` old)."""
    path = Path(folder) / LEASE
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return _age(Path(folder)) >= UNLEASED_GRACE_S
    except OSError:
        return False  # cannot tell: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def remove_if_free(folder: str | Path) -> bool:
    """Remove ``folder`` when no live process holds its lease; returns whether it did.

    Taken exclusively while removing, so an owner cannot take a lease on a half-removed folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return False
    if not (folder / LEASE).exists():
        if _age(folder) < UNLEASED_GRACE_S:
            return False
        shutil.rmtree(folder, ignore_errors=True)
        return not folder.exists()
    lease = hold(folder)
    if lease is None:
        return False
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        lease.release()
    return not folder.exists()


def _age(folder: Path) -> float:
    try:
        return time.time() - folder.stat().st_mtime
    except OSError:
        return 0.0
