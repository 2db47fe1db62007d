"""Agreement figures of the review page: kappa, the confusion table, the released labels' error
rate with its exact interval (the hand-made store of agreement_store.py, values worked out there
by hand), the CLI, the export, the judges-against-the-human order."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import agreement_store
import queries
from auditatlas import verdicts
from auditatlas.analyses import review_agreement as ra
from auditatlas.analyses import review_queue
from cli_support import run_cli
from stores import WHOWHEN


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return agreement_store.build(tmp_path_factory.mktemp("agreement") / "store")


@pytest.fixture()
def root(built, tmp_path) -> Path:
    return Path(shutil.copytree(built, tmp_path / "store"))


@pytest.fixture(scope="module")
def reviewed(built, tmp_path_factory) -> Path:
    """The store with agreement_store's verdicts (read-only)."""
    root = Path(shutil.copytree(built, tmp_path_factory.mktemp("reviewed") / "store"))
    verdicts.append_verdicts(root, agreement_store.rows())
    return root


def _agreement(root: Path, slice_=None) -> ra.Agreement:
    return ra.agreement(queries.runner(root), slice_)


def _pair(result: ra.Agreement, first: str, second: str) -> ra.ReviewerPair:
    return next(p for p in result.pairs if (p.first, p.second) == (first, second))


# ------------------------------------------------------------------------------------ kappa


def test_kappa_between_two_reviewers_equals_the_hand_worked_value(reviewed):
    pair = _pair(_agreement(reviewed), "ann", "bob")
    # agreement_store: 10 decided shared steps, po 0.8, pe 0.52, kappa 0.28 / 0.48; k:b 0 left out.
    assert (pair.shared, pair.kappa.decided, pair.kappa.unsure) == (11, 10, 1)
    assert pair.kappa.value == pytest.approx(0.28 / 0.48)
    assert pair.kappa.undefined is None


def test_undefined_kappa_is_one_sentence_never_a_number(reviewed):
    result = _agreement(reviewed)
    cy = _pair(result, "ann", "cy")
    assert (cy.shared, cy.kappa.decided, cy.kappa.unsure, cy.kappa.value) == (4, 3, 1, None)
    assert cy.kappa.undefined == ("Kappa is undefined for ann and cy: on their 3 shared decided step(s) both gave only "
                                  "'normal', so agreement by chance is 1 and kappa is 0 / 0.")
    dee = _pair(result, "bob", "dee")
    assert (dee.shared, dee.kappa.value) == (0, None)
    assert dee.kappa.undefined == "No kappa for bob and dee: they share no step both decided."
    frame = ra.pairs_frame(result).set_index(["reviewer", "other reviewer"])
    assert frame.loc[("ann", "cy"), "kappa"] is None and "undefined" in frame.loc[("ann", "cy"), "note"]
    assert len(result.pairs) == 6  # every pair of the four reviewers


def test_review_against_release_per_label_process(reviewed):
    result = _agreement(reviewed)
    by_process = {r.label_process: r for r in result.release}
    assert sorted(by_process) == ["annotator", "verifier"]
    verifier = by_process["verifier"]
    # agreement_store: latest per step A A A N A N N N N U against 1 1 0 0 1 0 0 1 0 0.
    assert verifier.confusion == {"anomaly": {"anomaly": 3, "normal": 1, "unsure": 0},
                                  "normal": {"anomaly": 1, "normal": 4, "unsure": 1}}
    assert (verifier.reviewed, verifier.kappa.decided, verifier.kappa.unsure) == (10, 9, 1)
    assert verifier.kappa.value == pytest.approx(22 / 40)
    annotator = by_process["annotator"]
    assert annotator.confusion == {"anomaly": {"anomaly": 1, "normal": 0, "unsure": 0},
                                   "normal": {"anomaly": 0, "normal": 0, "unsure": 0}}
    assert annotator.kappa.value is None and "gave only 'anomaly'" in annotator.kappa.undefined
    table = ra.confusion_frame(result)
    assert table.values.tolist() == [["annotator", "anomaly", 1, 0, 0], ["annotator", "normal", 0, 0, 0],
                                     ["verifier", "anomaly", 3, 1, 0], ["verifier", "normal", 1, 4, 1]]
    assert "1 reviewed step(s) have no released label, so they are not compared with the release." in result.notes


def test_no_random_order_verdict_says_so_plainly(reviewed):
    result = _agreement(reviewed)
    assert result.error_rates == []
    assert any(n.startswith("No verdict in this slice was given in the random order under seed 0, so there is no "
                            "error rate") for n in result.notes)


def test_a_slice_without_verdicts_and_a_store_without_any(root, reviewed):
    result = _agreement(reviewed, {"corpus": ["nothing"]})
    assert (result.pairs, result.release, result.error_rates) == ([], [], [])
    assert result.notes[0] == "No verdict has been given on a step of this slice yet."
    assert _agreement(root).notes[0] == "No verdict has been given on a step of this slice yet."


# ------------------------------------------------------------------------------- error rate


def test_clopper_pearson_against_known_values():
    # Exact 95% intervals (Clopper & Pearson, 1934): 0 of 10 -> [0, 1 - 0.025^(1/10)] = [0, 0.3085];
    # 5 of 10 -> [0.1871, 0.8129].
    assert ra.exact_interval(0, 10) == pytest.approx((0.0, 0.3085), abs=5e-5)
    assert ra.exact_interval(5, 10) == pytest.approx((0.1871, 0.8129), abs=5e-5)


def _random_plan(letters: str) -> list[tuple]:
    return [("eve", 14, "k:a", range(10), letters)]


def test_error_rate_counts_random_order_verdicts_only(root):
    released = "AANNANNANN"  # k:a's released labels: every random-order verdict agrees
    verdicts.append_verdicts(root, agreement_store.rows(_random_plan(released), queue="random", revise=False, seed=0))
    # Doubt-order verdicts that all disagree, later: not a uniform sample, so they do not count.
    verdicts.append_verdicts(root, agreement_store.rows([("fay", 15, "k:a", range(10), "NNAANAANAA")], revise=False))
    (rate,) = _agreement(root).error_rates
    assert (rate.seed, rate.scope, rate.decided, rate.disagreements, rate.unsure, rate.rate) == (
        0, "all label processes", 10, 0, 0, 0)
    assert (rate.low, rate.high) == pytest.approx((0.0, 0.3085), abs=5e-5)


def test_error_rate_five_of_ten_with_an_unsure_left_out(root):
    # k:a released A A N N A N N A N N; eve disagrees on steps 0-4 and agrees on 5-9.
    verdicts.append_verdicts(root, agreement_store.rows(_random_plan("NNAANNNANN"), queue="random", revise=False, seed=0)
                            + agreement_store.rows([("eve", 14, "k:b", [1], "U")], queue="random", revise=False, seed=0))
    rates = {r.scope: r for r in _agreement(root).error_rates}
    assert sorted(rates) == ["all label processes", "annotator", "verifier"]
    everything = rates["all label processes"]
    assert (everything.decided, everything.disagreements, everything.unsure) == (10, 5, 1)
    assert (everything.low, everything.high) == pytest.approx((0.1871, 0.8129), abs=5e-5)
    assert rates["annotator"].rate is None
    assert ra.error_sentence(everything) == ("Released labels' error rate (all label processes), from the random "
                                             "order under seed 0: 5 of 10 decided verdict(s) disagree, 50.0% (exact "
                                             "95% interval 18.7% to 81.3%); 1 unsure left out.")


def test_error_rate_is_estimated_per_seed_and_a_step_counts_once(root):
    """Two seeds' samples share k:a steps 2 and 3; pooled, the latest per step would mix them.
    k:a released (steps 0-9): A A N N A N N A N N.
    seed 0, eve at 14:00-14:03 on steps 0-3: N A A N -> step 0 disagrees, 2 disagrees; eve revises
    step 0 to A at 16:00 (same seed: the latest counts) -> 1 of 4 (step 2).
    seed 1, fay at 15:00-15:04 on steps 2-6: N A A N N -> step 3 disagrees -> 1 of 5.
    Pooled (latest per step over both): 0 A, 1 A, 2 N, 3 A, 4 A, 5 N, 6 N -> 1 of 7 (step 3):
    neither seed's figure."""
    verdicts.append_verdicts(
        root, agreement_store.rows([("eve", 14, "k:a", range(4), "NAAN")], queue="random", revise=False, seed=0)
        + agreement_store.rows([("fay", 15, "k:a", range(2, 7), "NAANN")], queue="random", revise=False, seed=1)
        + agreement_store.rows([("eve", 16, "k:a", [0], "A")], queue="random", revise=False, seed=0))
    (zero,) = _agreement(root).error_rates  # the page's default seed
    assert (zero.seed, zero.decided, zero.disagreements, zero.rate) == (0, 4, 1, 0.25)
    assert any(n.startswith("Random-order verdicts under seed(s) 1 are another sample") for n in _agreement(root).notes)
    (one,) = ra.agreement(queries.runner(root), None, seed=1).error_rates
    assert (one.seed, one.decided, one.disagreements) == (1, 5, 1)
    # The CLI's reading (seed None): one estimate per seed, never a pooled one.
    per_seed = ra.agreement(queries.runner(root), None, seed=None).error_rates
    assert [(r.seed, r.decided, r.disagreements) for r in per_seed] == [(0, 4, 1), (1, 5, 1)]
    assert ra.error_frame(ra.agreement(queries.runner(root), None, seed=None))["seed"].tolist() == [0, 1]


def test_a_random_order_verdict_without_a_seed_is_in_no_sample(root):
    verdicts.append_verdicts(root, agreement_store.rows(_random_plan("NNAANNNANN"), queue="random", revise=False))
    result = _agreement(root)
    assert result.error_rates == []
    assert "10 random-order verdict(s) carry no seed, so they belong to no sample and are left out of the error rate." \
        in result.notes


def test_orphaned_verdicts_are_counted_and_left_out(root):
    verdicts.append_verdicts(root, [verdicts.verdict("k", "k:gone", 3, "anomaly", "ann", queue="random")])
    result = _agreement(root)
    assert result.error_rates == [] and result.release == []
    assert any(n.startswith("1 verdict(s) in the store are on steps it no longer holds") for n in result.notes)


# ----------------------------------------------------------------------------- CLI, export


def test_cli_json_prints_the_same_figures(reviewed):
    done = run_cli("--store", str(reviewed), "reviews", "agreement", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    first = printed["reviewer_pairs"][0]
    assert (first["first"], first["second"], first["shared"]) == ("ann", "bob", 11)
    assert first["kappa"]["value"] == pytest.approx(0.28 / 0.48)
    verifier = next(r for r in printed["review_vs_release"] if r["label_process"] == "verifier")
    assert verifier["confusion"]["normal"] == {"anomaly": 1, "normal": 4, "unsure": 1}
    assert printed["error_rate"] == [] and printed["confidence"] == 0.95
    text = run_cli("--store", str(reviewed), "reviews", "agreement")
    assert text.returncode == 0 and "0.583" in text.stdout and "note: No verdict in this slice" in text.stdout


def test_the_agreement_section_exports(reviewed):
    from auditatlas.export import export_view

    done = export_view(queries.runner(reviewed), reviewed, "/review?queue=random")
    assert "Agreement" in done.html and "Kappa is undefined for ann and cy" in done.html
    assert "0.583" in done.html and "verifier" in done.html


# ------------------------------------------------------------------- judges against the human


def test_judges_order_on_a_tiny_whowhen_like_store(tmp_path):
    root = agreement_store.build_whowhen_like(tmp_path / "store")
    queue = review_queue.queue(queries.runner(root), "judges", {})
    got = queue[["run_id", "step_idx", "label", "n_judges", "n_against", "other_pick", "other_votes",
                 "n_abstained"]].values.tolist()
    assert got == [["ww:1", 2, 1, 3, 3, 3, 2, 1], ["ww:2", 0, 1, 3, 2, 1, 1, 0]]
    assert queue["share"].tolist() == pytest.approx([1.0, 2 / 3])
    assert "judges" in review_queue.ORDERS


def test_judges_order_says_why_it_is_empty(built, tmp_path):
    sentence = review_queue.why_empty(queries.runner(built), "judges", {})
    assert sentence.startswith("The store holds no Who&When corpus (no run has a step labelled by a human decisive "
                               "step)")
    assert review_queue.queue(queries.runner(built), "judges", {}).empty
    assert review_queue.why_empty(queries.runner(built), "doubt", {}) == (
        "No step of this slice is in the label doubt order (its definition is above).")


@pytest.mark.skipif(not WHOWHEN.exists(), reason="needs the Who&When copy in ../shared/data/whowhen")
def test_judges_order_on_the_real_whowhen_agrees_with_the_judges_strip(app_store):
    """The app store's Who&When runs: each queued run's counts equal what the Explorer's judges'
    strip (figures.judges.verdicts over explorer_judges) says about that run."""
    from auditatlas.figures.judges import ABSTAINED, HIT, MISS, verdicts

    query = queries.runner(app_store)
    queue = review_queue.queue(query, "judges", {"corpus": ["whowhen"]})
    assert len(queue) > 10 and (2 * queue["n_against"] > queue["n_judges"]).all()
    for item in queue.head(3).itertuples():
        run = query("explorer_run", {"run": item.run_id}).iloc[0]
        judges = query("explorer_judges", {"run": item.run_id, "run_key": run["run_key"],
                                           "legacy_key": run["legacy_key"], "corpus": run["corpus"]})
        counts = verdicts(judges, item.step_idx)["verdict"].value_counts()
        assert (item.n_against, item.n_judges - item.n_against, item.n_abstained) == (
            counts.get(MISS, 0), counts.get(HIT, 0), counts.get(ABSTAINED, 0))
