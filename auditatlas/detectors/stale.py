"""Which re-scored prediction sets a re-ingest makes stale.

Kept apart from the engine so an ingest can ask without importing scikit-learn and PyOD
(about 1.4 s of imports, paid on every CLI ingest before this split).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..query_function import Query
from ..store import read_manifest, source_corpora


def stale_prediction_sets(query: Query, root: str | Path, source: str) -> list[str]:
    """Re-scored prediction sets computed from the data of store source ``source``.

    Re-ingesting ``source`` invalidates them: their features and splits were read from the
    runs it held. A set records the sources it read (``params.data_sources``); a set without
    that record falls back to its corpus. Call it before or after the re-ingest: the answer
    names the same sets. ``query`` reads the store at ``root``.
    """
    root = Path(root)
    manifest = read_manifest(root)
    if not any(int((entry.get("rows") or {}).get("prediction_sets", 0) or 0) for entry in manifest["sources"].values()):
        return []  # no prediction set at all, so none is stale: the store's views need not be opened
    sets = query("rescore_provenance", {})
    corpora = set(source_corpora(root, manifest).get(source, ()))
    stale = []
    for rec in sets.to_dict(orient="records"):
        try:
            recorded = json.loads(rec.get("params") or "{}").get("data_sources")
        except (TypeError, ValueError):
            recorded = None
        if (source in recorded) if isinstance(recorded, dict) else (rec["corpus"] in corpora):
            stale.append(str(rec["set_id"]))
    return sorted(stale)
