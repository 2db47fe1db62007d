"""The rate grids the Overview draws as coloured tables (``figures.rates.rate_grid``): each cell
its rate and the count it rests on, a dash where the count has no rate, blank where there is
nothing, its colour on the scale, and names from the data kept apart."""
from __future__ import annotations

import pandas as pd

from auditatlas.figures import colors
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
