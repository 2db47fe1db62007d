"""Building the step vectors of one store version into ``STORE/patterns/<key>/``.

Like the derived tables (``queries/derived.py``): the key hashes the store's manifest (the
reviews and tours sources left out: verdicts and tours change no step's text or stored label) and ``LAYOUT``, so a
new store version never reads an old build; a build writes into ``.tmp-<token>/`` under an
exclusive lease and renames it into place (two processes racing both build, one rename wins);
readers hold a shared lease on the build they read; ``remove_stale`` removes what no live
process holds except the kept build and the ``FRESH_KEEP`` newest. Its own folder
(``STORE/patterns``, as the search index has ``STORE/search``), so its builds never count against the
derived tables' own.

Bounded memory: the store is read ``BATCH_RUNS`` runs at a time through the ``Query`` function
(``pattern_steps``). Pass one hashes each batch's text into term counts kept on disk and counts
document frequencies; pass two weighs each batch by the idf and writes it as a shard, row-major
(a step's vector) and column-major (the inverted index neighbours read). Peak memory is one
batch's text and matrices, whatever the store's size.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .. import leases
from ..analyses import Query
from ..detectors.features import run_range
from ..errors import AtlasError
from ..progress import Progress, or_quiet
from ..store import data_manifest, read_manifest
from . import text

HOME = "patterns"  # STORE/patterns
LAYOUT = "1"  # bump when the files or their meaning change
BATCH_RUNS = 25_000  # runs per read: about 230,000 steps of simulated MAADBench
SCRATCH_PREFIX, STALE_AFTER_S, FRESH_KEEP = leases.SCRATCH_PREFIX, leases.STALE_AFTER_S, leases.FRESH_KEEP
DONE = "done.json"  # written last: a folder without it is no build



def vectors_home(root: str | Path) -> Path:
    """``STORE/patterns`` (made if missing), or a folder under the system temp folder when the
    store is read-only: a cache home of its own, as the search index has."""
    return leases.writable_home(Path(root) / HOME, "patterns", Path(root))


def version_key(root: str | Path) -> str:
    """The key of the store version ``root`` holds now (see the module docstring)."""
    manifest = data_manifest(read_manifest(root))
    digest = hashlib.sha256(LAYOUT.encode())
    digest.update(json.dumps(manifest, sort_keys=True).encode())
    digest.update(repr((text.N_FEATURES, text.TERMS_PER_STEP, text.TOKEN_PATTERN)).encode())
    return digest.hexdigest()[:20]


def is_built(folder: Path) -> bool:
    return (folder / DONE).is_file()


def build(query: Query, folder: Path, progress: Progress | None = None) -> None:
    """Write the vectors of the store ``query`` reads into ``folder`` (absent, or left alone
    when another process finished it first)."""
    report = or_quiet(progress)
    with leases.build_into(folder, is_built) as (scratch, out):
        runs = query("pattern_runs")
        vocab = query("pattern_vocab")
        actions = vocab.loc[vocab["kind"] == "action", "value"].astype(str).tolist()
        agents = vocab.loc[vocab["kind"] == "agent", "value"].astype(str).tolist()
        runs.drop(columns=["run_pos"]).to_parquet(out / "runs.parquet", index=False)
        n_runs, n_rows = len(runs), int(runs["n_steps"].sum())
        shards, df = _first_pass(query, scratch, out, runs["run_id"], n_rows, actions, agents, report)
        weights = text.idf(df, n_rows)
        for i, (_lo, hi) in enumerate(shards):
            _second_pass(scratch / f"tf-{i}.npz", out / f"shard-{i}", weights)
            (scratch / f"tf-{i}.npz").unlink()
            report(0.6 + 0.35 * (i + 1) / max(len(shards), 1), f"indexed {hi:,} of {n_rows:,} steps")
        meta = {"rows": n_rows, "runs": n_runs, "shards": [list(s) for s in shards],
                "actions": actions, "agents": agents, "built_at": time.time()}
        (out / DONE).write_text(json.dumps(meta))


def _first_pass(query: Query, scratch: Path, out: Path, run_ids: pd.Series, n_rows: int, actions: list[str],
                agents: list[str], report: Progress) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Term counts per batch (on disk), document frequencies and the per-step feature arrays.
    Each batch's query is bounded by its first and last run id (``run_ids``, in run id order):
    its scan then reads its own runs' steps, not the store's."""
    columns = {name: np.lib.format.open_memmap(out / f"{name}.npy", mode="w+", dtype=dtype, shape=(n_rows,))
               for name, dtype in FEATURES.items()}
    df = np.zeros(text.N_FEATURES, dtype=np.int64)
    shards: list[tuple[int, int]] = []
    row = 0
    n_runs = len(run_ids)
    for i, lo in enumerate(range(0, max(n_runs, 1), BATCH_RUNS)):
        hi = min(n_runs, lo + BATCH_RUNS)
        batch = query("pattern_steps", {"lo": lo, "hi": hi, "actions": actions, "agents": agents,
                                        **run_range(run_ids, lo, hi)})
        n = len(batch)
        if row + n > n_rows:
            raise AtlasError("the store changed while its step vectors were built; ask again.")
        tf = text.counts(batch["text_in"], batch["text_out"])
        df += np.bincount(tf.indices, minlength=text.N_FEATURES)
        sp.save_npz(scratch / f"tf-{i}.npz", tf, compressed=False)
        for name, values in _features(batch).items():
            columns[name][row:row + n] = values
            _let_go(columns[name])
        shards.append((row, row + n))
        row += n
        report(0.6 * min(1.0, (lo + BATCH_RUNS) / max(n_runs, 1)), f"read the text of {row:,} of {n_rows:,} steps")
    if row != n_rows:
        raise AtlasError("the store changed while its step vectors were built; ask again.")
    for array in columns.values():
        array.flush()
    return shards, df


def _let_go(array: np.memmap) -> None:
    """Write a memory-mapped array's pages out and drop them from this process's resident memory:
    at a million rooms the per-step arrays are 200 MB, which a build held to its end."""
    import mmap

    array.flush()
    held = getattr(array, "_mmap", None)
    if held is not None and hasattr(held, "madvise"):
        held.madvise(mmap.MADV_DONTNEED)


# The per-step arrays (one row per step, the vectors' row order).
FEATURES: dict[str, Any] = {
    "run_pos": np.int32, "step_idx": np.int32, "label": np.int8, "action": np.int16, "agent": np.int16,
    "position": np.float32, "size": np.float32, "has_size": np.bool_,
}


def _features(batch: pd.DataFrame) -> dict[str, np.ndarray]:
    label = batch["label"].to_numpy(dtype=np.float64)
    return {
        "run_pos": batch["run_pos"].to_numpy(dtype=np.int32),
        "step_idx": batch["step_idx"].to_numpy(dtype=np.int32),
        "label": np.where(np.isnan(label), -1, label).astype(np.int8),  # -1: unlabeled
        "action": (batch["action_code"].to_numpy() - 1).astype(np.int16),  # -1: none
        "agent": (batch["agent_code"].to_numpy() - 1).astype(np.int16),
        "position": batch["position_frac"].to_numpy(dtype=np.float32),
        # A step's size: its tokens in and out (log scale), when the release recorded them.
        "size": (batch["log_tokens_in"] + batch["log_tokens_out"]).to_numpy(dtype=np.float32),
        "has_size": batch["has_tokens"].to_numpy() > 0,
    }


def _second_pass(tf_path: Path, shard: Path, weights: np.ndarray) -> None:
    """One batch's tf-idf vectors, row-major and as an inverted index (column-major)."""
    shard.mkdir()
    rows = text.weigh(sp.load_npz(tf_path).tocsr(), weights)
    index = rows.tocsc()
    for name, matrix in (("rows", rows), ("index", index)):
        np.save(shard / f"{name}_indptr.npy", matrix.indptr.astype(np.int64))
        np.save(shard / f"{name}_indices.npy", matrix.indices.astype(np.int32))
        np.save(shard / f"{name}_data.npy", matrix.data.astype(np.float32))


def ensure(root: str | Path, query: Query, progress: Progress | None = None) -> Path:
    """The built vectors of the store version at ``root``, built now when missing.

    The key is read before and after: a write landing during the build means the rows may mix
    two versions, so that build is thrown away and made again for the new one (twice at most).
    """
    home = vectors_home(root)
    for _ in range(3):
        key = version_key(root)
        folder = home / key
        if not is_built(folder):
            build(query, folder, progress)
            if version_key(root) != key:
                shutil.rmtree(folder, ignore_errors=True)
                continue
        remove_stale(home, keep=key)
        return folder
    raise AtlasError("the store kept changing while its step vectors were built; ask again once writes settle.")


def remove_stale(home: Path, keep: str | None) -> list[str]:
    """Remove the builds and scratch no live process holds (see the module docstring)."""
    return leases.sweep(home, keep)

