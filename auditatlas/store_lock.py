"""One writer at a time, and what an interrupted one left: the store's writer lock (``store_lock``,
re-entrant in a process, a file lock across processes, waiting or saying who holds it) and
``recover``, which removes staging leftovers and retired folders past their grace."""
from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from . import leases
from .errors import StoreBusy, StoreError
from .store_manifest import (
    DERIVED_DIR,
    LOCK,
    LOCK_HOLDER,
    STAGING_PREFIX,
    TMP_PREFIX,
    Notify,
    read_manifest,
    write_manifest,
)

# A replaced source folder is kept this long after it is retired: a reader may still be reading it.
RETIRE_GRACE_S = 120.0


# =============================================================================================
# The writer lock


_PROCESS_LOCKS: dict[str, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
_HELD: dict[str, list] = {}  # root -> [file descriptor, depth]


def _process_lock(key: str) -> threading.RLock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(key, threading.RLock())


def lock_holder(root: str | Path) -> str:
    try:
        return (Path(root) / LOCK_HOLDER).read_text().strip() or "another writer"
    except OSError:
        return "another writer"


@contextmanager
def store_lock(root: str | Path, wait: bool = True, notify: Notify | None = None) -> Iterator[None]:
    """Hold the store's writer lock (re-entrant within a process, an flock across processes).

    A writer that finds the lock taken says so through ``notify`` and waits, or with
    ``wait=False`` raises StoreBusy naming the holder.
    """
    import fcntl

    root = Path(root)
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root} is a file, not a store folder; point --store or AUDITATLAS_STORE at a folder.")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"the store folder {root} cannot be made ({exc.strerror or exc}); "
                         "point --store or AUDITATLAS_STORE at a folder you can write.") from exc
    key = str(root.resolve())
    rlock = _process_lock(key)
    if not rlock.acquire(blocking=False):
        if not wait:
            raise StoreBusy(f"the store {root} is being written by {lock_holder(root)}; try again when it finishes.")
        if notify:
            notify(f"waiting for the store lock held by {lock_holder(root)}…")
        rlock.acquire()
    try:
        held = _HELD.get(key)
        if held is None:
            try:
                fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"{root} cannot be written ({exc.strerror or exc}); "
                                 "check the folder's permissions.") from exc
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if not wait:
                        raise StoreBusy(f"the store {root} is being written by {lock_holder(root)}; "
                                        "try again when it finishes.") from None
                    if notify:
                        notify(f"waiting for the store lock held by {lock_holder(root)}…")
                    fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            _write_holder(root)
            held = _HELD[key] = [fd, 0]
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
            if held[1] == 0:
                del _HELD[key]
                try:
                    (root / LOCK_HOLDER).unlink(missing_ok=True)
                finally:
                    fcntl.flock(held[0], fcntl.LOCK_UN)
                    os.close(held[0])
    finally:
        rlock.release()


def _write_holder(root: Path) -> None:
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:4]))
    text = f"process {os.getpid()} ({command or 'python'}) since {datetime.now(timezone.utc).isoformat(timespec='seconds')}"
    try:
        (root / LOCK_HOLDER).write_text(text)
    except OSError:
        pass


# =============================================================================================
# Recovery


def recover(root: str | Path, notify: Notify | None = None) -> list[str]:
    """Remove leftovers of interrupted writes; call with the lock held. Returns what it removed.

    Leftovers: staging folders, temporary manifests, scratch folders, source folders the
    manifest does not know (a crash between the rename and the manifest switch), and retired
    folders past their grace period.
    """
    root = Path(root)
    if not root.is_dir():
        return []
    manifest = read_manifest(root)
    removed: list[str] = []
    for path in sorted(root.iterdir()):
        if path.name.startswith((STAGING_PREFIX, TMP_PREFIX, ".manifest-")):
            _remove(path)
            removed.append(path.name)
    live = {Path(e["dir"]).name for e in manifest["sources"].values()}
    now = time.time()
    keep_retired, expired = [], []
    for item in manifest["retired"]:
        (expired if now - float(item.get("at", 0)) >= RETIRE_GRACE_S else keep_retired).append(item)
    retired_names = {Path(item["dir"]).name for item in keep_retired}
    sources = root / "sources"
    if sources.is_dir():
        for path in sorted(sources.iterdir()):
            if path.name not in live and path.name not in retired_names:
                _remove(path)
                removed.append(f"sources/{path.name}")
    if expired:
        manifest["retired"] = keep_retired
        write_manifest(root, manifest)
    removed += _dead_derived_scratch(root)
    if removed and notify:
        notify("removed leftovers of interrupted writes: " + ", ".join(removed))
    return removed


def _dead_derived_scratch(root: Path) -> list[str]:
    """Remove ``derived/.tmp-*`` folders whose build died (its lease is free, auditatlas.leases)."""
    home = root / DERIVED_DIR
    if not home.is_dir():
        return []
    removed = []
    for path in sorted(home.iterdir()):
        if path.name.startswith(TMP_PREFIX) and leases.remove_if_free(path):
            removed.append(f"{DERIVED_DIR}/{path.name}")
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
