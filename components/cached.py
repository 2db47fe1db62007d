"""The Streamlit cache in front of the named queries.

The connection is a resource shared by all sessions (``st.cache_resource``); query results are
data (``st.cache_data``) keyed by query name, bound parameters and the store manifest's
modification time, so an ingest or re-score invalidates them without a restart. Pages hand
``query`` to the analyses (``auditatlas.analyses``): what is cached is each query, and the
few analysis results a page would otherwise wait for on every rerun (a board, the Detectors
grid, the review queue).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import queries
from auditatlas.errors import first_line
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
    from queries.kept import remembering_runner

    return remembering_runner(root)(name, json.loads(params_json))


def query(name: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Named query ``name`` with bound ``params`` (JSON-serialisable), cached per store version."""
    params_json = json.dumps(params or {}, sort_keys=True, default=str)
    return _run(name, params_json, str(store_root()), store_stamp()).copy()


@st.cache_data(show_spinner=False, max_entries=256)
def _run_unreviewed(name: str, params_json: str, root: str, data_stamp: str) -> pd.DataFrame:
    return queries.run(name, json.loads(params_json), root=root)


def data_stamp() -> str:
    """The store version as every table but the verdicts and the tours sees it (the manifest
    without those sources, as the derived tables' key reads it: ``queries.views.manifest_bytes``)."""
    from auditatlas.errors import StoreError
    from auditatlas.store import read_manifest
    from queries.views import manifest_bytes

    try:
        return hashlib.sha256(manifest_bytes(read_manifest(store_root()))).hexdigest()
    except StoreError:
        return "unreadable"  # the app's own check says why, before any page runs


def query_unreviewed(name: str, params: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Like ``query``, for a query that reads no verdicts: kept while only verdicts are written,
    so the review page's next step does not wait for its queue (seconds at 1,500 rooms) again."""
    params_json = json.dumps(params or {}, sort_keys=True, default=str)
    return _run_unreviewed(name, params_json, str(store_root()), data_stamp()).copy()


@st.cache_data(show_spinner=False, max_entries=64)
def _board(name: str, corpus: str, slice_json: str, root: str, stamp: int):
    from functools import partial

    from auditatlas.analyses.board_kept import board as kept_board
    from queries.kept import remember

    # The default view is kept on disk per store version (the CLI keeps it after a write), so
    # a new server's first open reads it instead of scoring for seconds.
    return kept_board(name, query, corpus, json.loads(slice_json), partial(remember, root))


def board(name: str, corpus: str, slice_: Mapping[str, Any] | None = None):
    """A recomputed board and its published-vs-recomputed cells, per store version.

    The board reads the store through ``query`` (each query cached on its own, shared with
    every page); its Python part on top (the LIVE board fits 25 models per prefix, about 2 s
    of CPU) is kept too, so a rerun of the open tab does not pay it again, and its default
    view is kept on disk for every process (``queries.kept``).
    """
    return _board(name, corpus, json.dumps(slice_ or {}, sort_keys=True), str(store_root()), store_stamp())


@st.cache_data(show_spinner=False, max_entries=32)
def _grid(corpus: str, slice_json: str, by_backbone: bool, set_ids: tuple[str, ...], root: str, stamp: int,
          _sets: pd.DataFrame):
    from auditatlas.analyses.auroc_grid import compute_grid

    return compute_grid(query, corpus, json.loads(slice_json), by_backbone=by_backbone, sets=_sets)


def grid(corpus: str, slice_: Mapping[str, Any] | None, by_backbone: bool, sets: pd.DataFrame):
    """The Detectors page's AUROC grid, per store version: its queries are cached each on its own,
    and the grid assembled from them (a fifth of the page's warm run) is kept too, so a backbone
    switch or a cell's click does not assemble it again. ``sets`` are the corpus's step-level
    sets of this store version, so their ids stand for them in the key."""
    return _grid(corpus, json.dumps(slice_ or {}, sort_keys=True, default=str), by_backbone,
                 tuple(sets["set_id"]), str(store_root()), store_stamp(), sets)


@lru_cache(maxsize=16)
def _tour_stop(link: str, i: int, root: str, stamp: int) -> tuple:
    from functools import partial

    from auditatlas.views import tour_view, tours
    from queries.kept import remember

    return tuple(tour_view.stop_view(query, root, tours.Stop(link, ""), i, partial(remember, root)))


def tour_stop(link: str, i: int) -> list:
    """Stop ``i`` of a tour (its ``link``) as its view's blocks, kept per store version: a click on
    the tour page (next, edit, the draft) does not compute the stop's view again."""
    return list(_tour_stop(link, i, str(store_root()), store_stamp()))


def keep_boards(notify: Callable[[str], None]) -> None:
    """Keep what a CLI write keeps for the store's current version (``auditatlas.kept_views``:
    every board's default view, the whole store's supervised half of label doubt, the step
    vectors and failure clusters, the Detectors grid's means; skipped under
    ``AUDITATLAS_KEEP_BOARDS=0``); a part that
    cannot be kept is one sentence to ``notify``."""
    from auditatlas.after_write import keep

    keep(str(store_root()), lambda sentence: notify(sentence[:1].upper() + sentence[1:]), lead="")


def board_corpora() -> dict[str, list[str]]:
    """For every board, the corpora in the store it can be computed on (cached queries)."""
    from auditatlas.analyses.board_registry import registry

    return {name: b.corpora(query) for name, b in registry().items()}


def missing_blocks() -> list[dict[str, str]]:
    """Published blocks the store cannot recompute (cached queries)."""
    from auditatlas.analyses.board_published import missing_blocks as published_missing

    return published_missing(query)


# Per process, not per script run: the server's start checks the store it opens
# (``components.serve``), so the first visitor does not read every part's footer (0.3-0.45 s of
# a first page at a million rooms).
@lru_cache(maxsize=8)
def _store_problems(root: str, stamp: int) -> tuple[str, ...]:
    from auditatlas.store import health

    problems = health(Path(root), deep=True)
    if problems:
        return tuple(problems)
    try:  # the views themselves (a part readable by footer may still fail to scan)
        queries.run("corpora", root=root)
    except Exception as exc:  # noqa: BLE001 - shown as one sentence
        return (f"the store at {root} cannot be read ({first_line(exc)}); re-ingest the affected source or rebuild "
                "the store.",)
    return ()


def store_problems() -> list[str]:
    """One sentence per reason the store cannot be read (empty when it is healthy).

    The cheap checks (manifest, folders present) run on every rerun, since a folder deleted by
    hand does not change the manifest; footers and a scan are checked once per store version.
    """
    from auditatlas.store import health

    return health(store_root()) or list(_store_problems(str(store_root()), store_stamp()))


def search_index():
    """The search index of the store's current version for this process (``queries.search``):
    opened when built; else None and why, with its build started in a process of its own."""
    from queries.search import index_for

    return index_for(store_root(), wait=False)


# Four: a queue of every labeled step (the random order) is a million-row frame at 100,000 rooms.
@st.cache_resource(show_spinner=False, max_entries=4)
def _review_queue(order: str, slice_json: str, seed: int, supervised: bool, root: str, data_stamp: str):
    from functools import partial

    from auditatlas.analyses import review_queue
    from queries.kept import remember_frame

    slice_ = json.loads(slice_json)
    # One store version for all the queue's queries: the orders put rows of several queries
    # together by step number, and a write landing between two of them would shift the numbers.
    with queries.one_version(root) as run:
        if supervised and order == "doubt":
            return review_queue.kept_doubt_order(run, root, slice_, partial(remember_frame, root))
        return review_queue.queue(run, order, slice_, seed), []


def review_queue(order: str, slice_: Mapping[str, Any] | None, seed: int, supervised: bool):
    """The review queue of ``order`` on the slice (``auditatlas.analyses.review_queue.queue``) and
    the supervised half's notes: computed once per store version (verdicts aside) and shared,
    not copied, by every session and every rerun. At a million rooms the doubt order joins
    and sorts 9 million labeled steps: copied out of the data cache and computed again on
    each step, it took 15 s a step. The whole store's doubt order is kept on disk by the write
    (``review_queue.kept_doubt_order``), so a new server reads it. The frame is read-only.
    ``supervised``: with label doubt's supervised half (doubt order), whose fit may raise
    AtlasError (not kept: tried again)."""
    return _review_queue(order, json.dumps(dict(slice_ or {}), sort_keys=True, default=str), int(seed), bool(supervised),
                         str(store_root()), data_stamp())
