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
import hashlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


# The build caches beside the store (derived tables, step vectors, search index) share one
# layout: ``HOME/<key>/`` per build, ``HOME/.tmp-<token>/`` scratch while one builds.
SCRATCH_PREFIX = ".tmp-"
STALE_AFTER_S = 60.0  # a build younger than this may be a write's, about to be read
FRESH_KEEP = 2  # young builds kept even when nobody holds them


def sweep(home: str | Path, keep: str | None, *, skip: frozenset[str] = frozenset(),
          fresh_keep: int = FRESH_KEEP, stale_after_s: float = STALE_AFTER_S) -> list[str]:
    """Remove the builds and scratch under ``home`` that no live process holds; the names removed.

    Kept: ``keep``, the folders named in ``skip`` (another cache's home inside this one), and the
    ``fresh_keep`` newest builds younger than ``stale_after_s`` (a write's CLI builds its
    version's cache for the app's next query: not worth throwing away the moment it lands).
    A builder's scratch is removed only once its builder is gone (it holds its lease).
    """
    fresh: list[tuple[float, Path]] = []
    removed: list[str] = []
    try:
        entries = [p for p in Path(home).iterdir() if p.is_dir() and p.name != keep and p.name not in skip]
    except OSError:
        return removed
    for path in entries:
        if path.name.startswith(SCRATCH_PREFIX):
            if remove_if_free(path):
                removed.append(path.name)
            continue
        age = _age(path)
        if age < stale_after_s:
            fresh.append((age, path))
        elif remove_if_free(path):
            removed.append(path.name)
    for _, path in sorted(fresh)[fresh_keep:]:
        if remove_if_free(path):
            removed.append(path.name)
    return removed


def temp_home(kind: str, store: str | Path) -> Path:
    """The system temp folder's home for ``kind`` builds of ``store`` (a store it cannot write)."""
    digest = hashlib.sha256(str(store).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"auditatlas-{kind}" / digest


def writable_home(own: Path, kind: str, store: str | Path) -> Path:
    """``own`` (inside the store) when this process can write there, else :func:`temp_home`."""
    try:
        own.mkdir(parents=True, exist_ok=True)
        probe = own / f".probe-{uuid.uuid4().hex}"
        probe.touch()
        probe.unlink()
        return own
    except OSError:
        alt = temp_home(kind, store)
        alt.mkdir(parents=True, exist_ok=True)
        return alt


@contextmanager
def build_into(folder: str | Path, is_built: Callable[[Path], bool]) -> Iterator[tuple[Path, Path]]:
    """Build a cache folder atomically: yields ``(scratch, out)``; what the body writes into
    ``out`` is renamed to ``folder`` when the body returns (a build another process finished
    first, with the same key, is kept as it is); ``scratch`` is removed either way.

    The scratch holds this builder's lease (a sweep leaves a live builder's scratch alone) and
    ``out`` carries a lease file from its first moment, so readers can lease it once in place.
    """
    folder = Path(folder)
    scratch = folder.parent / f"{SCRATCH_PREFIX}{uuid.uuid4().hex}"
    scratch.mkdir(parents=True)
    held = hold(scratch)
    out = scratch / "out"
    out.mkdir()
    (out / LEASE).touch()
    try:
        yield scratch, out
        try:
            os.replace(out, folder)
        except OSError:
            if not is_built(folder):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if held is not None:
            held.release()
