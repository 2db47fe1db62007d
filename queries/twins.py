"""Twins: a named query answered from the derived tables (``queries/derived.py``) instead.

A twin (``queries/sql/TWIN.sql``) gives the same columns and the same rows as its query for far
less work, but only where the slice leaves the derived tables' stored groups whole (ranks within
a set and backbone stay right under a backbone filter, not under an outcome filter). Each twin
declares which slice columns it can take; :func:`choose` picks it for one store version. The
twin is then bound with exactly the parameters its own template declares (``queries/named.py``):
it may need fewer than its query (the grid's twin reads no label lists).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .slices import SLICE_COLUMNS, filtered_columns


@dataclass(frozen=True)
class Twin:
    """A query's twin over the derived tables (``queries/sql/QUERY.sql``): same columns, same
    rows, far less work. ``keeps_whole``: given the query's parameters, the slice columns a
    filter may touch and leave the twin's stored groups whole (beyond corpus, which splits no
    rank group when every set is of one corpus)."""

    query: str
    keeps_whole: Callable[[Mapping[str, Any]], frozenset[str]]


TWINS: dict[str, Twin] = {
    # Cells per backbone rank within the backbone: a backbone filter keeps them whole.
    "grid_cells": Twin("grid_cells_ranked", lambda p: frozenset({"backbone"}) if p.get("by_backbone") else frozenset()),
    # The grid's means are sums over its cells: what keeps the cells whole keeps them whole.
    "grid_means": Twin("grid_means_ranked", lambda p: frozenset({"backbone"}) if p.get("by_backbone") else frozenset()),
    # Runs per backbone add up; steps too.
    "detector_coverage": Twin("detector_coverage_ranked", lambda p: frozenset({"backbone"})),
    # The threshold is over all the set's steps in the slice.
    "detector_overall": Twin("detector_overall_ranked", lambda p: frozenset()),
    "grid_errors": Twin("grid_errors_ranked", lambda p: frozenset()),
    # The cube's rows are slice cells: any slice takes them whole.
    "grid_actions": Twin("grid_actions_cube", lambda p: frozenset(SLICE_COLUMNS)),
    # A scope lies within one run and every slice column is a run's: any slice takes whole cells.
    "propagation_heatmap": Twin("propagation_heatmap_cube", lambda p: frozenset(SLICE_COLUMNS)),
    "propagation_sources": Twin("propagation_sources_cube", lambda p: frozenset(SLICE_COLUMNS)),
    "slice_options": Twin("slice_options_stored", lambda p: frozenset(SLICE_COLUMNS)),
    # Each set's ROC-AUC over all its test steps: the query takes no slice.
    "rescore_sets": Twin("rescore_sets_ranked", lambda p: frozenset()),
    # Pairs possible anywhere in the store: the query takes no slice.
    "propagation_possible": Twin("propagation_possible_stored", lambda p: frozenset(SLICE_COLUMNS)),
}


class DerivedState(Protocol):
    """What a twin choice reads of one store version (``queries.database.StoreVersion``)."""

    derived: object
    single_corpus_sets: bool


def has_twin(name: str) -> bool:
    return name in TWINS


def choose(name: str, params: Mapping[str, Any], version: DerivedState) -> str:
    """The query to run for ``name`` on ``version``: its twin when that version's derived
    tables are in place and the slice keeps the twin's groups whole, else ``name`` itself."""
    twin = TWINS.get(name)
    if twin is None or not version.derived:
        return name
    filtered = set(filtered_columns(params.get("slice")))
    allowed = twin.keeps_whole(params) | ({"corpus"} if version.single_corpus_sets else frozenset())
    return twin.query if filtered <= allowed else name
