"""A failed command leaves the store as it was; one that landed never says it failed.

The two cases that did otherwise: ``auditatlas demo --rooms 3`` on a loaded store replaced the
simulated corpus and then failed on the panel, and an ingest into a store with a truncated part
in another source landed, then died with a DuckDB traceback and exit 1.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditatlas import store
from auditatlas.cli import main
from conftest import REPO

SIM = "maadbench-sim"


def _loaded(root: Path) -> Path:
    """A store holding a simulated corpus and a panel source (tiny stand-ins written directly)."""
    store.write_source(root, "demo", {
        "runs": [{"run_id": f"{SIM}:r{i}", "corpus": SIM, "outcome": "failure", "n_steps": 1} for i in range(4)],
        "steps": [{"run_id": f"{SIM}:r{i}", "corpus": SIM, "step_idx": 0, "action": "A", "label": i % 2}
                  for i in range(4)],
    })
    store.write_source(root, "rescore-panel", {
        "prediction_sets": [{"set_id": "panel-ecod-s0", "corpus": SIM, "method": "ecod", "granularity": "step",
                             "source": "rescore"}],
        "predictions": [{"set_id": "panel-ecod-s0", "corpus": SIM, "run_id": f"{SIM}:r{i}", "step_idx": 0,
                         "score": float(i), "split": "test"} for i in range(4)],
    })
    return root


def _folders(root: Path) -> set[str]:
    return {p.name for p in (root / "sources").iterdir()}


def test_demo_too_small_for_its_panel_leaves_the_store_unchanged(tmp_path, capsys):
    root = _loaded(tmp_path / "store")
    manifest, folders = (root / store.MANIFEST).read_bytes(), _folders(root)
    code = main(["--store", str(root), "demo", "--rooms", "3"])
    err = capsys.readouterr().err
    assert code == 1
    assert "needs at least 2 room groups" in err and "the store was left unchanged" in err
    assert "Traceback" not in err
    assert (root / store.MANIFEST).read_bytes() == manifest  # the old corpus and its panel, as they were
    assert _folders(root) == folders  # and no folder of a half-written corpus left behind


def test_demo_whose_panel_fails_after_the_corpus_landed_says_what_was_written(tmp_path, capsys, monkeypatch):
    from auditatlas.detectors import panel
    from auditatlas.errors import UndefinedMetric

    def failing_panel(*args, **kwargs):
        raise UndefinedMetric("the panel failed for the test")

    monkeypatch.setattr(panel, "run_standard_panel", failing_panel)
    root = tmp_path / "store"
    code = main(["--store", str(root), "demo", "--rooms", "40"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("the simulated corpus was written, but the standard detector panel could not be scored "
            "(the panel failed for the test)") in err
    assert {"demo", "catchbench"} <= set(store.read_manifest(root)["sources"])


def test_ingest_beside_a_truncated_source_lands_and_says_written_but(tmp_path):
    root = tmp_path / "store"
    store.write_source(root, "alpha", {"runs": [{"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    folder = root / store.read_manifest(root)["sources"]["alpha"]["dir"]
    part = next((folder / "runs").glob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:40])
    done = subprocess.run([sys.executable, "-m", "auditatlas.cli", "--store", str(root), "ingest", "whowhen",
                           str(REPO / "tests" / "fixtures" / "whowhen")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "ingested whowhen into source 'whowhen'" in done.stdout
    assert "written, but" in done.stderr and f"{part} is corrupt" in done.stderr
    assert set(store.read_manifest(root)["sources"]) == {"alpha", "whowhen"}


def test_predictions_ingest_on_a_broken_store_is_refused_before_it_lands(tmp_path, capsys):
    """The predictions adapter joins to the store's steps: it depends on every source being read."""
    from test_ingest_predictions import tiny_store

    root = tmp_path / "store"
    tiny_store(root)  # the steps the predictions fixture refers to
    store.write_source(root, "alpha", {"runs": [{"run_id": "a:1", "corpus": "a", "outcome": "success", "n_steps": 0}]})
    folder = root / store.read_manifest(root)["sources"]["alpha"]["dir"]
    part = next((folder / "runs").glob("part-*.parquet"))
    part.write_bytes(part.read_bytes()[:40])
    manifest = (root / store.MANIFEST).read_bytes()
    csv = REPO / "tests" / "fixtures" / "predictions" / "xgboost" / "seed_0" / "predictions.csv"
    code = main(["--store", str(root), "ingest", "predictions", str(csv), "--method", "m", "--seed", "0"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert f"{part} is corrupt" in err
    assert (root / store.MANIFEST).read_bytes() == manifest


@pytest.mark.parametrize("rooms, fits", [(3, False), (40, True)])
def test_the_panel_check_on_the_staged_corpus(tmp_path, rooms, fits):
    """The check the demo runs before its corpus lands, on the corpus it stages."""
    from auditatlas.detectors.panel import check_staged_corpus
    from auditatlas.errors import UndefinedMetric
    from auditatlas.ingest.simulated import build

    seen = []

    def check(staging: Path) -> None:
        try:
            check_staged_corpus(staging)
        except UndefinedMetric:
            seen.append(False)
            raise
        seen.append(True)

    root = tmp_path / "store"
    if fits:
        build(root, rooms, 0, workers=0, check=check)
        assert "demo" in store.read_manifest(root)["sources"]
    else:
        with pytest.raises(UndefinedMetric, match="1 room group|make 1"):
            build(root, rooms, 0, workers=0, check=check)
        assert store.read_manifest(root)["sources"] == {}
    assert seen == [fits]
