"""Results kept on disk per store version: what an analysis computes from the store that is too
dear to compute again in every process (the boards: about 9 CPU-s on the default store, about
50 s at a million rooms, paid by every new server on its first open of /boards).

A kept result is JSON, never a pickle: a store folder is shared as data, and reading it must
not run code. The caller encodes and decodes (``auditatlas.analyses.board_kept``); this module
only knows names, bytes and versions. A result that is one row per step (the supervised half of
label doubt: about 900,000 rows at 100,000 rooms) is a table, kept as Parquet with its notes as
JSON in the file's metadata (``remember_frame``): data too, and a tenth of JSON's bytes.

Where: ``STORE/kept/<key>/<name>.json``, ``key`` hashing the manifest as the data tables see it
(``queries.views.manifest_bytes``: a verdict or a tour changes no released-label result) and the
source of the code that computes (``auditatlas`` and ``queries``), so a new store version or a
changed analysis never reads an old result. A store the process cannot write keeps its results
under the system temp folder instead (as the derived tables do).

Consistency: the key is read before the computation and again after it; a result is kept only
when no write landed in between (its queries may have read two versions). A file is written to
a scratch name and renamed into place, so a reader sees a whole result or none; a file that
does not parse is a miss and is computed and written again.

What is removed: when a result is kept, the other versions' folders except the ``KEEP`` newest.
A reader still on a removed version computes its result again (a cache, nothing is lost).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from auditatlas import leases
from auditatlas.errors import StoreError
from auditatlas.store import manifest_bytes, read_manifest

_log = logging.getLogger(__name__)

KEPT_DIR = "kept"
KEEP = 3  # versions kept besides the current one (readers of a just-replaced version hit)
SCRATCH = ".tmp-"


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the source that computes a kept result: the core package and the query layer
    (Python and SQL). Read once per process; an edited analysis is a new key."""
    digest = hashlib.sha256()
    for package in _packages():
        for path in sorted(package.rglob("*")):
            if path.suffix in (".py", ".sql") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(package.parent)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def _packages() -> tuple[Path, ...]:
    import auditatlas

    return Path(auditatlas.__file__).resolve().parent, Path(__file__).resolve().parent


def version_key(root: str | Path) -> str | None:
    """The key of the store's current version and this code; None when the manifest cannot be
    read (nothing is kept then: the app's own check says why)."""
    try:
        manifest = read_manifest(Path(root))
    except (StoreError, OSError):
        return None
    digest = hashlib.sha256(manifest_bytes(manifest))
    digest.update(code_digest().encode())
    return digest.hexdigest()[:20]


def home(root: str | Path) -> Path:
    """``STORE/kept``, or a folder under the system temp folder when the store is read-only."""
    return leases.writable_home(Path(root) / KEPT_DIR, "kept", root)


def file_name(name: str) -> str:
    """The file a result named ``name`` is kept in. Names hold corpus names read from release
    files (untrusted): hashed, with a readable prefix of safe characters only."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:12]}.json"


def read(root: str | Path, key: str, name: str) -> Any | None:
    """The result ``name`` kept for version ``key``; None when there is none or it does not parse."""
    path = home(root) / key / file_name(name)
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _log.warning("kept result %s cannot be read (%s); computing it again", path, exc)
        return None
    if not isinstance(record, dict) or record.get("name") != name or "value" not in record:
        return None
    return record["value"]


def write(root: str | Path, key: str, name: str, value: Any) -> bool:
    """Keep ``value`` (JSON-able) as result ``name`` of version ``key``; False when it could not
    be written (a full disk: the result was computed and is shown, only not kept)."""
    data = json.dumps({"name": name, "value": value}, separators=(",", ":"), allow_nan=True).encode()
    return _keep(root, key, file_name(name), lambda scratch: scratch.write_bytes(data))


def _keep(root: str | Path, key: str, file: str, write_to: Callable[[Path], Any]) -> bool:
    """Write ``file`` of version ``key`` through a scratch file replaced into place (a reader
    sees it whole or not at all), then drop old versions; False when the disk refused it."""
    folder = home(root) / key
    scratch = folder / f"{SCRATCH}{uuid.uuid4().hex}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_to(scratch)
        os.replace(scratch, folder / file)
    except OSError as exc:
        scratch.unlink(missing_ok=True)
        _log.warning("could not keep %s in %s: %s", file, folder, exc)
        return False
    _remove_old(folder.parent, key)
    return True


def _remove_old(kept_home: Path, current: str) -> None:
    others = [p for p in kept_home.iterdir() if p.is_dir() and p.name != current]
    others.sort(key=_mtime, reverse=True)
    for path in others[KEEP:]:
        shutil.rmtree(path, ignore_errors=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


FRAME_NOTES = b"auditatlas.kept.notes"  # the Parquet metadata key holding a kept table's notes


def frame_file_name(name: str) -> str:
    return file_name(name).removesuffix(".json") + ".parquet"


def read_frame(root: str | Path, key: str, name: str, as_file: bool = False) -> tuple[Any, Any] | None:
    """The table ``name`` kept for version ``key`` and its notes; None when there is none or it
    cannot be read. ``as_file``: the Parquet file's path, not its rows (for a caller that hands
    it to a named query: at a million rooms label doubt's half is seconds to read into pandas
    and DuckDB reads what the query needs of it)."""
    import pyarrow.parquet as pq

    path = home(root) / key / frame_file_name(name)
    try:
        table = pq.read_schema(path) if as_file else pq.read_table(path)
        notes = json.loads(((table if as_file else table.schema).metadata or {})[FRAME_NOTES])
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file is a miss: computed again
        _log.warning("kept table %s cannot be read (%s); computing it again", path, exc)
        return None
    return (path if as_file else table.to_pandas()), notes


def write_frame(root: str | Path, key: str, name: str, frame: pd.DataFrame, notes: Any) -> bool:
    """Keep ``frame`` (and JSON-able ``notes``) as table ``name`` of version ``key``; False when
    it could not be written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), FRAME_NOTES: json.dumps(notes)})
    return _keep(root, key, frame_file_name(name), lambda scratch: pq.write_table(table, scratch))


def remember_frame(root: str | Path, name: str, compute: Callable[[], tuple[pd.DataFrame, Any]],
                   as_file: bool = False) -> tuple[Any, Any, bool]:
    """``remember`` for a table: the kept (frame, notes) of the store's current version, else
    ``compute()``'s, kept for the next process; and whether it was read (True). ``as_file``: a
    kept table is handed back as its file's path (:func:`read_frame`), a computed one as computed."""
    def computed() -> tuple[pd.DataFrame, Any]:
        frame, notes = compute()
        return frame, json.loads(json.dumps(notes))

    (frame, notes), was_read = _remembered(root, lambda key: read_frame(root, key, name, as_file), computed,
                                           lambda key, kept: write_frame(root, key, name, *kept))
    return frame, notes, was_read


def remember(root: str | Path, name: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
    """Result ``name`` of the store's current version: the kept one, else ``compute()`` (a
    JSON-able value), kept for the next process. Returns the value as JSON gives it back (a
    computed value is round-tripped too, so both paths hand the caller the same thing) and
    whether it was read (True) or computed here (False)."""
    return _remembered(root, lambda key: read(root, key, name),
                       lambda: json.loads(json.dumps(compute(), allow_nan=True)),
                       lambda key, value: write(root, key, name, value))


def _remembered(root: str | Path, read_kept: Callable[[str], Any], compute: Callable[[], Any],
                write_kept: Callable[[str, Any], Any]) -> tuple[Any, bool]:
    """The kept value of the store's current version (``read_kept(key)``, None when there is
    none), else ``compute()``'s, kept unless a write changed the version meanwhile (it would be
    kept under the wrong key); and whether it was read."""
    key = version_key(root)
    if key is not None:
        hit = read_kept(key)
        if hit is not None:
            return hit, True
    value = compute()
    if key is not None and version_key(root) == key:
        write_kept(key, value)
    return value, False


# Named queries whose answers are kept per store version like the boards' default views: too
# dear for a new server's first open (grid_means, the AUROC grid's means with their
# run-clustered variance: 0.65-0.77 s inside a new server's first /detectors at 100,000 rooms
# and eight sets, about 0.3 s on a quiet process). Only over the whole store (as the boards,
# so the kept files stay a handful per version) and under the released labels (the version
# key leaves the verdicts out; the reviewed and agreed labels read them).
# rescore_sets, the re-scored sets' test ROC-AUCs recomputed from their predictions (5.2 s on
# /rescore at a million rooms with three sets); the Overview's counts and rates (0.9 s of its
# 1.6 s script at a million rooms: the counts per corpus scan every prediction); the steps per
# label that open /rescore (1.6 s at a million rooms) and the grid's cells per set that open
# /detectors (0.3 s there); the actions of every step that the Explorer's search offers (0.2 s).
KEPT_QUERIES: frozenset[str] = frozenset({"grid_means", "rescore_sets", "corpus_counts", "slice_summary",
                                          "action_rates", "silent_failures", "step_label_counts", "grid_cells",
                                          "explorer_actions"})


def query_name(name: str, params: Any) -> str | None:
    """The kept name of named query ``name`` with ``params``, None when it is not kept: not one
    of ``KEPT_QUERIES``, a slice that filters, or another label choice. The slice's empty
    columns and the label choice are left out of the name (the page's session slice names every
    column, a write's keep names none), so both ask for the same answer."""
    from .labels import DEFAULT_LABELS, choice_of
    from .slices import filtered_columns

    if name not in KEPT_QUERIES or choice_of(params) != DEFAULT_LABELS:
        return None
    given = {k: v for k, v in dict(params or {}).items() if k not in ("labels", "slice")}
    if filtered_columns((params or {}).get("slice")):
        return None
    digest = hashlib.sha256(json.dumps(given, sort_keys=True, default=str).encode()).hexdigest()[:20]
    return f"query/{name}/{digest}"


def run_remembered(root: str | Path, name: str, params: Any, run: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``run()``, the named query ``name`` with ``params``: read from or kept on disk per store
    version when it is one of ``KEPT_QUERIES`` under the released labels."""
    kept_as = query_name(name, params)
    if kept_as is None:
        return run()
    frame, _, _ = remember_frame(root, kept_as, lambda: (run(), None))
    return frame


def remembering_runner(root: str | Path) -> Callable[..., pd.DataFrame]:
    """``queries.runner(root)`` through ``run_remembered``: the query function a write's keep
    hands the analyses, so what they ask of ``KEPT_QUERIES`` is kept for the pages."""
    from . import run

    return lambda name, params=None: run_remembered(root, name, params, lambda: run(name, params, root=root))
