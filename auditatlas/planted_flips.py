"""Planted label flips: a copy of a store with a seeded share of one corpus's labels flipped.

What measures a review order (``bench/review_queue.py``, ``tests/test_review_queue_quality.py``):
a label-doubt order is good when the steps whose label is wrong come first, and on a real
corpus nobody knows which those are. Flipping a known, seeded set of labels in a copy plants
wrong labels whose places are known; the order's quality is then the share of them it puts
first (:mod:`auditatlas.analyses.queue_quality`).

Only a copy is ever written: :func:`planted_copy` copies the store to a new folder first and
flips there, so the store it reads (a shared one, the app's) is never changed. The flip goes
through the store writer (``store.SourceWriter``: the source's other tables carried as they are,
its steps rewritten), so the copy is a store like any other, and its versions and derived
tables are keyed anew.

Label-free prediction sets in the copy (supervision unsupervised or zero-shot) stay valid after
the flip: they never saw a label. Sets fit on labels do not (they were fit on the labels before
the flip, so they know the true ones): an order measured here must not read them, and the doubt
order does not.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import AtlasError
from .schema import sort_order
from .store import SourceWriter, read_manifest, source_corpora, source_meta
from .store_parts import table_parts


def planted_copy(store: str | Path, dest: str | Path, corpus: str, share: float, seed: int) -> pd.DataFrame:
    """Copy ``store`` to ``dest`` (a folder that must not exist) and flip ``share`` of the
    labeled steps of ``corpus`` there (1 <-> 0), chosen by numpy's generator seeded with
    ``seed``. Returns the flipped steps (corpus, run_id, step_idx, label: the label now held)."""
    store, dest = Path(store), Path(dest)
    if dest.exists():
        raise AtlasError(f"'{dest}' exists; planted flips go into a new folder, never into a store in use.")
    # The derived tables and the search index are per store version; the copy builds its own.
    shutil.copytree(store, dest, ignore=shutil.ignore_patterns("derived", "search", ".built"))
    return flip(dest, corpus, share, seed)


def flip(root: Path, corpus: str, share: float, seed: int) -> pd.DataFrame:
    """Flip ``share`` of ``corpus``'s labeled steps in the store at ``root`` (a copy: see
    :func:`planted_copy`)."""
    if not 0 < share < 1:
        raise AtlasError(f"the share of labels to flip is {share}; it must be between 0 and 1.")
    source, entry = _source_of(root, corpus)
    with SourceWriter(root, source) as writer:
        # Steps and runs written anew in one batch: the writer derives each run's anomalous steps and
        # chains from the flipped labels (store_batches.prepare), as for any ingest.
        writer.carry(skip=("steps", "runs"))
        steps, runs = (_table(root / str(entry["dir"]) / name) for name in ("steps", "runs"))
        label = steps.column("label").to_numpy(zero_copy_only=False).astype(float)
        mine = np.asarray(pc.equal(steps.column("corpus"), corpus).to_numpy(zero_copy_only=False), dtype=bool)
        labeled = np.flatnonzero(mine & ~np.isnan(label))
        chosen = np.sort(np.random.default_rng(seed).choice(labeled, size=max(1, round(share * len(labeled))),
                                                            replace=False))
        label[chosen] = 1 - label[chosen]
        flipped = pa.array(np.where(np.isnan(label), None, label).tolist(), type=steps.schema.field("label").type)
        writer.append({"runs": runs, "steps": steps.set_column(steps.schema.get_field_index("label"), "label", flipped)})
        writer.commit(source_meta(entry))
    return pd.DataFrame({"corpus": corpus, "run_id": steps.column("run_id").take(chosen).to_pylist(),
                         "step_idx": steps.column("step_idx").take(chosen).to_pylist(),
                         "label": label[chosen].astype(int)})


def _table(folder: Path) -> pa.Table:
    """One table of a source in (run, step) order, which the seeded choice of steps counts on.

    Sorted here: a source the receiver wrote keeps its rows in segments, each in that order on
    its own (``auditatlas.store_segments``), not one order across its parts; a source in one
    order comes out as it is (its keys are unique)."""
    table = pa.concat_tables(pq.read_table(p) for p in table_parts(folder.parent, folder.name))
    return table.sort_by(sort_order(folder.name))


def _source_of(root: Path, corpus: str) -> tuple[str, dict]:
    """The one source holding ``corpus``'s runs."""
    manifest = read_manifest(root)
    holding = [(name, manifest["sources"][name]) for name, corpora in sorted(source_corpora(root, manifest).items())
               if corpus in corpora]
    if len(holding) != 1:
        raise AtlasError(f"the store at '{root}' holds corpus '{corpus}' in {len(holding)} sources; planted flips "
                         "need it in exactly one.")
    return holding[0]
