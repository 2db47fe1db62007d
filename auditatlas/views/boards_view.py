"""The Boards page's content: per pillar, every board's notes, lines, coverage, contrasts,
published vs recomputed cells and the LIVE chart.

The app draws a tab per pillar and a corpus picker inside each board, so the view comes in
sections (``intro``, ``pillar_note``, ``board_heading``, ``board_preamble``, ``board_body``,
``missing``); ``page`` calls them in the page's order with the link's values, for the export.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..analyses.board_kept import Remember
from ..analyses.board_published import missing_blocks
from ..analyses.board_registry import PILLARS, registry, slice_lacks
from ..analyses.board_seeds import SD_WORDS, coverage_line, leader_name, top_group_names
from ..analyses.board_types import top_group
from ..analyses.labels_in_use import board_note
from ..errors import AtlasError
from ..figures.boards import (
    STATUS_COLOR,
    contrasts_frame,
    extra_frame,
    fmt,
    interval_caption,
    live_figure,
    published_frame,
    shown_rows,
)
from ..view_state.state_fields import filters_any, not_held
from . import blocks as b
from .pages import board_corpus_key

Query = Callable[..., pd.DataFrame]
# (board name, corpus, slice) -> (result, published cells): the app's is cached, the export's
# reads the default view kept per store version.
BoardFn = Callable[[str, str, Mapping[str, Any]], tuple[Any, Any]]

STATE = {"PRE": "before a run: the declared configuration", "LIVE": "on a growing prefix of the trace",
         "POST": "after a run: the finished trace"}


def intro() -> list[b.Block]:
    """How to read a board, folded away: each board leads with its answer (its top group)."""
    return [b.Fold("How the boards are read", (
        b.note("Every number is regenerated from predictions in the store. Entrants are ordered only where a "
               "paired test (Holm-adjusted within its declared family) separates them from the floor or "
               "baseline; the rest share an unresolved band."),
        b.note("Each board's top group is its leader (the best value of its primary metric) and every entrant no "
               "Holm-adjusted paired contrast against the leader separates: no other entrant beats them "
               "significantly. The published values stand beside the recomputed ones they check."),
    ))]


def tabs() -> list[tuple[str, list[str]]]:
    """One tab per pillar, its boards in registry order (a board added to the registry shows up)."""
    boards = registry()
    found = [(pillar, [x.name for x in boards.values() if x.task.pillar == pillar]) for pillar in PILLARS]
    return [(pillar, names) for pillar, names in found if names]


def pillar_note(pillar: str) -> list[b.Block]:
    return [b.note("{}: {}.", pillar, STATE.get(pillar, ""))]


def board_heading(name: str) -> b.Heading:
    """The board's title without its pillar (the tab says it): "LIVE streaming" -> "Streaming"."""
    board = registry()[name]
    title = board.title.removeprefix(board.task.pillar).strip()
    return b.Heading(b.Text.plain(title[:1].upper() + title[1:] if title else board.name), 3)


def board_preamble(name: str, slice_: Mapping[str, Any], corpora: list[str]) -> tuple[list[b.Block], bool]:
    """What the slice and the label choice do to the board, and whether it can be drawn at all
    (False: the last block says why not)."""
    board = registry()[name]
    out: list[b.Block] = []
    if not board.allows_slice:
        out.append(b.note("The sidebar slice filters runs; this board scores {}, so it does not apply here.",
                          board.item_kind))
    elif filters_any(slice_):
        out.append(b.note("Scored on the sidebar slice only."))
    label_note = board_note(slice_, board.task.granularity)
    if label_note:
        out.append(b.Text.plain(label_note, "note"))
    lacks = slice_lacks(board, dict(slice_), corpora)
    if lacks:
        return [*out, b.Text.plain(lacks, "info")], False
    if not corpora:
        return [*out, b.info("The store holds no corpus the **{}** board can score. Load one with "
                             "`auditatlas ingest`.", name)], False
    return out, True


def board_body(name: str, corpus: str, slice_: Mapping[str, Any], board_fn: BoardFn,
               per_seed: bool, curves: bool = False) -> list[b.Block]:
    """The board scored on ``corpus``: its lines, notes, tables and, on LIVE with ``curves``, its
    chart (on request: the table holds the same numbers, and a page's first Plotly chart costs
    its open in the browser more than the rest of the tab; bench/README.md)."""
    try:
        result, cells = board_fn(name, corpus, slice_)
    except AtlasError as exc:
        return [b.Text.plain(str(exc), "warning")]
    out = result_blocks(result, cells, f"{name}-{corpus}", per_seed)
    if registry()[name].task.pillar == "LIVE":
        # ROC-AUC trajectories over prefixes, with the 0.70 early-warning bar.
        out.append(b.Figure(live_figure(result), key=f"live-{result.corpus}") if curves else
                   b.hint("Turn on *ROC-AUC curves by prefix* above to draw each entrant's curve against the 0.70 "
                          "early-warning bar."))
    return out


def _row_columns(result) -> tuple[b.Column, ...]:
    """Widths that keep a board line on the page: names and contrasts wide, counts narrow."""
    labels = result.family_labels
    title = "contrasts: " + " · ".join(labels.values()) if labels else "contrasts"
    names = "; ".join(f"{short}: {name}" for name, short in labels.items())
    return (b.Column("entrant", pinned=True),  # as wide as its longest name (components.tables.key_width)
            b.Column("contrasts", title, help=f"Holm-adjusted paired contrasts, one verdict per family ({names}); "
                                              "a seed group counts its seeds that separate"),
            b.Column("seeds", width="small"), b.Column("items", width="small"))


def result_blocks(result, cells, key: str, per_seed: bool = False) -> list[b.Block]:
    """One recomputed board: who wins (the top group), items, floor and the bands' reference, rows
    in bands with the published values beside the ones they check, contrasts, published vs
    recomputed."""
    out: list[b.Block] = top_group_blocks(result, per_seed)
    out.append(b.say("**{}** on {}: rests on **{:,} {}**.", result.title, result.corpus, result.n_items,
                     result.item_kind))
    out.append(reference_line(result))
    frame, download = shown_rows(result, per_seed, cells)
    grouped = any(r.seed_group for r in result.rows) and not per_seed
    if grouped:
        out.append(b.note("A re-scored detector's seeds are one entrant: mean ± {}, and their min–max; its contrasts "
                          "say in how many seeds the seed's own contrast separates (4/5). Released prediction sets "
                          "keep their own rows. Turn on *Every seed on its own row* (`per_seed=1` in a link) for the "
                          "seeds' rows.", SD_WORDS))
    out.append(b.Table(frame, f"{key}-rows", download=download, columns=_row_columns(result)))
    caption = interval_caption(result, grouped=grouped)
    if caption:
        out.append(b.Text.plain(caption, "note"))
    out += [b.Text.plain(n, "note") for n in result.notes]
    if result.coverage:
        # Entrants scoring only part of the items: one line, the list on demand.
        out.append(b.Text.plain(coverage_line(result.coverage, result.item_kind), "note"))
        out.append(b.Fold(b.Text("Which prediction sets, and how many {} each scores ({})",
                                 (result.item_kind, len(result.coverage))), (
            b.Table(pd.DataFrame([{"prediction set": c.entrant, "scores": c.scored, "of": c.of,
                                   "origin": "re-scored" if c.rescored else "released"} for c in result.coverage]),
                    f"{key}-coverage"),)))
    for name, rows in result.extra_tables.items():
        out.append(b.say("*{}*", name.replace("_", " ")))
        shown, extra_download = extra_frame(rows)
        caption = result.extra_captions.get(name)
        out.append(b.Table(shown, f"{key}-{name}", caption=b.Text.plain(caption) if caption else None,
                           download=extra_download))
    if result.contrasts:
        out.append(b.Fold(f"Paired contrasts ({len(result.contrasts)}, Holm-adjusted within each family)",
                          (b.Table(contrasts_frame(result), f"{key}-contrasts"),)))
    if cells:
        out += published(cells, key)
    return out


def top_group_blocks(result, per_seed: bool = False) -> list[b.Block]:
    """The board's answer first: its top group, the entrants no other beats significantly."""
    group = top_group(result)
    if group is None:
        return []
    names = top_group_names(result, group=not per_seed)
    leader = next((r for r in result.rows if r.entrant == group.leader), None)
    value = fmt(leader.metrics.get(group.metric)) if leader else "—"
    shown = names if len(names) <= TOP_SHOWN else [*names[:TOP_SHOWN], f"and {len(names) - TOP_SHOWN} more"]
    out = [b.say("**Top group** on {} ({} line(s); marked in the table's *top group* column): {}.", group.metric,
                 len(names), "; ".join(shown)),
           b.note("The leader, {} ({} {}), and every entrant no Holm-adjusted paired contrast against it separates "
                  "({}): no other entrant beats them significantly.", leader_name(result, group=not per_seed),
                  group.metric, value, group.test)]
    if group.untested:
        out.append(b.note("Not compared with the leader (no runs or items in common with it, or one outcome only): {}.",
                          ", ".join(group.untested)))
    return out


TOP_SHOWN = 6  # top-group lines named in its sentence; the table marks every one


def reference_line(result) -> b.Block:
    """The floor, and the row the bands are read against, said once."""
    against = next((c.b_name for c in result.contrasts if c.family == result.primary_contrast_family), None)
    floor = next((r for r in result.rows if r.entrant == result.floor), None)
    values = ", ".join(f"{m} {fmt(floor.metrics.get(m))}" for m in result.metrics) if floor else ""
    if against and against != result.floor:
        return b.say("Floor: **{}** ({}). Bands are read against the baseline **{}** ({}).", result.floor, values,
                     against, result.primary_contrast_family)
    return b.say("Floor: **{}** ({}); bands are read against it ({}).", result.floor, values,
                 result.primary_contrast_family or "no contrast")


def published(cells, key: str) -> list[b.Block]:
    """Published beside recomputed, differences first, coloured by status."""
    pub = published_frame(cells)
    n_ok = int((pub["status"] == "match").sum())
    n_cmp = int(pub["status"].isin(["match", "differs"]).sum())
    absent = sorted(pub.loc[~pub["status"].isin(["match", "differs"]), "entrant"].unique())
    line = b.say("**Published vs recomputed:** {} of {} recomputable cells within 0.0005 (green).", n_ok, n_cmp)
    if absent:
        line = b.say(line.words + " Not recomputable here (no predictions of theirs in the store): {}.",
                     *line.values, ", ".join(absent))
    shown = pub.copy()
    for col, spec in (("published", "{:.3f}"), ("recomputed", "{:.3f}"), ("delta", "{:+.4f}")):
        shown[col] = [("—" if v is None or v != v else spec.format(v)) for v in pub[col]]
    styles = pd.DataFrame([[f"background-color: {STATUS_COLOR.get(s, '#eeeeee')}"] * len(pub.columns)
                           for s in pub["status"]], columns=pub.columns)
    return [line, b.Table(shown.reset_index(drop=True), f"{key}-published", download=pub, styles=styles)]


def missing(query: Query) -> list[b.Block]:
    """Published blocks the store cannot recompute."""
    blocks = missing_blocks(query)
    if not blocks:
        return []
    return [b.Heading("Published blocks this store cannot recompute"),
            b.Table(pd.DataFrame(blocks), "missing-blocks", caption="Blocks of the CatchBench golden board whose "
                    "corpus is not loaded (or not the same population).")]


def page(query: Query, link, root: Path, remember: Remember | None = None) -> list[b.Block]:
    """The page's open tab (the link's), every board on the link's corpus or the first it applies
    to, each scored as the store keeps its default view (``remember``: the store's keeper of
    results per version, handed in by the caller; without it each board is computed)."""
    from ..analyses.board_kept import board as kept_board

    def board_fn(name: str, corpus: str, slice_: Mapping[str, Any]):
        return kept_board(name, query, corpus, dict(slice_), remember)

    pillar, per_seed, curves = link.values["tab"], link.values["per_seed"], link.values["curves"]
    out = [*intro(), b.Heading(f"{pillar} boards"), *pillar_note(pillar)]
    for name in dict(tabs()).get(pillar, []):
        out.append(board_heading(name))
        corpora = registry()[name].corpora(query)
        preamble, drawable = board_preamble(name, link.slice, corpora)
        out += preamble
        if not drawable:
            continue
        asked = link.values.get(board_corpus_key(name))
        corpus = asked if asked in corpora else corpora[0]
        if asked and asked != corpus:
            out.append(b.Text.plain(not_held(f"the {name} board's corpus", asked, f"showing '{corpus}' instead"),
                                    "warning"))
        out += board_body(name, corpus, link.slice, board_fn, per_seed, curves)
    return out + missing(query)
