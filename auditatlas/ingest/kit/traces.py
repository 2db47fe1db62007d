"""What the adapters of your own traces share: OTLP spans (:mod:`..otlp`) and agentpile run
records (:mod:`..trajectory`) meet the store in the same words.

- the edge kinds and provenances both write, so a tool call is ``tool_call``/``observed`` in
  either format and the Explorer draws it the same way;
- the label process of an unlabeled corpus;
- how an ``extra`` column is encoded (JSON text, absent fields left out, text kept as written,
  NaN and the infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``);
- the rule for ``--corpus NAME``: a name no other import holds.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import AtlasError
from .jsonfiles import json_text

# Edge kinds (data/README.md, "edges").
TOOL_CALL = "tool_call"  # into the step that ran a tool the source step called
HANDOFF = "handoff"  # where the acting agent changes
CHILD = "child"  # an OTLP parent link that is neither of the above
LINK = "link"  # an OTLP span link that is neither of the above
DATA = "data"  # a result or value flowing into a later step
CONTEXT = "context"  # a step assumed to see every earlier one
READ_WRITE = "read_write"  # two accesses to one resource

# Provenances: recorded by the source, from a stated rule, or assumed.
OBSERVED, MODELED, INFERRED = "observed", "modeled", "inferred"

UNLABELED = "unlabeled"  # steps.label_source of a step no label process labeled
LABEL_PROCESS_NONE = "none (unlabeled traces)"


def extra_json(fields: dict[str, Any], drop_empty: bool = False) -> str:
    """An ``extra`` column: ``fields`` as JSON text without the absent ones (None; with
    ``drop_empty`` also empty lists and objects), non-ASCII text as written."""
    def absent(value: Any) -> bool:
        return value is None or (drop_empty and isinstance(value, (list, dict)) and not value)

    kept = {k: v for k, v in fields.items() if not absent(v)}
    return json_text(kept, ensure_ascii=False)


def edge_row(run_id: str, corpus: str, src: int, dst: int, kind: str, provenance: str) -> dict:
    return {"run_id": run_id, "corpus": corpus, "src_idx": src, "dst_idx": dst, "kind": kind, "provenance": provenance}


def check_source_name(store: Path, corpus: str, own_formats: tuple[str, ...], what: str) -> dict | None:
    """Refuse a corpus name that is no store source name, belongs to another import (a format
    not in ``own_formats``; ``what`` names this family in the sentence, "an OTLP corpus") or is
    a corpus another source holds. Returns the manifest entry the name already has, if any."""
    from ...store import _SOURCE_NAME, read_manifest, source_corpora

    if not _SOURCE_NAME.match(corpus):
        raise AtlasError(f"--corpus '{corpus}' must be lower-case letters, digits, '.', '_' or '-' "
                         "(it names the store source too).")
    manifest = read_manifest(store)
    entry = manifest["sources"].get(corpus)
    if entry is not None and entry.get("format") not in own_formats:
        raise AtlasError(f"source '{corpus}' holds the {entry.get('format', 'unknown')} import; choose another "
                         f"--corpus name ({what} is a source of its own).")
    for source, corpora in source_corpora(store, manifest).items():
        if source != corpus and corpus in corpora:
            raise AtlasError(f"corpus '{corpus}' is already held by source '{source}'; choose another --corpus name.")
    return entry
