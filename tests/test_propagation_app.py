"""AppTest of the Propagation page on real stores: every tab renders, a link opens a heatmap
cell's chains, a slice without chains says so, and recall by role shows a prediction set."""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_support import open_page, page_texts

PAGE = "pages/propagation.py"


_texts = page_texts



def _open(store, monkeypatch, **params) -> AppTest:
    return open_page(store, monkeypatch, PAGE, timeout=180, **params)


@pytest.fixture(scope="module")
def roles_store(tmp_path_factory):
    """150 simulated rooms plus two step-level prediction sets (one method, two seeds) whose
    scores track the labels with noise, written like any released set."""
    import queries
    from auditatlas.ingest.demo import build_demo
    from auditatlas.store import write_source

    root = tmp_path_factory.mktemp("propagation-roles")
    build_demo(root, rooms=150, seed=5)
    steps = queries.connect(root).execute("SELECT run_id, step_idx, coalesce(label, 0) AS label FROM steps").df()
    sets, preds = [], []
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        score = steps["label"].to_numpy() + rng.normal(0, 0.6, len(steps))
        set_id = f"maadbench-sim:noisy:{seed}"
        sets.append({"set_id": set_id, "corpus": "maadbench-sim", "method": "noisy", "granularity": "step", "seed": seed})
        preds += [{"set_id": set_id, "corpus": "maadbench-sim", "run_id": r, "step_idx": int(i), "score": float(s),
                   "pred_label": int(s > 0.5), "split": "test"}
                  for r, i, s in zip(steps["run_id"], steps["step_idx"], score)]
    write_source(root, "predictions-noisy", {"prediction_sets": sets, "predictions": preds})
    return root


def test_heatmap_tab_renders(app_store, monkeypatch):
    at = _open(app_store, monkeypatch)
    text = _texts(at)
    assert "Propagation heatmap per backbone" in text
    assert "Silent vs loud (MAADBench Table 4)" not in text  # its own tab: one chart on the first open
    assert "Click a heatmap cell" in text
    assert "Simulated data" in text
    if "whowhen" in text:  # ../shared/data present: Who&When is named, not drawn
        assert "single decisive step per run cannot form a chain" in text


def _maps(at) -> list[str]:
    """The backbones whose maps are drawn: every one's subplot title in the heatmap figure as sent,
    or the one named in the caption of the map's coloured table."""
    import json

    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    heatmap = [c for c in charts if any(t.get("type") == "scatter" and t.get("customdata") for t in c["data"])]
    tables = [df for df in at.dataframe if "failed source action" in df.value.columns]
    assert len(heatmap) + len(tables) == 1, (len(heatmap), len(tables))  # the figure or the table, never both
    if heatmap:
        return [a["text"] for a in heatmap[0]["layout"]["annotations"]]
    said = [c.value.replace("\\", "") for c in at.caption if "the share of each row's failed steps" in c.value]
    return [said[0].split("**")[1]]


def test_one_backbones_heatmap_by_default_every_one_on_demand(app_store, monkeypatch):
    at = _open(app_store, monkeypatch)
    options = at.selectbox(key="map_backbone").options
    assert len(options) > 1 and options == sorted(options)
    assert at.selectbox(key="map_backbone").value == options[0]
    assert _maps(at) == [options[0]] and not at.get("plotly_chart")  # one backbone's map: its table, no chart
    # A link's own words (1) and Streamlit's toggle's (true) both draw every backbone.
    for spelled in ("1", "true"):
        at = _open(app_store, monkeypatch, side_by_side=spelled)
        assert at.toggle(key="side_by_side").value is True
        assert at.selectbox(key="map_backbone").disabled
        assert _maps(at) == options


def test_a_link_chooses_the_map_or_follows_its_cell(app_store, monkeypatch):
    at = _open(app_store, monkeypatch, map_backbone="GPT-5.4")
    assert _maps(at) == ["GPT-5.4"]
    at = _open(app_store, monkeypatch, cell_backbone="GPT-4.1", src_action="SOLVE_CLUE", later_action="APPLY_DELTA")
    assert at.selectbox(key="map_backbone").value == "GPT-4.1" and _maps(at) == ["GPT-4.1"]
    # The cell the link opens reads in the table as the sentence above its chains says.
    sentence = next(m.value for m in at.markdown if "are followed by a failed APPLY" in m.value)
    share = sentence.split("(")[1].split("%")[0]  # '... steps (84.6%) are followed ...'
    table = next(df.value for df in at.dataframe if "failed source action" in df.value.columns)
    row = table[table["failed source action"] == "SC · SOLVE_CLUE"].iloc[0]
    assert row["AD"] == f"{share}%"
    at = _open(app_store, monkeypatch, map_backbone="No such backbone")
    assert any("backbone 'No such backbone'" in w.value.replace("\\", "") for w in at.warning)


def test_a_link_opens_the_chains_behind_a_cell(app_store, monkeypatch):
    at = _open(app_store, monkeypatch, cell_backbone="GPT-4.1", src_action="SOLVE_CLUE", later_action="APPLY_DELTA")
    assert at.selectbox(key="cell_backbone").value == "GPT-4.1"
    assert at.selectbox(key="src_action").value == "SOLVE_CLUE"
    text = _texts(at)
    assert "failed SOLVE\\_CLUE steps" in text and "are followed by a failed APPLY\\_DELTA step" in text
    chains = next(df.value for df in at.dataframe if "source_step" in df.value.columns)
    assert len(chains) > 0
    assert chains["explorer"].str.match(r"^/explorer\?run=maadbench-sim%3A.+&step=\d+$").all()
    assert (chains["backbone"] == "GPT-4.1").all()


def test_chains_tab(app_store, monkeypatch):
    at = _open(app_store, monkeypatch, tab="Chains", origin="SOLVE_CLUE")
    text = _texts(at)
    assert "Chain lengths per backbone" in text and "Chain browser" in text
    chains = next(df.value for df in at.dataframe if "origin_action" in df.value.columns)
    assert (chains["origin_action"] == "SOLVE_CLUE").all() and len(chains) == 50  # one page


def test_failure_modes_tab(app_store, monkeypatch):
    at = _open(app_store, monkeypatch, tab="Failure modes")
    assert "MAST failure modes per backbone" in _texts(at)
    modes = next(df.value for df in at.dataframe if "failure_mode" in df.value.columns)
    assert "FM-5" in set(modes["failure_mode"])


def test_a_slice_without_chains_says_so(app_store, monkeypatch):
    from conftest import WHOWHEN

    if not WHOWHEN.exists():
        pytest.skip("needs ../shared/data/whowhen (a corpus with one decisive step per run)")
    at = _open(app_store, monkeypatch, corpus="whowhen")
    text = _texts(at)
    assert "There are no propagation chains in this slice" in text
    assert "Propagation heatmap per backbone" not in text
    assert "The Silent vs loud and Failure modes tabs still apply." in text
    # Still meaningful without chains: run-level scopes.
    text = _texts(_open(app_store, monkeypatch, corpus="whowhen", tab="Silent vs loud"))
    assert "Silent vs loud (MAADBench Table 4)" in text and "There are no propagation chains" not in text


def test_silent_vs_loud_tab_counts_what_the_store_holds(app_store, monkeypatch):
    import queries

    at = _open(app_store, monkeypatch, tab="Silent vs loud", corpus="maadbench-sim")
    text = _texts(at)
    assert "Silent vs loud (MAADBench Table 4)" in text and "Propagation heatmap per backbone" not in text
    shown = next(f.value for f in at.dataframe if "format_silent_pct" in f.value.columns)
    # By hand: failed steps that are not formatting errors, per backbone, counted in SQL here.
    con = queries.connect(app_store)
    try:
        expected = dict(con.execute(
            "SELECT r.backbone, count(*) FROM steps s JOIN runs r USING (run_id) WHERE r.corpus = 'maadbench-sim' "
            "AND s.label = 1 AND NOT coalesce(s.is_format_error, false) GROUP BY 1").fetchall())
    finally:
        con.close()
    assert dict(zip(shown["backbone"], shown["action_failures"])) == expected


def test_roles_tab_without_prediction_sets(app_store, monkeypatch):
    at = _open(app_store, monkeypatch, tab="Recall by role", corpus="maadbench-sim")
    text = _texts(at)
    assert "Recall by chain role" in text
    if "No step-level prediction set" not in text:  # a store that carries simulated detectors
        assert any("origin_recall" in df.value.columns for df in at.dataframe)


def test_roles_tab_with_prediction_sets(roles_store, monkeypatch):
    at = _open(roles_store, monkeypatch, tab="Recall by role")
    averages = next(df.value for df in at.dataframe if "isolation_recall" in df.value.columns
                    and "detectors" in df.value.columns)
    assert list(averages["role"]) == ["Origin", "Mid", "Down"]
    assert (averages["detectors"] == 1).all()
    per_set = next(df.value for df in at.dataframe if "origin_recall" in df.value.columns)
    assert set(per_set["set_id"]) == {"maadbench-sim:noisy:0", "maadbench-sim:noisy:1"}


def test_roles_tab_top_pct_from_a_link(roles_store, monkeypatch):
    at = _open(roles_store, monkeypatch, tab="Recall by role", rule="top_pct", top_pct="5")
    assert at.number_input(key="top_pct").value == 5
    assert "top 5% of the set's scored steps" in _texts(at)
    per_set = next(df.value for df in at.dataframe if "origin_recall" in df.value.columns)
    flagged_share = per_set["flagged_steps"] / per_set["scored_steps"]
    assert (flagged_share >= 0.05).all() and (flagged_share < 0.06).all()
