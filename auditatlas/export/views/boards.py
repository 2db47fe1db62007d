"""The Boards page's open tab as a file: every board of the pillar, its lines, notes, coverage,
contrasts and published vs recomputed cells, and the LIVE chart (pages/boards.py, board_view)."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd

from ...analyses.board_kept import board as kept_board
from ...analyses.board_published import missing_blocks
from ...analyses.board_registry import registry
from ...analyses.board_seeds import SD_WORDS, coverage_line
from ...analyses.labels_in_use import board_note
from ...errors import AtlasError
from ...figures.boards import (
    STATUS_COLOR,
    contrasts_frame,
    extra_frame,
    fmt,
    interval_caption,
    live_figure,
    published_frame,
    shown_rows,
)
from ...view_state.state_fields import filters_any
from ...views import not_held
from ...views.app_link import Link, Query
from ...views.pages import board_corpus_key
from ..document import Document

STATE = {"PRE": "before a run: the declared configuration", "LIVE": "on a growing prefix of the trace",
         "POST": "after a run: the finished trace"}


def build(doc: Document, query: Query, link: Link, root: Path) -> None:
    doc.text("Every number is regenerated from predictions in the store. Entrants are ordered only where a paired "
             "test (Holm-adjusted within its declared family) separates them from the floor or baseline; the rest "
             "share an unresolved band.", "note")
    pillar, per_seed = link.values["tab"], link.values["per_seed"]
    doc.heading(f"{pillar} boards")
    doc.text(f"{pillar}: {STATE.get(pillar, '')}.", "note")
    for name, board in registry().items():
        if board.task.pillar != pillar:
            continue
        title = board.title.removeprefix(board.task.pillar).strip()
        doc.heading(title[:1].upper() + title[1:] if title else name, 3)
        section(doc, query, link, name, per_seed, root)
    missing = missing_blocks(query)
    if missing:
        doc.heading("Published blocks this store cannot recompute")
        doc.table(pd.DataFrame(missing), "missing-blocks", caption="Blocks of the CatchBench golden board whose corpus "
                  "is not loaded (or not the same population).")


def section(doc: Document, query: Query, link: Link, name: str, per_seed: bool, root: Path) -> None:
    board = registry()[name]
    if not board.allows_slice:
        doc.text(f"The sidebar slice filters runs; this board scores {board.item_kind}, so it does not apply here.", "note")
    elif filters_any(link.slice):
        doc.text("Scored on the sidebar slice only.", "note")
    if board_note(link.slice, board.task.granularity):
        doc.text(board_note(link.slice, board.task.granularity), "note")
    corpora = board.corpora(query)
    if not corpora:
        doc.text(f"The store holds no corpus the {name} board can score. Load one with `auditatlas ingest`.", "info")
        return
    asked = link.values.get(board_corpus_key(name))
    corpus = asked if asked in corpora else corpora[0]
    if asked and asked != corpus:
        doc.warning(not_held(f"the {name} board's corpus", asked, f"showing '{corpus}' instead"))
    from queries.kept import remember

    try:
        # The page's own board: its default view read from what the store keeps per version.
        result, cells = kept_board(name, query, corpus, link.slice, partial(remember, root))
    except AtlasError as exc:
        doc.warning(str(exc))
        return
    draw(doc, result, cells, f"{name}-{corpus}", per_seed)
    if board.task.pillar == "LIVE":
        doc.figure(live_figure(result))


def draw(doc: Document, result, cells, key: str, per_seed: bool) -> None:
    doc.text(f"{result.title} on {result.corpus}: rests on {result.n_items:,} {result.item_kind}. Floor: {result.floor}.")
    floor = next((r for r in result.rows if r.entrant == result.floor), None)
    if floor:
        doc.text("Floor " + ", ".join(f"{m} {fmt(floor.metrics.get(m))}" for m in result.metrics), "note")
    frame, download = shown_rows(result, per_seed)
    if any(r.seed_group for r in result.rows) and not per_seed:
        doc.text(f"A re-scored detector's seeds are one entrant: mean ± {SD_WORDS}, and their min–max; its contrasts "
                 "say in how many seeds the seed's own contrast separates (4/5). Released prediction sets keep their "
                 "own rows. Export with per_seed=1 for the seeds' rows.", "note")
    doc.table(frame, f"{key}-rows", download=download)
    caption = interval_caption(result, grouped=any(r.seed_group for r in result.rows) and not per_seed)
    if caption:
        doc.text(caption, "note")
    for note in result.notes:
        doc.text(note, "note")
    if result.coverage:
        doc.text(coverage_line(result.coverage, result.item_kind), "note")
        doc.table(pd.DataFrame([{"prediction set": c.entrant, "scores": c.scored, "of": c.of,
                                 "origin": "re-scored" if c.rescored else "released"} for c in result.coverage]),
                  f"{key}-coverage", caption=f"Which prediction sets, and how many {result.item_kind} each scores")
    for name, rows in result.extra_tables.items():
        if name in result.extra_captions:
            doc.text(result.extra_captions[name], "note")
        shown, download = extra_frame(rows)
        doc.table(shown, f"{key}-{name}", caption=name.replace("_", " "), download=download)
    if result.contrasts:
        doc.table(contrasts_frame(result), f"{key}-contrasts",
                  caption=f"Paired contrasts ({len(result.contrasts)}, Holm-adjusted within each family)")
    if cells:
        published(doc, cells, key)


def published(doc: Document, cells, key: str) -> None:
    """Published beside recomputed, differences first, coloured as on the page."""
    pub = published_frame(cells)
    n_ok = int((pub["status"] == "match").sum())
    n_cmp = int(pub["status"].isin(["match", "differs"]).sum())
    absent = sorted(pub.loc[~pub["status"].isin(["match", "differs"]), "entrant"].unique())
    doc.text(f"Published vs recomputed: {n_ok} of {n_cmp} recomputable cells within 0.0005 (green)."
             + (f" Not recomputable here (no predictions of theirs in the store): {', '.join(absent)}." if absent else ""))
    shown = pub.copy()
    for col, spec in (("published", "{:.3f}"), ("recomputed", "{:.3f}"), ("delta", "{:+.4f}")):
        shown[col] = [("—" if v is None or v != v else spec.format(v)) for v in pub[col]]
    styles = pd.DataFrame([[f"background-color: {STATUS_COLOR.get(s, '#eeeeee')}"] * len(pub.columns)
                           for s in pub["status"]], columns=pub.columns)
    doc.table(shown.reset_index(drop=True), f"{key}-published", download=pub, styles=styles)
