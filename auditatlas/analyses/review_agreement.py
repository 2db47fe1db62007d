"""Agreement a reviewer can trust: between reviewers, between review and release, and the
released labels' error rate from the random review order.

Three figures, from the verdicts (``queries/sql/review_agreement_verdicts.sql``: every verdict,
history included) and the released labels of the steps they are on:

- **between reviewers**: Cohen's kappa (scikit-learn's ``cohen_kappa_score``) for each pair of
  reviewers on the steps both gave a verdict on, each reviewer's latest verdict per step;
- **review against release**, per label process (the step's ``label_source``): kappa between the
  latest verdict per step (any reviewer) and the released label, and the confusion table
  (released anomaly / normal x reviewed anomaly / normal / unsure);
- **the released labels' error rate**, from verdicts given in the ``random`` review order only
  (the verdict row records the order it was given from: ``verdicts.queue``, and its seed:
  ``verdicts.seed``): disagreements over decided verdicts, with an exact (Clopper-Pearson) 95%
  interval from scipy. Every other order picks the steps most likely to be wrong, so only the
  seeded uniform sample may estimate a rate.

Why one estimate per seed, never pooled: each seed's shuffle is one uniform sample of the labeled
steps, but two seeds' samples overlap. Pooling them counts a step reviewed under both twice, and
the union of two prefixes of two shuffles is not a uniform sample (the binomial interval assumes
one). So the page estimates from its chosen seed's verdicts alone (the latest per step), and the
CLI gives one estimate per seed. A random-order verdict without a seed (from a reviews file that
did not say) belongs to no sample: it is counted in a note and left out.

Why "unsure" is left out of kappa and the rate (and counted): it is no label, so it can neither
agree nor disagree. Why kappa is sometimes undefined: when both sides gave one and the same
class only, chance agreement is 1 and (po - pe) / (1 - pe) is 0 / 0; it is then said in one
sentence, never shown as a number (scikit-learn would give nan, or a replacement value).

"Latest" is the one rule of ``queries/sql/reviewed_labels.sql``: the latest ``reviewed_at``, ties
broken by ``verdict_id``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations
from typing import Any

import pandas as pd

from ..view_state.state_fields import on_release
from . import Query

CONFIDENCE = 0.95
RANDOM_ORDER = "random"
VERDICT_LABEL = {"anomaly": 1, "normal": 0}  # unsure: no label (auditatlas.verdicts.VERDICT_LABEL)
CLASS_WORDS = {1: "anomaly", 0: "normal"}
NO_PROCESS = "(no label source)"
STEP = ["run_id", "step_idx"]


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa on ``decided`` pairs of labels; ``value`` None with ``undefined`` saying why."""

    value: float | None
    decided: int  # steps with a decision on both sides (the ones kappa counts)
    unsure: int  # shared steps left out because one side (or both) was unsure
    undefined: str | None = None


@dataclass(frozen=True)
class ReviewerPair:
    first: str
    second: str
    shared: int  # steps both reviewers gave a verdict on
    kappa: Kappa


@dataclass(frozen=True)
class ReleaseAgreement:
    """Review (the latest verdict per step) against the released label, on one label process."""

    label_process: str
    reviewed: int  # labeled steps of this process with a verdict
    kappa: Kappa
    # released class -> reviewed verdict -> steps; released "anomaly" / "normal", reviewed
    # "anomaly" / "normal" / "unsure".
    confusion: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ErrorRate:
    """The released labels' error rate from the random order under one ``seed`` (``scope``: all,
    or one label process)."""

    seed: int
    scope: str
    decided: int
    disagreements: int
    unsure: int
    rate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Agreement:
    pairs: list[ReviewerPair]
    release: list[ReleaseAgreement]
    error_rates: list[ErrorRate]
    # One sentence each: what was left out and why a figure is missing.
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"confidence": CONFIDENCE, "reviewer_pairs": [asdict(p) for p in self.pairs],
                "review_vs_release": [asdict(r) for r in self.release],
                "error_rate": [asdict(e) for e in self.error_rates], "notes": list(self.notes)}


# ----------------------------------------------------------------------------------- figures


def kappa(first: list[int], second: list[int], unsure: int, who: str) -> Kappa:
    """Cohen's kappa of two equally long lists of 0/1 labels (``who`` names the two sides in
    the sentence saying why it is undefined)."""
    from sklearn.metrics import cohen_kappa_score

    n = len(first)
    if n == 0:
        why = f"No kappa for {who}: they share no step both decided"
        return Kappa(None, 0, unsure, why + (f" ({unsure} shared step(s) were unsure)." if unsure else "."))
    classes = set(first) | set(second)
    if len(classes) == 1:
        word = CLASS_WORDS[classes.pop()]
        return Kappa(None, n, unsure, f"Kappa is undefined for {who}: on their {n} shared decided step(s) both "
                                      f"gave only '{word}', so agreement by chance is 1 and kappa is 0 / 0.")
    return Kappa(float(cohen_kappa_score(first, second, labels=[0, 1])), n, unsure)


def exact_interval(errors: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact binomial (Clopper-Pearson) interval of a proportion ``errors`` / ``n``."""
    from scipy.stats import binomtest

    ci = binomtest(errors, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def latest(verdicts: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The latest verdict per ``by`` group (latest reviewed_at, ties by verdict_id)."""
    if verdicts.empty:
        return verdicts
    ordered = verdicts.sort_values(["reviewed_at", "verdict_id"], kind="stable")
    return ordered.groupby(by, sort=False).tail(1).sort_values(by, kind="stable").reset_index(drop=True)


def reviewer_pairs(held: pd.DataFrame) -> list[ReviewerPair]:
    """Kappa for every pair of reviewers on their shared steps (each one's latest verdict)."""
    per_reviewer = latest(held, ["reviewer", *STEP])
    names = sorted(per_reviewer["reviewer"].unique()) if not per_reviewer.empty else []
    pairs = []
    for first, second in combinations(names, 2):
        a = per_reviewer[per_reviewer["reviewer"] == first].set_index(STEP)["verdict"]
        b = per_reviewer[per_reviewer["reviewer"] == second].set_index(STEP)["verdict"]
        both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
        decided = both[both["a"].isin(VERDICT_LABEL) & both["b"].isin(VERDICT_LABEL)]
        pairs.append(ReviewerPair(first, second, len(both),
                                  kappa(decided["a"].map(VERDICT_LABEL).tolist(), decided["b"].map(VERDICT_LABEL).tolist(),
                                        len(both) - len(decided), f"{first} and {second}")))
    return pairs


def release_agreement(held: pd.DataFrame) -> list[ReleaseAgreement]:
    """Per label process: kappa of the latest verdict per step against the released label, and
    the confusion table."""
    per_step = latest(held[held["released_label"].notna()], STEP)
    found = []
    for process, steps in per_step.groupby(per_step["label_process"].fillna(NO_PROCESS), sort=True):
        released = steps["released_label"].astype(int).map(CLASS_WORDS)
        confusion = {r: {v: int(((released == r) & (steps["verdict"] == v)).sum()) for v in ("anomaly", "normal", "unsure")}
                     for r in ("anomaly", "normal")}
        decided = steps[steps["verdict"].isin(VERDICT_LABEL)]
        found.append(ReleaseAgreement(str(process), len(steps), kappa(
            decided["released_label"].astype(int).tolist(), decided["verdict"].map(VERDICT_LABEL).tolist(),
            len(steps) - len(decided), f"review and release on {process}"), confusion))
    return found


def random_seeds(held: pd.DataFrame) -> list[int]:
    """The seeds of the random order that verdicts on labeled steps were given under."""
    sampled = held[(held["queue"] == RANDOM_ORDER) & held["released_label"].notna() & held["seed"].notna()]
    return sorted(int(s) for s in sampled["seed"].unique())


def error_rates(held: pd.DataFrame, seed: int) -> list[ErrorRate]:
    """The released labels' error rate from the random-order verdicts given under ``seed`` (the
    latest such verdict per step, any reviewer): over all of them, then per label process when
    there are several. Verdicts under other seeds are another sample and are not counted."""
    under_seed = held["seed"].eq(seed).fillna(False).astype(bool)  # a verdict without a seed is in no sample
    mine = held[(held["queue"] == RANDOM_ORDER) & held["released_label"].notna() & under_seed]
    sampled = latest(mine, STEP)
    if sampled.empty:
        return []
    sampled = sampled.assign(label_process=sampled["label_process"].fillna(NO_PROCESS))
    groups = [("all label processes", sampled)]
    if sampled["label_process"].nunique() > 1:
        groups += [(str(p), g) for p, g in sampled.groupby("label_process", sort=True)]
    return [_rate(seed, scope, steps) for scope, steps in groups]


def _rate(seed: int, scope: str, steps: pd.DataFrame) -> ErrorRate:
    decided = steps[steps["verdict"].isin(VERDICT_LABEL)]
    n, unsure = len(decided), len(steps) - len(decided)
    if n == 0:
        return ErrorRate(seed, scope, 0, 0, unsure, None, None, None)
    errors = int((decided["verdict"].map(VERDICT_LABEL) != decided["released_label"].astype(int)).sum())
    low, high = exact_interval(errors, n)
    return ErrorRate(seed, scope, n, errors, unsure, errors / n, low, high)


def agreement(query: Query, slice_: Mapping[str, Any] | None = None, seed: int | None = 0) -> Agreement:
    """The agreement figures of the verdicts on the steps of ``slice_`` (against the released
    labels, whatever the slice's label choice). The error rate: from the random order's
    verdicts under ``seed`` (the page's chosen seed), or one estimate per seed held when
    ``seed`` is None (the CLI)."""
    verdicts = query("review_agreement_verdicts", {"slice": on_release(slice_)})
    held = verdicts[verdicts["in_slice"].astype(bool)]
    notes = _notes(verdicts, held)
    pairs, release = reviewer_pairs(held), release_agreement(held)
    held_seeds = random_seeds(held)
    rates, all_unsure = [], False
    for one in (held_seeds if seed is None else [int(seed)]):
        found = error_rates(held, one)
        if found and found[0].decided == 0:
            notes.append(f"Every random-order verdict under seed {one} on a labeled step is unsure ({found[0].unsure}), "
                         "so that sample gives no error rate of the released labels.")
            found, all_unsure = [], True
        rates += found
    if seed is not None and not rates and not all_unsure:
        notes.append(f"No verdict in this slice was given in the random order under seed {int(seed)}, so there is no "
                     "error rate of the released labels: only that seeded uniform sample may estimate one (every "
                     "other order picks the steps most likely to be wrong).")
    elif seed is None and not held_seeds:
        notes.append("No verdict in this slice was given in the random order, so there is no error rate of the "
                     "released labels: only that seeded uniform sample may estimate one (every other order picks "
                     "the steps most likely to be wrong).")
    others = [s for s in held_seeds if seed is not None and s != int(seed)]
    if others:
        notes.append(f"Random-order verdicts under seed(s) {', '.join(map(str, others))} are another sample and are "
                     f"not counted in seed {int(seed)}'s estimate (choose that seed to see its own).")
    unseeded = held[(held["queue"] == RANDOM_ORDER) & held["seed"].isna()]
    if len(unseeded):
        notes.append(f"{len(unseeded)} random-order verdict(s) carry no seed, so they belong to no sample and are left "
                     "out of the error rate.")
    return Agreement(pairs, release, rates, notes)


def _notes(verdicts: pd.DataFrame, held: pd.DataFrame) -> list[str]:
    notes = []
    if held.empty:
        notes.append("No verdict has been given on a step of this slice yet.")
    reviewers = sorted(held["reviewer"].unique())
    if len(reviewers) == 1:
        notes.append(f"Only one reviewer ({reviewers[0]}) gave verdicts in this slice, so there is no kappa "
                     "between reviewers.")
    orphaned = int(verdicts["orphaned"].astype(bool).sum())
    if orphaned:
        notes.append(f"{orphaned} verdict(s) in the store are on steps it no longer holds (orphaned after a "
                     "re-ingest); they are kept and left out of every figure here.")
    unlabeled = latest(held[held["released_label"].isna()], STEP)
    if len(unlabeled):
        notes.append(f"{len(unlabeled)} reviewed step(s) have no released label, so they are not compared with "
                     "the release.")
    return notes


# ------------------------------------------------------------------------------- as tables
# A missing figure stays None in its column (object dtype), never NaN: a table shows it blank
# beside the note saying why, and no reader takes it for a number.


def _figures(frame: pd.DataFrame, columns: dict[str, list[float | None]], digits: int) -> pd.DataFrame:
    for name, values in columns.items():
        frame[name] = pd.Series([None if v is None else round(v, digits) for v in values], index=frame.index,
                                dtype=object)
    return frame


def pairs_frame(result: Agreement) -> pd.DataFrame:
    """One row per pair of reviewers (the kappa blank where it is undefined, its note saying why)."""
    frame = pd.DataFrame([{"reviewer": p.first, "other reviewer": p.second, "shared steps": p.shared,
                          "decided by both": p.kappa.decided, "left out (unsure)": p.kappa.unsure,
                          "kappa": None, "note": p.kappa.undefined or ""} for p in result.pairs],
                        columns=["reviewer", "other reviewer", "shared steps", "decided by both", "left out (unsure)",
                                 "kappa", "note"])
    return _figures(frame, {"kappa": [p.kappa.value for p in result.pairs]}, 3)


def release_frame(result: Agreement) -> pd.DataFrame:
    """One row per label process: review against release."""
    frame = pd.DataFrame([{"label process": r.label_process, "reviewed steps": r.reviewed, "decided": r.kappa.decided,
                           "left out (unsure)": r.kappa.unsure, "kappa": None, "note": r.kappa.undefined or ""}
                          for r in result.release],
                         columns=["label process", "reviewed steps", "decided", "left out (unsure)", "kappa", "note"])
    return _figures(frame, {"kappa": [r.kappa.value for r in result.release]}, 3)


def confusion_frame(result: Agreement) -> pd.DataFrame:
    """The released-vs-reviewed confusion table, two rows (released anomaly, normal) per label process."""
    rows = [{"label process": r.label_process, "released": released,
             **{f"reviewed {v}": n for v, n in counts.items()}}
            for r in result.release for released, counts in r.confusion.items()]
    return pd.DataFrame(rows, columns=["label process", "released", "reviewed anomaly", "reviewed normal",
                                       "reviewed unsure"])


def error_frame(result: Agreement) -> pd.DataFrame:
    """The error rate with its exact interval, over all label processes and per process."""
    rates = result.error_rates
    frame = pd.DataFrame([{"seed": e.seed, "label processes": e.scope, "decided verdicts": e.decided,
                           "disagreements": e.disagreements, "left out (unsure)": e.unsure} for e in rates],
                         columns=["seed", "label processes", "decided verdicts", "disagreements", "left out (unsure)"])
    return _figures(frame, {"error rate": [e.rate for e in rates], "95% low": [e.low for e in rates],
                            "95% high": [e.high for e in rates]}, 4)


def error_sentence(rate: ErrorRate) -> str:
    """The estimate in words."""
    if rate.rate is None:
        return (f"Released labels' error rate ({rate.scope}): no decided random-order verdict under seed {rate.seed} "
                f"({rate.unsure} unsure), so no estimate.")
    return (f"Released labels' error rate ({rate.scope}), from the random order under seed {rate.seed}: "
            f"{rate.disagreements} of "
            f"{rate.decided} decided verdict(s) disagree, {rate.rate:.1%} (exact 95% interval "
            f"{rate.low:.1%} to {rate.high:.1%})" + (f"; {rate.unsure} unsure left out." if rate.unsure else "."))


EXPLAINS = ("Cohen's kappa: agreement beyond chance, (po - pe) / (1 - pe); 1 is full agreement, 0 what chance "
            "gives. Each reviewer's latest verdict per step counts; unsure verdicts are no label and are left out "
            "(counted). Review against release takes the latest verdict per step, any reviewer, and the label "
            "process is the step's label source. The error rate counts random-order verdicts only, under one "
            "seed (the latest per step): the one order that samples the labeled steps uniformly, and each seed's "
            "shuffle is its own sample (two seeds' verdicts are never pooled, so no step counts twice); its "
            "interval is the exact (Clopper-Pearson) binomial one.")
