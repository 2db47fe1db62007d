"""Run-level failure detection: the entrants of the POST detection and LIVE boards.

POST detection scores each finished run and reads ROC-AUC against the run outcome (failure =
positive). LIVE asks the same at trace prefixes of 25/50/75/100% of the steps; "time to
detection" (t2d) is the earliest prefix whose ROC-AUC reaches 0.70 (specs/catchbench.md).

Entrants, named as on the published board, are declared once, in board order, by each board
(``board_detection.POST_BOARD.entrants`` and ``LIVE_BOARD.entrants``): each names its role and
kind and the ``RunScorer`` below, a registry detector (``auditatlas.detectors.registry``) and
the run features that score it:

- ``random`` (registry ``random``): one uniform score per run, ``numpy.random.RandomState(0)``,
  drawn once per population, so it is the same at every prefix (as on the published LIVE board).
- ``size (flat)``, ``auditable (size+deps)``, ``full`` (registry ``logreg``): supervised, on
  the feature groups of auditatlas.analyses.run_features. Learner: standardize + class-balanced logistic
  regression (liblinear), the learner of auditable's ``run.lr_*`` detectors (GRADE's
  failure-detection study). Scores are out-of-fold probabilities of 5-fold stratified CV,
  averaged over seeds 0..4 (``cv_scores``): every run is scored by models that never saw it.
  These seed-averaged scores are what paired tests (DeLong) need; the published board's
  displayed cells average the per-seed AUCs instead, which ``cv_seed_scores`` (one row per
  seed) gives.
- ``pyod-flatten (ECOD)`` (POST) / ``pyod (ECOD)`` (LIVE) (registry ``ecod``): unsupervised
  ECOD on the size columns, fitted on the population itself (transductive, no labels).
- ``dep-span (online)`` (LIVE only, registry ``dep-span``): mean per-step dependency span over
  the prefix, the running score of auditable's ``online.dep_span`` read at the prefix end.
- every prediction set of the corpus in the ``predictions`` view, named by its set_id: a run
  scores the highest score of its steps inside the prefix; run-level sets are used as they
  are on POST only. On LIVE they are off by default, because a step score computed after
  the run ended (a judge that read the whole trace) is not a prefix-only score.

Caveat on LIVE: a prefix is a *fraction* of the finished run (the published protocol), so
its length ceil(f * n_steps) still tells the final length; a size entrant at 25% can score
well for that reason alone. A truly online monitor would not know n_steps.

Undefined cases raise ``UndefinedMetric`` with one sentence: a slice with a single outcome
(ROC-AUC has no value) or fewer runs of a class than CV folds (stratified CV cannot place one
of that class in every fold).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..detectors import registry as detector_registry
from ..errors import UndefinedMetric
from ..stats import roc_auc
from . import Query
from .entrant import Entrant
from .run_features import RunFeatures, prefix_features

RANDOM_SEED = 0
CV_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
CV_FOLDS = 5
T2D_THRESHOLD = 0.70
LIVE_FRACTIONS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class RunScorer:
    """What scores a run-level entrant: a registry detector on run features (a feature group
    of ``run_features.FEATURE_GROUPS``, or a tuple of run feature columns)."""

    detector: str
    features: str | tuple[str, ...]


def set_entrant(name: str) -> Entrant:
    """A stored prediction set on a run-level board: an extra row, not a published entrant."""
    return Entrant(name, "extra", "prediction set")


class RunScores(NamedTuple):
    """Per-run scores of one entrant; higher = more likely failed. Aligned arrays."""

    run_ids: np.ndarray
    y: np.ndarray  # 1 = failed run
    scores: np.ndarray


@dataclass(frozen=True)
class LiveTrajectory:
    """ROC-AUC of one entrant at each prefix fraction, and its time to detection.

    ``auc[f]`` is None where the metric is undefined for this entrant (``note`` says why);
    ``t2d`` is the earliest fraction whose AUC reaches the threshold, None if none does.
    """

    auc: dict[float, float | None]
    t2d: float | None
    n_runs: int
    n_failures: int
    note: str | None = None
    runs: dict[float, int] = field(default_factory=dict)  # runs scored at each fraction


# ------------------------------------------------------------------------------- scorers

def _learner(seed: int = 0):
    """The supervised entrants' learner: the registry's ``logreg`` (standardize + class-balanced
    liblinear logistic regression; balanced so the fit does not lean on the base rate, which
    differs between corpora)."""
    return detector_registry.get("logreg").make(seed)


def _require_cv(y: np.ndarray, folds: int, where: str = "this slice") -> None:
    n_fail = int(np.sum(y == 1))
    n_ok = int(np.sum(y == 0))
    if n_fail == 0 or n_ok == 0:
        only = "failed" if n_ok == 0 else "succeeded"
        raise UndefinedMetric(
            f"Run-level detection is undefined on {where}: all {len(y)} runs {only}, so ROC-AUC has no value."
        )
    if min(n_fail, n_ok) < folds:
        raise UndefinedMetric(
            f"Run-level detection needs at least {folds} failed and {folds} succeeded runs for "
            f"{folds}-fold stratified cross-validation; {where} has {n_fail} failed and {n_ok} succeeded."
        )


def cv_seed_scores(
    X: np.ndarray, y: Sequence[int], seeds: Iterable[int] = CV_SEEDS, folds: int = CV_FOLDS,
    learner: Callable[[int], Any] = _learner,
) -> np.ndarray:
    """Out-of-fold failure probabilities, one row per seed: shape (n_seeds, n_runs).

    For seed s the runs are split by StratifiedKFold(folds, shuffle=True, random_state=s);
    each run's score comes from ``learner(s)`` fitted on the other folds (a registry
    estimator: ``decision_function`` is its probability of failure).
    """
    from sklearn.model_selection import StratifiedKFold

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    _require_cv(y, folds)
    rows = []
    for seed in seeds:
        oof = np.full(len(y), np.nan)
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y):
            model = learner(seed).fit(X[train], y[train])
            oof[test] = model.decision_function(X[test])
        rows.append(oof)
    return np.vstack(rows)


def cv_scores(
    X: np.ndarray, y: Sequence[int], seeds: Iterable[int] = CV_SEEDS, folds: int = CV_FOLDS,
    learner: Callable[[int], Any] = _learner,
) -> np.ndarray:
    """5-fold stratified CV averaged over 5 seeds: the seed-mean out-of-fold probability.

    Averaging probabilities (not decision values) keeps every seed on the same scale.
    """
    return cv_seed_scores(X, y, seeds, folds, learner).mean(axis=0)


# Above this many runs the supervised entrants' folds are fitted on distinct rows
# (``cv_scores_distinct``): liblinear took about 25 s a fit at 740,000 rows, and a LIVE board
# at a million runs is 300 fits. At or below it every fit reads every run, as the published
# boards (a few thousand runs) always did, so their numbers are the ones they were.
DISTINCT_ABOVE = 50_000


def cv_scores_distinct(X: np.ndarray, y: Sequence[int], seeds: Iterable[int] = CV_SEEDS,
                       folds: int = CV_FOLDS) -> np.ndarray:
    """``cv_scores`` with the registry's ``logreg`` learner, each fold fitted on the distinct
    (features, outcome) rows of its training runs weighted by how many runs each stands for.

    The same fit as on every run, not an approximation: standardizing with frequency weights
    gives the same means and variances, and logistic regression's loss with a row's weight w is
    the loss of w copies of it; the class balance the learner asks for ("balanced") is computed
    from the training runs' counts and folded into the weights, since scikit-learn would
    otherwise compute it from the distinct rows. Run features are small counts and their
    ratios, so a million runs hold far fewer distinct rows. Folds are the same
    ``StratifiedKFold`` splits over every run.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    _require_cv(y, folds)
    distinct, inverse = distinct_rows(X)
    cell = inverse * 2 + y  # one (distinct row, outcome) pair
    total = np.zeros(len(y))
    seeds = tuple(seeds)
    for seed in seeds:
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros((len(y), 1)), y):
            counts = np.bincount(cell[train], minlength=2 * len(distinct))
            present = np.flatnonzero(counts)
            outcome = present % 2
            weight = counts[present].astype(float)
            per_class = np.bincount(outcome, weights=weight, minlength=2)
            balance = len(train) / (2.0 * per_class)  # scikit-learn's "balanced": n / (classes * count)
            model = make_pipeline(StandardScaler(), LogisticRegression(solver="liblinear"))
            model.fit(distinct[present // 2], outcome, standardscaler__sample_weight=weight,
                      logisticregression__sample_weight=weight * balance[outcome])
            positive = list(model.classes_).index(1)
            total[test] += model.predict_proba(distinct)[:, positive][inverse[test]]
    return total / len(seeds)


def distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(X, axis=0, return_inverse=True)`` for a 2-D float matrix: the distinct rows in
    lexicographic order and each row's place among them. The same algorithm (sort, then mark
    where a row differs from the one before) with the rows sorted by ``np.lexsort`` over the
    columns: numpy's own sorts rows as structured records compared field by field, 40 s of the
    LIVE board's 160 at a million runs against about a second this way."""
    X = np.asarray(X)
    n = len(X)
    if n == 0 or X.shape[1] == 0:
        return X[:min(n, 1)], np.zeros(n, dtype=np.intp)
    order = np.lexsort(X.T[::-1])  # the first column is the primary key
    ordered = X[order]
    starts = np.concatenate(([True], (ordered[1:] != ordered[:-1]).any(axis=1)))
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], inverse


def transductive_scores(detector: detector_registry.Detector, X: np.ndarray, seed: int = RANDOM_SEED) -> np.ndarray:
    """Scores of an unsupervised registry detector fitted on the rows of X themselves.

    The fitted rows' own scores (pyod ``decision_scores_``) are read, not a second pass of
    ``decision_function`` (ECOD would then count every row twice in its tails). Constant
    columns are dropped first: their empirical tails are 1 for every run, so they add nothing
    to any score, and pyod warns about their undefined skewness. With no varying column a
    detector that reads features scores every run 0.
    """
    X = np.asarray(X, dtype=float)
    estimator = detector.make(seed)
    if not detector.reads_features:
        return np.asarray(estimator.fit(X).decision_scores_, dtype=float)
    varying = X[:, np.ptp(X, axis=0) > 0] if X.size else X
    if varying.shape[1] == 0 or varying.shape[0] < 2:
        return np.zeros(X.shape[0])
    fitted = estimator.fit(varying)
    scores = getattr(fitted, "decision_scores_", None)
    return np.asarray(scores if scores is not None else fitted.decision_function(varying), dtype=float)


def ecod_scores(X: np.ndarray) -> np.ndarray:
    """ECOD outlier scores (pyod ``decision_scores_``) of the rows of X, fitted on X itself."""
    return transductive_scores(detector_registry.get("ecod"), X)


def random_scores(n: int, seed: int = RANDOM_SEED) -> np.ndarray:
    """n uniform scores from numpy.random.RandomState(seed): the board's floor."""
    return transductive_scores(detector_registry.get("random"), np.empty((n, 0)), seed)


# ------------------------------------------------------------------------------- entrants

def _where(corpus: str, fraction: float) -> str:
    return f"corpus '{corpus}'" + ("" if fraction >= 1.0 else f" at the {fraction:.0%} prefix")


def feature_entrants(
    features: RunFeatures,
    entrants: Sequence[Entrant],
    seeds: Iterable[int] = CV_SEEDS,
    folds: int = CV_FOLDS,
    where: str = "this slice",
) -> dict[str, RunScores]:
    """The feature-based ``entrants`` of a board (each with its ``RunScorer``) on precomputed
    features, in board order: supervised detectors are scored out-of-fold (``cv_scores``), the
    others fitted on the population itself.
    """
    y = features.y
    _require_cv(y, folds, where)
    seeds = tuple(seeds)
    ids = features.run_ids
    out: dict[str, RunScores] = {}
    for entrant in entrants:
        scorer: RunScorer = entrant.scorer
        detector = detector_registry.get(scorer.detector)
        X = (features.matrix(scorer.features) if isinstance(scorer.features, str)
             else features.table.loc[:, list(scorer.features)].to_numpy(dtype=float))
        if detector.supervision == "supervised" and len(y) > DISTINCT_ABOVE and scorer.detector == "logreg":
            scores = cv_scores_distinct(X, y, seeds, folds)
        elif detector.supervision == "supervised":
            scores = cv_scores(X, y, seeds, folds, learner=detector.make)
        else:
            scores = transductive_scores(detector, X)
        out[entrant.name] = RunScores(ids, y, scores)
    return out


def prediction_set_entrants(
    query: Query,
    corpus: str,
    features: RunFeatures,
    slice: Mapping[str, Any] | None = None,
    min_steps: int = 1,
    include_run_level: bool = True,
) -> dict[str, RunScores]:
    """Run-level scores of every prediction set of the corpus, on the features' population.

    A set that scores only part of the population keeps its own (smaller) run list.
    """
    frame = query(
        "run_prefix_predictions",
        {
            "slice": {**dict(slice or {}), "corpus": [corpus]},
            "fraction": float(features.fraction),
            "min_steps": int(min_steps),
            "include_run_level": bool(include_run_level),
        },
    )
    # Each row's place among the features' runs (-1: not one of them, a sampled population): one
    # hash of the run ids, not a set of them and a lookup per row.
    place = pd.Index(features.run_ids).get_indexer(frame["run_id"])
    frame = frame.assign(place=place)[place >= 0]
    y_all = np.asarray(features.y, dtype=np.int64)
    ids_all = np.asarray(features.run_ids, dtype=object)
    out: dict[str, RunScores] = {}
    for set_id, rows in frame.groupby("set_id", sort=True):
        at = rows["place"].to_numpy()
        out[str(set_id)] = RunScores(ids_all[at], y_all[at], rows["score"].to_numpy(dtype=float))
    return out


def detection_entrants(
    query: Query,
    corpus: str,
    slice: Mapping[str, Any] | None = None,
    fraction: float = 1.0,
    min_steps: int = 1,
    *,
    entrants: Sequence[Entrant],
    prediction_sets: bool = True,
    seeds: Iterable[int] = CV_SEEDS,
) -> dict[str, RunScores]:
    """Per-run scores of a detection board's declared ``entrants`` (and, with
    ``prediction_sets``, the corpus's stored sets) on one corpus and slice. Raises
    UndefinedMetric when the population
    holds a single outcome or fewer than 5 runs of one outcome.
    """
    features = prefix_features(query, corpus, slice, fraction, min_steps)
    scored = feature_entrants(features, entrants, seeds, where=_where(corpus, fraction))
    if prediction_sets:
        sets = prediction_set_entrants(
            query, corpus, features, slice, min_steps, include_run_level=fraction >= 1.0
        )
        # A set_id equal to a board name must not replace (or vanish behind) that entrant.
        scored.update({(k if k not in scored else f"{k} (prediction set)"): v for k, v in sets.items()})
    return scored


def time_to_detection(auc: Mapping[float, float | None], threshold: float = T2D_THRESHOLD) -> float | None:
    """The earliest prefix fraction whose ROC-AUC reaches ``threshold``; None if none does."""
    for fraction in sorted(auc):
        value = auc[fraction]
        if value is not None and value >= threshold:
            return fraction
    return None


def live_trajectories(
    query: Query,
    corpus: str,
    entrants: Sequence[Entrant],
    fractions: Sequence[float] = LIVE_FRACTIONS,
    min_steps: int = 4,
    slice: Mapping[str, Any] | None = None,
    *,
    prediction_sets: bool = False,
    threshold: float = T2D_THRESHOLD,
    seeds: Iterable[int] = CV_SEEDS,
) -> dict[str, LiveTrajectory]:
    """ROC-AUC of every LIVE entrant (``entrants``, the board's declared ones) at each prefix, and
    its time to detection.

    The population (runs with >= ``min_steps`` steps and a known outcome) is the same at every
    prefix, so the columns compare the same runs. Raises UndefinedMetric when the population
    cannot be scored at all (one outcome, or too few runs of one outcome for CV).
    """
    fractions = sorted(float(f) for f in fractions)
    seeds = tuple(seeds)
    per_fraction: dict[float, dict[str, RunScores]] = {}
    for fraction in fractions:
        per_fraction[fraction] = detection_entrants(
            query, corpus, slice, fraction, min_steps, entrants=entrants, prediction_sets=prediction_sets, seeds=seeds
        )
    names: list[str] = []
    for scored in per_fraction.values():
        names.extend(n for n in scored if n not in names)
    first = per_fraction[fractions[0]]["random"]
    n_runs, n_failures = len(first.y), int(first.y.sum())

    out: dict[str, LiveTrajectory] = {}
    for name in names:
        auc: dict[float, float | None] = {}
        runs: dict[float, int] = {}
        notes: list[str] = []
        for fraction in fractions:
            entrant = per_fraction[fraction].get(name)
            if entrant is None:
                auc[fraction], runs[fraction] = None, 0
                notes.append(f"no scores at the {fraction:.0%} prefix")
                continue
            runs[fraction] = len(entrant.y)
            try:
                auc[fraction] = roc_auc(entrant.y, entrant.scores)
            except UndefinedMetric as exc:
                auc[fraction] = None
                notes.append(f"{fraction:.0%}: {exc}")
        out[name] = LiveTrajectory(
            auc=auc,
            t2d=time_to_detection(auc, threshold),
            n_runs=n_runs,
            n_failures=n_failures,
            note="; ".join(notes) or None,
            runs=runs,
        )
    return out
