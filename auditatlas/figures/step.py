"""One run's steps as the Explorer tabulates them, and one step's fields and structured output.

Pure builders (no Streamlit), shared by the Explorer and the export.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from auditatlas import graph as tg


def steps_frame(g) -> pd.DataFrame:
    """The run's steps: truth (★ the human decisive step), detector cell, chain role, names, score."""
    rows = []
    for n, d in sorted(g.nodes(data=True)):
        if d.get("kind") != "step":
            continue
        cell = d.get("outcome") or ("flagged" if d.get("flagged") else None)
        scope = "run" if d.get("scope") == g.graph.get("run_id") else d.get("scope")
        rows.append({"step": n, "truth": d["truth"] + (" ★" if d.get("decisive") else ""), "detector": cell,
                     "chain role": d.get("role"), "action": d.get("action"), "agent": d.get("agent"), "scope": scope,
                     "score": d.get("score"), "rank": d.get("rank"), "error": d.get("error_code")})
    return pd.DataFrame(rows)


def structured_output(text_out: str | None) -> Any | None:
    """The JSON object or list that ends the output, when there is one.

    MAADBench steps keep the agent's free text and its structured output in one field (the
    importer joins them with a newline, structured part last), so the last line that parses
    as JSON is the structured output.
    """
    if not text_out:
        return None
    stripped = text_out.strip()
    for candidate in (stripped, stripped.rsplit("\n", 1)[-1]):
        if candidate[:1] in "{[":
            try:
                return json.loads(candidate)
            except ValueError:
                continue
    return None


def _value(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def fields_frame(step: Mapping[str, Any]) -> pd.DataFrame:
    """The step's verdict and bookkeeping as (field, value) text rows."""
    truth = tg.truth_of(_value(step.get("label")))
    decisive = truth == tg.ANOMALY and step.get("label_source") == tg.DECISIVE_SOURCE
    rows = [
        ("ground truth", truth + (" (human decisive step)" if decisive else "")),
        ("label source", step.get("label_source")),
        ("error code", step.get("error_code")),
        ("failure mode", step.get("failure_mode")),
        ("cascade (earlier failure in scope)", step.get("is_cascade")),
        ("format error", step.get("is_format_error")),
        ("scope", step.get("scope")),
        ("scope still succeeded", step.get("scope_success")),
        ("native step id", step.get("step_id")),
        ("tool step", step.get("is_tool")),
        ("tokens in / out", f"{_fmt(step.get('tokens_in'))} / {_fmt(step.get('tokens_out'))}"),
        ("duration (s)", _fmt(step.get("duration_s"))),
        ("confidence", _fmt(step.get("confidence"))),
    ]
    return pd.DataFrame({"field": [r[0] for r in rows], "value": ["—" if _value(r[1]) is None else str(_value(r[1])) for r in rows]})


def _fmt(v: Any) -> str:
    v = _value(v)
    if v is None:
        return "—"
    return f"{v:.4g}" if isinstance(v, float) else str(v)
