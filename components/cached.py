"""The Streamlit cache in front of the named queries.

The connection is a resource shared by all sessions (``st.cache_resource``); query results are
data (``st.cache_data``) keyed by query name, bound parameters and the store manifest's
modification time, so an ingest or re-score invalidates them without a restart.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import streamlit as st

import queries
from auditatlas.store import MANIFEST, store_dir


def store_root() -> Path:
    return Path(store_dir()).resolve()


def store_stamp() -> int:
    try:
        return (store_root() / MANIFEST).stat().st_mtime_ns
    except FileNotFoundError:
        return -1


@st.cache_data(show_spinner=False, max_entries=512)
def _run(name: str, params_json: str, root: str, stamp: int) -> pd.DataFrame:
    return queries.run(name, json.loads(params_json), root=root)


def query(name: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Named query ``name`` with bound ``params`` (JSON-serialisable), cached per store version."""
    params_json = json.dumps(params or {}, sort_keys=True, default=str)
    return _run(name, params_json, str(store_root()), store_stamp()).copy()
