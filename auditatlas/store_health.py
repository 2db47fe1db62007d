"""Whether the store can be read: every source the manifest lists, its folders and (deep) every
part's footer, one sentence per problem (``health``)."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .errors import StoreError
from .schema import LATER_TABLES, TABLES
from .store_manifest import _unreadable_source, read_manifest
from .store_parts import table_parts


def health(root: str | Path, deep: bool = False) -> list[str]:
    """Problems that make the store (or one of its sources) unreadable, one sentence each.

    Checks the manifest, that every source folder and table exists, and (``deep``) that every
    Parquet footer can be read. An empty list means healthy.
    """
    root = Path(root)
    try:
        manifest = read_manifest(root)
    except StoreError as exc:
        return [str(exc)]
    if root.exists() and not os.access(root, os.R_OK | os.X_OK):
        return [f"{root} cannot be read (permission denied); check the folder's permissions."]
    return [problem for name, entry in sorted(manifest["sources"].items())
            if (problem := source_problem(root, name, entry, deep)) is not None]


def source_problem(root: Path, name: str, entry: Mapping[str, Any], deep: bool = False) -> str | None:
    """The sentence saying why source ``name`` cannot be read, or None (see :func:`health`)."""
    folder = root / str(entry.get("dir", ""))
    try:
        if not folder.is_dir():
            return (f"source '{name}' is listed in the manifest but its folder {folder} is missing; "
                    f"re-ingest it or remove it with `auditatlas remove {name}`.")
        if not os.access(folder, os.R_OK | os.X_OK):
            raise PermissionError(13, "permission denied")
        for table in TABLES:
            if (folder / table).is_dir() and not os.access(folder / table, os.R_OK | os.X_OK):
                raise PermissionError(13, "permission denied")
            parts = table_parts(folder, table)
            if not parts and table in LATER_TABLES and not (folder / table).exists():
                continue  # written before the table existed: it holds none of its rows
            if not parts:
                return (f"source '{name}' has no Parquet file for table '{table}' ({folder / table}); "
                        f"re-ingest it or remove it with `auditatlas remove {name}`.")
            if deep:
                bad = _unreadable_part(parts)
                if bad:
                    return (f"source '{name}': {bad} is corrupt (not readable Parquet); "
                            f"re-ingest it or remove it with `auditatlas remove {name}`.")
    except OSError as exc:
        return _unreadable_source(name, folder, exc)
    return None


def _unreadable_part(parts: list[Path]) -> str | None:
    for part in parts:
        try:
            pq.read_metadata(part)
        except Exception:  # noqa: BLE001 - any failure to read a footer means corrupt
            return str(part)
    return None
