"""How the core reads the store: through one query function it is handed, never by a store path.

The app passes its cached query (``components.cached.query``, one cache entry per named query
and store version); the command line, tests and benchmarks pass ``queries.runner(root)``. So
the numbers are the same everywhere, and nothing in the core imports the query layer.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import pandas as pd


class Query(Protocol):
    """Run the named query ``name`` (a ``queries/sql`` file) with bound ``params``."""

    def __call__(self, name: str, params: Mapping[str, Any] | None = None, /) -> pd.DataFrame: ...
