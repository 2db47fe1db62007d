"""The store's manifest: where the store is, which source folders make its current version, and
what they hold (``read_manifest``, ``table_files``, ``source_corpora``); written only by the
writer, whole and atomically (``write_manifest``). See ``auditatlas.store`` for the layout."""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .errors import StoreError
from .store_parts import table_parts

MANIFEST = "MANIFEST.json"
# 3: runs carry anomalous_steps and chain_length (the run list sorts on them without steps).
# 4: steps carry chain_role and chain_length (every chain view reads them); the manifest
#    entry of a source lists the corpora of its runs (run_corpora).
# 5: one word per meaning: prediction_sets.origin (release | rescore), configs.config_source.
FORMAT = 5
LOCK = ".lock"
LOCK_HOLDER = ".lock-holder"
STAGING_PREFIX = ".staging-"
TMP_PREFIX = ".tmp-"  # scratch folders a write makes inside the store (removed by recovery)
DERIVED_DIR = "derived"  # the query layer's cache of derived tables (queries/derived.py)
DEFAULT_STORE = Path(__file__).resolve().parent.parent / "data" / "store"
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}$")

Notify = Callable[[str], None]
StagedCheck = Callable[[Path], None]  # raises (one sentence) when the staged source must not land


def store_dir(path: str | Path | None = None) -> Path:
    """The store folder: explicit path, else $AUDITATLAS_STORE, else ./data/store."""
    if path:
        return Path(path)
    env = os.environ.get("AUDITATLAS_STORE")
    return Path(env) if env else DEFAULT_STORE


# =============================================================================================
# Reading the manifest


def read_manifest(root: str | Path) -> dict:
    """The manifest, or an empty one when the store does not exist yet.

    Raises StoreError with one sentence naming the problem and what to do.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root} is a file, not a store folder; point --store or AUDITATLAS_STORE at a folder.")
    path = root / MANIFEST
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {"format": FORMAT, "sources": {}, "retired": []}
    except OSError as exc:
        raise StoreError(f"{path} cannot be read ({exc.strerror or exc}); check the folder's permissions.") from exc
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path} is corrupt (not JSON: {exc.msg}); restore it or rebuild the store "
                         "(delete the folder, then `auditatlas demo` or `auditatlas ingest`).") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sources"), dict):
        raise StoreError(f"{path}: field 'sources' is missing; the file is not an Audit Atlas store manifest.")
    if manifest.get("format", 1) != FORMAT:
        raise StoreError(f"{path}: the store was written in format {manifest.get('format', 1)} by an older Audit Atlas; "
                         f"this version reads format {FORMAT}. Rebuild it (delete the folder, then `auditatlas demo` "
                         "or re-ingest your releases).")
    manifest.setdefault("retired", [])
    return manifest


# The sources people add to by hand: reviewers' verdicts (``verdicts.py``) and authors' tours
# (``views/tours.py``). Named here, where the store decides what a write to them keeps.
REVIEWS_SOURCE = "reviews"
TOURS_SOURCE = "tours"


def side_sources() -> tuple[str, ...]:
    """The sources people add to by hand (reviewers' verdicts, authors' tours): no derived
    table, step vector or search index reads them, so a write to them keeps those caches."""
    return (REVIEWS_SOURCE, TOURS_SOURCE)


def data_manifest(manifest: Mapping[str, Any]) -> dict:
    """``manifest`` less the side sources (and their retired folders): the store version as
    every table but the verdicts and the tours sees it."""
    side = side_sources()
    return {**manifest, "sources": {k: v for k, v in manifest.get("sources", {}).items() if k not in side},
            "retired": [r for r in manifest.get("retired", []) if r.get("source") not in side]}


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest as the store writes it (``_write_manifest``), less the side sources
    (``data_manifest``). The derived tables hash these bytes, so a build keyed by another
    process reading the same file is found, and a verdict or a tour saved (each replaces its
    own source) does not rebuild them: none of them reads verdicts or tours. (The search index
    keys on less: the sources holding steps, ``auditatlas.search.index.index_key``.)
    """
    if any(name in manifest.get("sources", {}) for name in side_sources()):
        manifest = data_manifest(manifest)
    return json.dumps(manifest, indent=2, sort_keys=True).encode()


def table_files(root: str | Path, table: str, manifest: dict | None = None, skip_empty: bool = False) -> list[str]:
    """Parquet parts holding ``table`` across all sources, in source-name then part order.

    Sources whose folder is missing are skipped here; :func:`health` reports them. ``skip_empty``
    leaves out the sources whose manifest counts no row of ``table`` (their parts are empty files).
    """
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    files: list[str] = []
    for name in sorted(manifest["sources"]):
        if skip_empty and (manifest["sources"][name].get("rows") or {}).get(table) == 0:
            continue
        folder = root / manifest["sources"][name]["dir"] / table
        try:
            if folder.is_dir():
                files.extend(str(p) for p in table_parts(folder.parent, table))
        except OSError as exc:  # a folder it may not enter: never a view silently without the source
            raise StoreError(_unreadable_source(name, folder.parent, exc)) from exc
    return files


def _unreadable_source(name: str, folder: Path, exc: OSError) -> str:
    return (f"source '{name}': its folder {folder} cannot be read ({exc.strerror or exc}); check its permissions, "
            f"re-ingest it or remove it with `auditatlas remove {name}`.")


def is_empty(root: str | Path) -> bool:
    return not read_manifest(root)["sources"]


def source_corpora(root: str | Path, manifest: dict | None = None) -> dict[str, list[str]]:
    """The corpora whose runs each store source holds: ``{source: [corpus, ...]}`` (sorted).

    Recorded in the source's manifest entry (``run_corpora``) when it is written. A source
    entry without the record (written before it existed) is answered from its runs parts'
    ``corpus`` column, here and nowhere else.
    """
    root = Path(root)
    manifest = manifest if manifest is not None else read_manifest(root)
    held: dict[str, list[str]] = {}
    for name, entry in sorted(manifest["sources"].items()):
        recorded = entry.get("run_corpora")
        held[name] = sorted(recorded) if isinstance(recorded, list) else _read_run_corpora(root / str(entry.get("dir", "")))
    return held


def source_run_ids(root: str | Path, source: str, bases: Collection[str]) -> set[str]:
    """The run ids source ``source`` holds now whose base is one of ``bases`` (the id itself, or
    the id with a ``~<n>`` suffix a writer gave a later run of the same trace); empty when the
    store has no such source.

    For a writer that adds runs to a source (the live receiver) and must not reuse an id; read
    under the writer lock, it is exactly what a following :meth:`SourceWriter.carry` carries.
    Only the ids asked about are kept, read one part's column at a time: a receiver writing
    every second must not hold every run id of a corpus that grows all day.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    root = Path(root)
    entry = read_manifest(root)["sources"].get(source)
    if entry is None or not bases:
        return set()
    wanted = pa.array(sorted(set(bases)), pa.string())
    held: set[str] = set()
    for part in table_parts(root / str(entry["dir"]), "runs"):
        ids = pq.read_table(part, columns=["run_id"]).column("run_id")
        base = pc.replace_substring_regex(ids, pattern=r"~[0-9]+$", replacement="")
        held.update(r for r in pc.filter(ids, pc.is_in(base, value_set=wanted)).to_pylist() if r is not None)
    return held


def _read_run_corpora(folder: Path) -> list[str]:
    held: set[str] = set()
    for part in table_parts(folder, "runs"):
        with pq.ParquetFile(part) as f:
            held.update(f.read(columns=["corpus"]).column("corpus").unique().to_pylist())
    return sorted(c for c in held if c is not None)


def write_manifest(root: Path, manifest: dict) -> None:
    manifest = {**manifest, "format": FORMAT}
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=root)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, root / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
