"""The analysis layer: boards, run detection, propagation, detector comparison, rates.

Every analysis reaches the store through one ``Query`` function that it is handed, never by a
store path: the app passes its cached query (``components.cached.query``, one cache entry per
named query and store version), the CLI, tests and benchmarks pass ``queries.runner(root)``.
So the numbers are the same everywhere, the app caches queries rather than whole results, and
nothing here imports the query layer or Streamlit.
"""
from __future__ import annotations

from ..query_function import Query  # noqa: F401 - every analysis's ``Query``, where it has always been
