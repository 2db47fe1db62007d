"""What each named query declares, and its values bound to exactly that.

A :class:`Query` is read once from its template (``queries/template.py``): the parameters it
declares are its ``$name`` placeholders, whether it takes the shared slice is its ``@slice``,
and whether it reads a derived table is declared in ``queries/derived.py`` (``READERS``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from . import derived, template
from .slices import filtered_columns


@dataclass(frozen=True)
class Query:
    """A named query ``sql/NAME.sql`` and what it declares."""

    name: str
    # Its $name placeholders and @frame($name) tables; an @each($xs) list is the one parameter xs.
    parameters: frozenset[str]
    # Its @frame($name) tables: a file's path is bound, a table registered while it runs.
    frames: frozenset[str]
    # Takes params["slice"] (the template has @slice); the slice's own $col are not listed.
    uses_slice: bool
    # Reads a derived table (declared in derived.READERS): its first run per store version builds them.
    reads_derived: bool


@cache
def query(name: str) -> Query:
    """The named query ``name`` (KeyError naming the folder when there is none)."""
    return Query(name, template.placeholders(template.text(name)), template.frames(name), template.uses_slice(name),
                 name in derived.READERS)


def check(query: Query, params: Mapping[str, Any] | None) -> None:
    """Raise ValueError when ``params`` miss a parameter ``query`` declares or add one it does not."""
    given = set(params or {}) - ({"slice"} if query.uses_slice else set())
    extra, missing = sorted(given - query.parameters), sorted(query.parameters - given)
    if extra:
        raise ValueError(f"named query '{query.name}' has no parameter(s) {', '.join(extra)}")
    if missing:
        raise ValueError(f"named query '{query.name}' needs parameter(s) {', '.join(missing)}")


def prepare(query: Query, params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """SQL text and bound values: exactly the parameters ``query`` declares, taken from
    ``params``, plus the slice's filtered columns when it takes the slice."""
    params = params or {}
    bound = {k: v for k, v in params.items() if k in query.parameters}
    if not query.uses_slice:
        return template.frame_sources(*template.each(template.text(query.name), bound))
    chosen = filtered_columns(params.get("slice"))
    # One value: a scalar equality, which DuckDB turns into a constant filter on the scan.
    active = tuple(col + "=" if len(values) == 1 else col for col, values in chosen.items())
    values = {col: vals[0] if len(vals) == 1 else vals for col, vals in chosen.items()}
    return template.frame_sources(*template.each(template.text(query.name, active), {**values, **bound}))
