"""The Parquet store: one folder per ingest source, switched in atomically by a manifest.

Layout::

    STORE/MANIFEST.json            {"format": 1, "sources": {NAME: {"dir": ..., ...}}}
    STORE/sources/NAME-<token>/    one Parquet file per table of auditatlas.schema

A write puts a complete new folder beside the old one, then replaces MANIFEST.json with
``os.replace`` (atomic on POSIX). Readers only ever see a whole old or a whole new source, and
a failed ingest leaves the manifest, and so the store, exactly as it was. Re-ingesting a source
replaces its folder, so the result is identical and holds no duplicates.

A *source* is an ingest unit (``whowhen``, ``catchbench``, ``demo``...), not a corpus: one
source may bring rows of several corpora (the CatchBench release brings the PRE configs and the
Who&When judge predictions), and every row carries its own ``corpus``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import StoreError
from .schema import TABLES, empty_table

MANIFEST = "MANIFEST.json"
DEFAULT_STORE = Path(__file__).resolve().parent.parent / "data" / "store"
_SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,80}$")

TableLike = Any  # pa.Table | pandas.DataFrame | list[dict]


def store_dir(path: str | Path | None = None) -> Path:
    """The store folder: explicit path, else $AUDITATLAS_STORE, else ./data/store."""
    if path:
        return Path(path)
    env = os.environ.get("AUDITATLAS_STORE")
    return Path(env) if env else DEFAULT_STORE


def read_manifest(root: str | Path) -> dict:
    """The manifest, or an empty one when the store does not exist yet."""
    path = Path(root) / MANIFEST
    if not path.exists():
        return {"format": 1, "sources": {}}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: the store manifest cannot be read ({exc}).") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sources"), dict):
        raise StoreError(f"{path}: field 'sources' is missing; the manifest is not a store manifest.")
    return manifest


def table_files(root: str | Path, table: str) -> list[str]:
    """Parquet files holding ``table`` across all sources, in source-name order."""
    root = Path(root)
    manifest = read_manifest(root)
    files = []
    for name in sorted(manifest["sources"]):
        path = root / manifest["sources"][name]["dir"] / f"{table}.parquet"
        if path.exists():
            files.append(str(path))
    return files


def is_empty(root: str | Path) -> bool:
    return not read_manifest(root)["sources"]


def conform(name: str, data: TableLike | None) -> pa.Table:
    """Cast adapter output to the schema of table ``name`` (missing columns become null)."""
    schema = TABLES[name]
    if data is None:
        return empty_table(name)
    if isinstance(data, list):
        cols = {f.name: [row.get(f.name) for row in data] for f in schema}
        return pa.table(cols, schema=schema)
    if not isinstance(data, pa.Table):
        data = pa.Table.from_pandas(data, preserve_index=False)
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise StoreError(f"table '{name}' has columns outside the schema: {sorted(unknown)}")
    arrays = []
    for field in schema:
        if field.name in data.column_names:
            arrays.append(data.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(data.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def write_source(
    root: str | Path,
    source: str,
    tables: Mapping[str, TableLike],
    meta: Mapping[str, Any] | None = None,
) -> dict:
    """Replace source ``source`` with ``tables``, atomically. Returns its manifest entry.

    Every schema table is written (empty where the adapter has none) so DuckDB views never
    need to guess a table's shape.
    """
    if not _SOURCE_NAME.match(source):
        raise StoreError(f"source name '{source}' must be lower-case letters, digits, '.', '_' or '-'.")
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise StoreError(f"unknown table(s) {sorted(unknown)}; the schema has {list(TABLES)}.")
    conformed = {name: conform(name, tables.get(name)) for name in TABLES}
    from .validate import check_invariants  # local: validate imports duckdb

    check_invariants(conformed, source)

    root = Path(root)
    (root / "sources").mkdir(parents=True, exist_ok=True)
    folder = f"{source}-{uuid.uuid4().hex[:12]}"
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{source}-", dir=root))
    try:
        for name, table in conformed.items():
            pq.write_table(table, staging / f"{name}.parquet", compression="zstd")
        os.replace(staging, root / "sources" / folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

    manifest = read_manifest(root)
    old = manifest["sources"].get(source)
    entry = {
        "dir": f"sources/{folder}",
        "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "rows": {name: t.num_rows for name, t in conformed.items()},
        **dict(meta or {}),
    }
    manifest["sources"][source] = entry
    _write_manifest(root, manifest)
    if old:
        shutil.rmtree(root / old["dir"], ignore_errors=True)
    return entry


def remove_source(root: str | Path, source: str) -> bool:
    """Drop a source from the store (atomic). Returns whether it was there."""
    root = Path(root)
    manifest = read_manifest(root)
    old = manifest["sources"].pop(source, None)
    if old is None:
        return False
    _write_manifest(root, manifest)
    shutil.rmtree(root / old["dir"], ignore_errors=True)
    return True


def _write_manifest(root: Path, manifest: dict) -> None:
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
