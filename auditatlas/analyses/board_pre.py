"""PRE over-privilege board: before a run, which declared capabilities are excess?

Micro precision / recall / F1 over (config, capability) pairs, coverage, and F1 per source with
each source's flag_all floor. Entrants: ``BOARD.entrants`` below (floors, the seven rule scanners of
``over_privilege``, the oracle) plus every config-level prediction set in the store (the held-out judge, or any
imported one). Contrasts: each entrant's F1 against the flag_all floor, by a configuration-
cluster bootstrap (a config's capabilities are labeled together, so pairs are not independent).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..errors import AtlasError
from ..stats import Contrast, paired_sums_bootstrap
from . import Query
from . import board_intervals as ci
from . import over_privilege as pre
from .board_types import LEADER, Board, BoardResult, BoardRow, ContrastFamily, Task, contrasts_for
from .entrant import Entrant

METRICS = ("precision", "recall", "f1", "coverage")
N_BOOT = 1000


def load_configs(query: Query, corpus: str) -> list[pre.PreConfig]:
    configs = query("pre_configs", {"corpus": corpus})
    caps = query("pre_capabilities", {"corpus": corpus})
    return pre.configs_from_frames(configs, caps)


def stored_entrants(query: Query, corpus: str) -> list[Entrant]:
    """One replay entrant per config-level prediction set (abstains where it has no rows)."""
    frame = query("pre_flags", {"corpus": corpus})
    entrants = []
    for set_id, rows in frame.groupby("set_id", sort=True):
        meta = rows.iloc[0]
        judged = bool(meta["method"] and meta["model"])  # a judge's set: named after its model
        name = f"{meta['method']}({meta['model']})" if judged else str(set_id)
        # A scored config that flags nothing comes back as a null list: scored, empty.
        flags = {cid: set(f) if isinstance(f, (list, tuple, np.ndarray)) else set()
                 for cid, f in zip(rows["config_id"], rows["flagged"])}
        entrants.append(pre.entrant_from_flags(name, flags, kind="judge" if judged else "prediction set"))
    return entrants


def _pair_vectors(configs: list[pre.PreConfig], entrant: Entrant) -> tuple[np.ndarray, np.ndarray]:
    """Per (config, capability) pair: flagged (0/1) and scored (config not abstained)."""
    flagged, scored = [], []
    for config in configs:
        got = entrant.scorer(config)
        for cap in config.capabilities:
            scored.append(got is not None)
            flagged.append(got is not None and cap.name in got)
    return np.array(flagged, dtype=bool), np.array(scored, dtype=bool)


def _memoised(entrant: Entrant) -> Entrant:
    """The entrant with its flags computed once per configuration for this board.

    The pooled score, the per-source scores and the pair vectors all ask every entrant about
    every configuration; a rule scanner re-tokenises the capability text each time it is
    asked, so asking once cuts the board's time by about three.
    """
    flags: dict[str, set[str] | None] = {}
    scorer = entrant.scorer

    def flag(config: pre.PreConfig) -> set[str] | None:
        key = config.config_id
        if key not in flags:
            flags[key] = scorer(config)
        return flags[key]

    return replace(entrant, scorer=flag)


def _cluster_counts(truth: np.ndarray, flagged: np.ndarray, scored: np.ndarray,
                    codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per configuration: true positives, false positives, false negatives of scored pairs."""
    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=mask & scored, minlength=k)

    return count(truth & flagged), count(~truth & flagged), count(truth & ~flagged)


def _cluster_bootstrap(fam: ContrastFamily, a: BoardRow, b: BoardRow) -> Contrast:
    """F1(A) - F1(B) with whole configurations resampled.

    Micro F1 only needs the summed counts, so each configuration is reduced to its (tp, fp, fn)
    once and a resample sums k counts instead of re-masking every pair. Clusters are numbered
    in sorted-id order and drawn exactly as ``paired_bootstrap(clusters=...)`` would draw them
    (k integers from the same seeded generator), so the interval is the same as resampling
    the pairs; every resample's sums are taken at once (``stats.paired_sums_bootstrap``).
    """
    _, codes = np.unique(a.items["cluster"], return_inverse=True)
    k = int(codes.max()) + 1
    truth = a.items["truth"]
    counts_a = _cluster_counts(truth, a.items["flagged"], a.items["scored"], codes, k)
    counts_b = _cluster_counts(truth, b.items["flagged"], b.items["scored"], codes, k)
    # F1 of summed counts, 0 where there is nothing to divide by: the intervals' own metric.
    res = paired_sums_bootstrap(counts_a, counts_b, ci.PRE_METRICS["f1"], n_boot=N_BOOT, seed=0)
    return Contrast(fam.name, a.entrant, b.entrant, res.estimate_a, res.estimate_b, res.diff,
                    res.ci95[0], res.ci95[1], res.p, f"configuration-cluster bootstrap ({N_BOOT}, seed 0)")


INTERVAL_METHODS = {m: f"configuration-cluster bootstrap ({N_BOOT:,} resamples, seed 0, percentile)"
                    for m in ("precision", "recall", "f1")}
INTERVAL_METHODS["coverage"] = ci.CLOPPER_PEARSON_CONFIGS


BY_SOURCE = "f1_by_source"
BY_SOURCE_CAPTION = (f"95% intervals ('… 95%'): F1's configuration-cluster bootstrap ({N_BOOT:,} resamples, seed 0, "
                     "percentile) over that source's configurations only; blank where F1 has nothing to divide by.")


def _by_source_row(name: str, per_source: dict, overall: float, counts: tuple[np.ndarray, ...],
                   cluster_source: np.ndarray, overall_interval: list[float] | None) -> dict:
    """One line of the F1-by-source table: each source's F1 and its 95% interval (bounds as
    numbers, ``… 95% low`` / ``… 95% high``: the page shows them as one text cell), then the pooled F1."""
    row: dict = {"entrant": name}
    for source, value in per_source.items():
        mine = cluster_source == source
        interval = ci.pre_ratio_interval("f1", *(c[mine] for c in counts), N_BOOT)
        row.update({source: value["f1"], **_bounds(source, interval)})
    row.update({"overall": overall, **_bounds("overall", overall_interval)})
    return row


def _bounds(column: str, interval: list[float] | None) -> dict:
    low, high = interval if interval else (None, None)
    return {f"{column} 95% low": low, f"{column} 95% high": high}


# Every entrant (rules, stored judges) against the floor; the baselines (flag_none, the
# oracle) are identity checks, not contenders.
# The second family asks who wins: each entrant against the best F1 among them (the floors and
# the label-reading oracle are references, not contenders).
CONTRAST_FAMILIES = (ContrastFamily("F1 vs flag_all floor", "f1", "cluster_bootstrap", against="floor",
                                    members=("entrant",), short="F1 vs floor"),
                     ContrastFamily("F1 vs the leader", "f1", "cluster_bootstrap", against=LEADER,
                                    members=("entrant", "extra"), short="vs leader"))
TESTS = {"cluster_bootstrap": _cluster_bootstrap}


def compute(query: Query, corpus: str, slice_: dict | None = None) -> BoardResult:
    configs = load_configs(query, corpus)  # the run slice does not apply to configurations
    if not configs:
        raise AtlasError(f"PRE board on '{corpus}': no configuration in this slice.")
    truth = np.array([c.excess for cfg in configs for c in cfg.capabilities], dtype=bool)
    cluster = np.array([cfg.config_id for cfg in configs for _ in cfg.capabilities])
    config_ids, codes = np.unique(cluster, return_inverse=True)
    source_of = {cfg.config_id: cfg.config_source for cfg in configs}
    cluster_source = np.array([source_of[c] for c in config_ids])  # by configuration, as ``codes`` number them
    entrants = [_memoised(e) for e in board_entrants(stored_entrants(query, corpus))]
    rows, by_source = [], []
    for entrant in entrants:
        score = pre.score_pre(configs, entrant)
        flagged, scored = _pair_vectors(configs, entrant)
        # The row's pairs reduced to (tp, fp, fn) per configuration, as the contrasts reduce
        # them: its intervals resample whole configurations (``board_intervals.pre_intervals``).
        counts = _cluster_counts(truth, flagged, scored, codes, len(config_ids))
        intervals = ci.pre_intervals(*counts, score["n_scored"], len(configs), N_BOOT)
        rows.append(BoardRow(entrant.name, {m: score[m] for m in METRICS},
                             {"truth": truth, "cluster": cluster, "flagged": flagged, "scored": scored},
                             n_items=score["n_scored"], coverage=score["coverage"], role=entrant.role,
                             kind=entrant.kind, intervals=intervals))
        by_source.append(_by_source_row(entrant.name, pre.score_pre_by_source(configs, entrant), score["f1"], counts,
                                        cluster_source, intervals.get("f1")))
    contrasts = contrasts_for(rows, CONTRAST_FAMILIES, TESTS)
    n_pairs = int(truth.size)
    notes = [f"{len(configs)} configurations, {n_pairs} declared capabilities, {int(truth.sum())} labeled excess "
             f"(base rate {truth.mean():.3f})."]
    for row in rows:
        if row.coverage < 1:
            notes.append(f"{row.entrant} abstains on {len(configs) - row.n_items} configuration(s); its scores rest on {row.n_items}.")
    return BoardResult("pre", "PRE over-privilege", "PRE", corpus, METRICS, BOARD.floor, len(configs),
                       "configurations", rows, contrasts, notes, {BY_SOURCE: by_source},
                       primary_metric="f1", primary_contrast_family=CONTRAST_FAMILIES[0].name,
                       leader_family=CONTRAST_FAMILIES[1].name,
                       family_labels={f.name: f.label for f in CONTRAST_FAMILIES},
                       interval_methods=INTERVAL_METHODS, extra_captions={BY_SOURCE: BY_SOURCE_CAPTION})


def corpora(query: Query) -> list[str]:
    return query("pre_corpora")["corpus"].tolist()


# The entrants in the published board's order; the held-out judge (and any other config-level
# set the store holds) follows them. Adding an entrant is one line here.
BOARD = Board("pre", "PRE over-privilege", Task("PRE", "config", "catchbench-pre"), METRICS, "configurations", compute,
              corpora, entrants=(pre.flag_all, pre.flag_none, *pre.RULES, pre.oracle_privilege_diff),
              allows_slice=False, needs="declared configurations with their capabilities (a CatchBench PRE release)")


def board_entrants(stored: Sequence[Entrant] = ()) -> list[Entrant]:
    """The board's declared entrants, then the stored sets' (``stored_entrants``)."""
    return [*BOARD.entrants, *stored]
