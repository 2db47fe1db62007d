"""The rate grids drawn as coloured tables: the Overview's (``figures.rates.rate_grid``), each cell
its rate and the count it rests on, a dash where the count has no rate, blank where there is
nothing, its colour on the scale, and names from the data kept apart; and a backbone's
propagation map (``figures.propagation.heatmap_table``)."""
from __future__ import annotations

import pandas as pd

from auditatlas.figures import colors
from auditatlas.figures.propagation import heatmap_table
from auditatlas.figures.rates import rate_grid


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["backbone", "action", "pct", "n"])


def test_cells_read_rate_and_count_with_a_dash_or_blank_where_there_is_no_rate():
    text, styles = rate_grid(_frame([("A", "SP", 100.0, 76), ("A", "OC", 0.0, 1234), ("B", "SP", float("nan"), 5),
                                     ("B", "OC", float("nan"), 0)]),
                             "backbone", "action", "pct", "n", col_order=["SP", "OC"])
    assert list(text.columns) == ["backbone", "SP", "OC"]
    assert text.to_dict("records") == [{"backbone": "A", "SP": "100.0 · n=76", "OC": "0.0 · n=1,234"},
                                       {"backbone": "B", "SP": "–", "OC": ""}]
    # The scale's ends (RdYlGn: 26,152,80 at 100 %, 178,24,43 at 0 %), both dark enough for white text.
    assert styles.loc[0, "SP"] == "background-color: rgb(26, 152, 80); color: white"
    assert styles.loc[0, "OC"] == "background-color: rgb(178, 24, 43); color: white"
    assert styles.loc[1, "SP"] == styles.loc[1, "OC"] == styles.loc[0, "backbone"] == ""


def test_a_light_cell_keeps_dark_text_and_the_reds_scale_runs_white_to_dark_red():
    text, styles = rate_grid(_frame([("A", "SP", 50.0, 10), ("A", "OC", 0.0, 10), ("A", "OI", 100.0, 10)]),
                             "backbone", "action", "pct", "n", stops=colors.REDS)
    assert styles.loc[0, "OC"] == "background-color: rgb(255, 245, 240)"  # no white on white
    assert styles.loc[0, "OI"] == "background-color: rgb(103, 0, 13); color: white"
    # Between the stops at 0.35 (252,146,114) and 0.7 (222,45,38), 3/7 of the way along; its
    # brightness, 0.299 * 239 + 0.587 * 103 + 0.114 * 81 = 141, keeps dark text.
    assert styles.loc[0, "SP"] == "background-color: rgb(239, 103, 81)"


def test_a_column_named_like_the_row_column_stays_its_own():
    """Backbone and action names come from the data: one called 'backbone' neither overwrites the
    row names nor is lost."""
    text, _ = rate_grid(_frame([("A", "backbone", 10.0, 3), ("A", "SP", 20.0, 4)]), "backbone", "action", "pct", "n",
                        col_order=["backbone", "SP"])
    assert list(text.columns) == ["backbone", "backbone (2)", "SP"]
    assert text.iloc[0].tolist() == ["A", "10.0 · n=3", "20.0 · n=4"]


def test_a_missing_name_reads_none_as_the_queries_name_it():
    text, _ = rate_grid(_frame([("A", "SP", 50.0, 3), (None, "SP", 60.0, 4), ("A", None, 70.0, 5)]),
                        "backbone", "action", "pct", "n")
    assert sorted(text["backbone"]) == ["(none)", "A"] and sorted(text.columns[1:]) == ["(none)", "SP"]
    assert text.set_index("backbone").loc["(none)", "SP"] == "60.0 · n=4"
    assert text.set_index("backbone").loc["A", "(none)"] == "70.0 · n=5"


def _cells(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["backbone", "src_action", "later_action", "failed", "followed", "possible"])
    return frame.assign(rate=(frame["followed"] / frame["failed"].where(frame["failed"] > 0)).astype(float))


def test_a_propagation_map_reads_as_its_heatmap_by_hand():
    # SOLVE_CLUE failed 20 times on A (17 followed by a failed APPLY_DELTA); APPLY_DELTA 4 times
    # (too few: pale); a pair that never occurs is grey; backbone B's rows stay out of A's map.
    cells = _cells([("A", "SOLVE_CLUE", "SOLVE_CLUE", 20, 0, True), ("A", "SOLVE_CLUE", "APPLY_DELTA", 20, 17, True),
                    ("A", "APPLY_DELTA", "SOLVE_CLUE", 4, 4, False), ("A", "APPLY_DELTA", "APPLY_DELTA", 4, 1, True),
                    ("B", "SOLVE_CLUE", "APPLY_DELTA", 0, 0, True)])
    table = heatmap_table(cells, "A")
    assert list(table.text.columns) == ["failed source action", "n", "SC", "AD"]
    assert table.text.to_dict("records") == [
        {"failed source action": "SC · SOLVE_CLUE", "n": "20", "SC": "0.0%", "AD": "85.0%"},
        {"failed source action": "AD · APPLY_DELTA", "n": "4", "SC": "", "AD": "25.0%"}]
    assert table.rows == ["SOLVE_CLUE", "APPLY_DELTA"] and table.columns == {"SC": "SOLVE_CLUE", "AD": "APPLY_DELTA"}
    # OrRd's ends: cream at 0 %; 85 % is 0.4 of the way from (215,48,31) to (127,0,0).
    assert table.styles.loc[0, "SC"] == "background-color: rgb(255, 247, 236)"
    assert table.styles.loc[0, "AD"] == "background-color: rgb(180, 29, 19); color: white"
    assert table.styles.loc[1, "SC"] == "background-color: rgb(212, 212, 212)"  # never occurs
    # 25 % on 4 failed steps, seen through the veil: (253,212,158) at 0.25, 62 % white over it.
    assert table.styles.loc[1, "AD"] == "background-color: rgb(254, 239, 218)"
    assert table.numbers.iloc[0].tolist()[1:] == [20, 0.0, 85.0] and pd.isna(table.numbers.loc[1, "SC"])
    # On B the source never failed: a dash, no colour.
    b = heatmap_table(cells, "B")
    assert b.text.loc[0, "AD"] == "–" and b.styles.loc[0, "AD"] == ""
