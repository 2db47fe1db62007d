"""Derived tables kept on disk per store version: what the detector views and the sidebar
would otherwise recompute from every prediction, step or run on every query.

``test_scores``
    every scored, labeled test step of every step-level set joined once to its step
    (``sql/test_scores.sql``), plus each row's rank of score within four groups and its
    placement count there (``RANK_COLUMNS``, ``PLACE_COLUMNS``), so the per-action AUROC grid
    with its clustered intervals, the overall comparison and a cell's errors need no sort when
    the slice keeps those groups whole.
``test_sets``
    per (set, corpus, backbone): the test steps, anomalies, decided steps and runs (a run has
    one backbone, so runs add up over backbones).
``set_counts``
    per set: its predictions, test predictions and unscored test predictions (the Detectors
    page lists sets without scanning every prediction).
``step_cube``
    steps counted per slice cell and action (about 1,200 rows at a million rooms), so the
    grid's per-action rows add up a few rows for any slice.
``propagation_cube``
    the Propagation heatmap's numerators per slice cell and action pair (its rows, the failed
    steps per action, come from ``step_cube``): a new server's first /propagation spent 0.3-0.4 s
    of its 0.5-0.8 s on the two at 100,000 rooms.
``slice_choices``
    the sidebar's choices with their run counts (``sql/slice_options.sql``): every page asks
    for them, and they do not depend on the slice.
``possible_pairs``
    the (source action, later action) pairs some scope of the store holds in that order
    (``sql/propagation_possible.sql``): the Propagation heatmap greys the others, whatever the
    slice, and finding them reads every step (0.16 s warm at 100,000 rooms, 0.21 s in a new
    server's first /propagation).

Why files and not an in-memory table: at a million rooms with three step-level sets the test
rows alone are 5.5 million; a table of them with ranks held in the app would cost several
hundred MB, and building it in the app's database peaked at 4.6 GB. Here the build runs on
its own DuckDB connection under ``BUILD_MEMORY`` (DuckDB spills the join and the sorts to
disk) and the app reads the Parquet files, projecting the columns a query needs.

Where: ``STORE/derived/<key>/`` where ``key`` hashes the manifest and the text of the build
queries, so a new store version or a changed query never reads an old build. A build writes
into ``STORE/derived/.tmp-<token>/`` and renames it into place (atomic; two processes racing
both build, one rename wins). A store folder the app cannot write gets its builds under the
system temp folder instead.

What is removed, and when (``remove_stale``, after every build and when a process's query
layer starts): a build's scratch holds an exclusive lease (``auditatlas.leases``) while it
builds, and every store version a process has bound to a build holds a shared lease on it
until the version is dropped, so a folder nobody holds is one no reader can use. Removed: the
scratch of builds whose builder died (kill -9), and every build no live reader holds except
the one being kept and the ``FRESH_KEEP`` newest builds younger than ``STALE_AFTER_S`` (a
write's CLI builds its version's tables for the app's next query: not worth throwing away the
moment an older reader sweeps). So the folder holds at most the kept build, the builds live
readers hold (one per process, plus one per query still running on a replaced version) and
``FRESH_KEEP`` recent ones: re-ingesting 46 times in four minutes no longer leaves 46 builds.

A build whose files cannot be read (truncated by a full disk or by hand) is removed and built
again (``is_readable``); if that fails too, the views stay the live queries.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from auditatlas import leases
from auditatlas.store import DERIVED_DIR  # STORE/derived, a folder of the store's layout

TABLES: tuple[str, ...] = ("test_scores", "test_sets", "set_counts", "step_cube", "propagation_cube", "slice_choices",
                           "possible_pairs")
# The named query (queries/sql/) each table is; the default is its own name.
QUERY: dict[str, str] = {"slice_choices": "slice_options", "possible_pairs": "propagation_possible"}
# The named queries that read a derived table: their first run on a store version builds the
# tables (the other queries never wait for a build). The twins' own queries (queries/twins.py)
# need them too. tests/test_queries.py checks this list against the query texts.
READERS: frozenset[str] = frozenset({
    "grid_cells", "grid_errors", "detector_coverage", "detector_overall", "detector_sets", "grid_means",
    "grid_cells_ranked", "grid_errors_ranked", "grid_means_ranked", "detector_coverage_ranked", "detector_overall_ranked",
    "grid_actions_cube", "slice_options_stored", "propagation_possible_stored", "propagation_heatmap_cube",
    "propagation_sources_cube", "rescore_sets_ranked",
})
# Tables whose rows grow with the number of sets and slice cells, not with the corpus: the
# query layer holds them in memory (the others it reads from their files).
SMALL: frozenset[str] = frozenset({"test_sets", "set_counts", "step_cube", "propagation_cube", "slice_choices",
                                  "possible_pairs"})
# 2 x the mid-rank (an integer: the lowest plus the highest rank of the score's tie block)
# within each group, and the highest rank within the set (steps scoring at most this score).
RANK_COLUMNS: dict[str, tuple[str, ...]] = {
    "cell_mid2": ("set_id", "backbone", "action"),
    "backbone_mid2": ("set_id", "backbone"),
    "action_mid2": ("set_id", "action"),
    "set_mid2": ("set_id",),
}
# 2 x each row's placement count within the same groups: for an anomaly, the normal steps
# scoring below it, twice, plus those tied with it; for a normal step, the same count of
# anomalies. DeLong's placement values follow from it, and with them the grid's ROC-AUC and its
# run-clustered interval (grid_cells_ranked.sql), without a sort at query time.
PLACE_COLUMNS: dict[str, str] = {col.replace("_mid2", "_place2"): col for col in RANK_COLUMNS}
# On the first row of each run within each group, that run's positives (m) and negatives (n)
# there and the sums of their placement counts (rp, rq); 0 on the run's other rows. The grid's
# run-clustered interval needs these per-run sums, and grouping millions of test rows by run
# at query time took seconds (4.5 million rows: 2.8 s against 0.16 s for one pass over these).
RUN_COLUMNS: tuple[str, ...] = tuple(f"{col.removesuffix('_mid2')}_run_{x}" for col in RANK_COLUMNS
                                     for x in ("m", "n", "rp", "rq"))
BUILD_MEMORY = "512MB"
STALE_AFTER_S, FRESH_KEEP, SCRATCH_PREFIX = leases.STALE_AFTER_S, leases.FRESH_KEEP, leases.SCRATCH_PREFIX
# Bump when the layout of the files changes in a way the query texts do not show.
LAYOUT = "3"


def cache_key(manifest_bytes: bytes, sql: Callable[[str], str]) -> str:
    digest = hashlib.sha256(LAYOUT.encode())
    digest.update(manifest_bytes)
    for name in TABLES:
        digest.update(sql(QUERY.get(name, name)).encode())
    digest.update(repr(sorted(RANK_COLUMNS.items())).encode())
    digest.update(repr(RUN_COLUMNS).encode())
    return digest.hexdigest()[:20]


def cache_root(store: Path) -> Path:
    """``STORE/derived``, or a folder under the system temp folder when the store is read-only."""
    return leases.writable_home(store / DERIVED_DIR, "derived", store)


def homes(store: Path) -> list[Path]:
    """The folders that hold builds of ``store`` now (none made here)."""
    return [home for home in (store / DERIVED_DIR, _temp_home(store)) if home.is_dir()]


def _temp_home(store: Path) -> Path:
    return leases.temp_home("derived", store)


def files(folder: Path) -> dict[str, Path]:
    return {name: folder / f"{name}.parquet" for name in TABLES}


def is_built(folder: Path) -> bool:
    return all(p.is_file() for p in files(folder).values())


def is_readable(folder: Path) -> bool:
    """Whether every file of the build has a readable Parquet footer (a truncated file has none)."""
    try:
        for path in files(folder).values():
            pq.read_metadata(path)
    except Exception:  # noqa: BLE001 - any failure to read a footer means the build is broken
        return False
    return True


def hold(folder: Path) -> leases.Lease | None:
    """A reader's shared lease on a build (see the module docstring); None when it is gone."""
    return leases.hold(folder, shared=True)


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _rank_select(source: str) -> str:
    """Row number plus the rank columns over the narrow projection of ``source``: sorting
    (group, score) pairs is much cheaper than sorting the wide rows."""
    windows, cols = [], []
    for col, group in RANK_COLUMNS.items():
        name = col.removesuffix("_mid2")
        windows.append(f"w_{name} AS (PARTITION BY {', '.join(group)} ORDER BY score)")
        # With ORDER BY, count(*)'s default frame ends at the last peer: the highest rank.
        # 32-bit: a set would need a billion test steps to overflow it (the cast then fails
        # and the build with it: the live queries answer). Half the bytes to decode per query.
        cols.append(f"(rank() OVER w_{name} + count(*) OVER w_{name})::INTEGER AS {col}")
        # 2 x the mid-rank among all rows of the group minus 2 x the mid-rank among the rows of
        # its own label: the other label's rows below it, twice, plus those tied with it. A
        # second sort per group (by label too); a filtered count over an excluding frame gives
        # the same number but took minutes on 3 million rows where this takes a second.
        windows.append(f"c_{name} AS (PARTITION BY {', '.join(group)}, label ORDER BY score)")
        cols.append(f"((rank() OVER w_{name} + count(*) OVER w_{name}) "
                    f"- (rank() OVER c_{name} + count(*) OVER c_{name}))::INTEGER AS {name}_place2")
    cols.append("(count(*) OVER w_set)::INTEGER AS set_high")
    return (f"SELECT file_row_number AS row_, {', '.join(cols)} "
            f"FROM read_parquet({source}, file_row_number = true) "
            f"WINDOW {', '.join(windows)}")


def _run_select(joined: str, ranks: str) -> str:
    """Row number plus the ``RUN_COLUMNS``: per group and run one GROUP BY (its first row keeps
    the sums), joined back to the rows. A window per (group, run) gives the same numbers, but
    its many tiny partitions made the default store's build three times slower."""
    groups, joins, cols = [], [], []
    for col, group in RANK_COLUMNS.items():
        name = col.removesuffix("_mid2")
        groups.append(
            f"g_{name} AS (SELECT min(row_) AS row_, sum(label)::INTEGER AS {name}_run_m, "
            f"(count(*) - sum(label))::INTEGER AS {name}_run_n, "
            f"sum(label * {name}_place2)::BIGINT AS {name}_run_rp, "
            f"sum((1 - label) * {name}_place2)::BIGINT AS {name}_run_rq "
            f"FROM base GROUP BY {', '.join(group)}, run_id)")
        joins.append(f"LEFT JOIN g_{name} USING (row_)")
        cols += [f"coalesce({name}_run_{x}, 0) AS {name}_run_{x}" for x in ("m", "n", "rp", "rq")]
    places = ", ".join(f"r.{c.removesuffix('_mid2')}_place2" for c in RANK_COLUMNS)
    return (f"WITH base AS (SELECT r.row_, j.set_id, j.backbone, j.action, j.run_id, j.label, {places} "
            f"FROM read_parquet({joined}, file_row_number = true) j JOIN read_parquet({ranks}) r "
            f"ON r.row_ = j.file_row_number), {', '.join(groups)} "
            f"SELECT base.row_, {', '.join(cols)} FROM base {' '.join(joins)}")


def build(con: duckdb.DuckDBPyConnection, folder: Path, sql: Callable[[str], str]) -> None:
    """Write the derived tables of the store ``con`` has views of into ``folder`` (new)."""
    with leases.build_into(folder, is_built) as (scratch, out):
        con.execute(f"SET temp_directory = {_quoted(scratch / 'spill')}")
        joined, ranks = scratch / "joined.parquet", scratch / "ranks.parquet"
        target = files(out)
        con.execute(f"COPY ({sql('test_scores')}) TO {_quoted(joined)} (FORMAT parquet)")
        con.execute(f"COPY ({_rank_select(_quoted(joined))}) TO {_quoted(ranks)} (FORMAT parquet)")
        # Sorted by set so a query on some sets reads their row groups only.
        # The per-run sums over a narrow projection too, joined to the wide rows once.
        runs = scratch / "runs.parquet"
        con.execute(f"COPY ({_run_select(_quoted(joined), _quoted(ranks))}) TO {_quoted(runs)} (FORMAT parquet)")
        con.execute(
            f"COPY (SELECT j.* EXCLUDE (file_row_number), r.* EXCLUDE (row_), u.* EXCLUDE (row_) "
            f"FROM read_parquet({_quoted(joined)}, file_row_number = true) j "
            f"JOIN read_parquet({_quoted(ranks)}) r ON r.row_ = j.file_row_number "
            f"JOIN read_parquet({_quoted(runs)}) u ON u.row_ = j.file_row_number "
            f"ORDER BY j.set_id, j.backbone, j.action) "
            # LZ4: a quarter faster to scan than zstd at a million rooms (0.20 s against 0.28 s
            # for the overall comparison), for 264 MB on disk against 207 MB.
            f"TO {_quoted(target['test_scores'])} (FORMAT parquet, COMPRESSION lz4_raw)")
        # test_sets counts the rows just written (the connection's test_scores is the live join).
        con.execute(f"CREATE OR REPLACE TEMP VIEW test_scores AS SELECT * FROM read_parquet({_quoted(target['test_scores'])})")
        con.execute(f"COPY ({sql('test_sets')}) TO {_quoted(target['test_sets'])} (FORMAT parquet)")
        for name in ("set_counts", "step_cube", "propagation_cube", "slice_choices", "possible_pairs"):
            con.execute(f"COPY ({sql(QUERY.get(name, name))}) TO {_quoted(target[name])} (FORMAT parquet)")


def remove_stale(home: Path, keep: str | None) -> list[str]:
    """Remove what no live process uses (see the module docstring); returns the names removed."""
    return leases.sweep(home, keep, fresh_keep=FRESH_KEEP,
                        stale_after_s=STALE_AFTER_S)  # read here: tests set them on this module

