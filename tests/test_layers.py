"""The layers a tool checks beyond import-linter's contracts in pyproject.toml: what follows a
declaration (the adapters in ``ingest.ADAPTERS``) is read from it, so a new adapter is checked
without editing a list."""
from __future__ import annotations

from itertools import permutations

import grimp
import pytest

from auditatlas.ingest import ADAPTERS


def test_no_adapter_imports_another():
    """An adapter reads its own release format; what two share lives in the toolkit
    (``ingest/kit``) or a mapping module, never in another adapter."""
    graph = grimp.build_graph("auditatlas")
    modules = sorted({spec.module for spec in ADAPTERS.values()})
    assert len(modules) == len(ADAPTERS) >= 10
    chains = {(a, b): graph.find_shortest_chain(importer=a, imported=b) for a, b in permutations(modules, 2)}
    assert {pair: chain for pair, chain in chains.items() if chain} == {}


def test_the_layers_contract_holds_a_module_it_names():
    """A layer renamed away would leave the contract checking nothing: every module it names exists."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    graph = grimp.build_graph("auditatlas", "queries", "components")
    named = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for layer in contract.get("layers", []):
            named.update(m.strip() for part in layer.split("|") for m in part.split(":"))
        named.update(contract.get("source_modules", []))
    assert sorted(m for m in named if m not in graph.modules) == []
