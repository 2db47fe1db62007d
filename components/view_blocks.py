"""A page's view blocks (``auditatlas.views.blocks``) drawn with Streamlit.

The view functions compute; this module only draws. Our words go to Markdown as written (their
``**bold**``, ``*emphasis*`` and ```code``` are ours); every value in them, every heading,
caption and label read from the store goes through ``components.safe.md``, and cells are
shown by ``st.dataframe`` (never HTML), so untrusted text stays text.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from auditatlas.views import blocks as b
from components import run_columns, trace_graph
from components.safe import md
from components.tables import csv_button, pinned_keys, table

_DRAW_TEXT = {"": st.markdown, "note": st.caption, "info": st.info, "warning": st.warning, "error": st.error,
              "success": st.success, "simulated": st.info, "hint": st.caption, "sentence": lambda text: st.markdown("#### " + text)}


def markdown(words: b.Words) -> str:
    """``words`` as Markdown: our words as written, each value escaped."""
    return b.as_text(words).format(md)


def draw(blocks: b.Blocks, on_select: Mapping[str, Callable[[], None]] | None = None) -> None:
    """Draw ``blocks`` in order; ``on_select``: a figure's key or a coloured table's name -> what
    a click on one of its points or cells does (the page's callback; the export's figures and
    tables are not clickable)."""
    for block in blocks:
        draw_one(block, on_select or {})


def draw_one(block: b.Block, on_select: Mapping[str, Callable[[], None]] | None = None) -> None:
    if isinstance(block, b.Heading):
        (st.title if block.level <= 1 else st.subheader)(markdown(block.text))
    elif isinstance(block, b.Text):
        _DRAW_TEXT[block.kind](markdown(block))
    elif isinstance(block, b.Table):
        _table(block, (on_select or {}).get(block.name))
    elif isinstance(block, b.Metrics):
        for column, metric in zip(st.columns(len(block.items)), block.items):
            column.metric(markdown(metric.label), metric.value, help=metric.help)
    elif isinstance(block, b.Figure):
        where = st.columns([3, 2])[0] if block.narrow else st
        clicked = (on_select or {}).get(block.key)
        if clicked is None:
            where.plotly_chart(block.figure, key=block.key or None)
        else:
            where.plotly_chart(block.figure, key=block.key, on_select=clicked, selection_mode="points",
                               config={"displayModeBar": False})
    elif isinstance(block, b.Graph):
        trace_graph.draw(block.page)
    elif isinstance(block, b.Pre):
        if block.label:
            st.caption(markdown(block.label))
        st.code(block.body, language=block.language, wrap_lines=True)
    elif isinstance(block, b.Facts):
        st.markdown("  \n".join(f"**{md(k)}**: {md(v)}" for k, v in block.pairs))
    elif isinstance(block, b.Jumps):
        pass  # links within an exported file; the app's pages have their own navigation
    elif isinstance(block, b.Link):
        st.link_button(markdown(block.text), block.url, help=block.help)
    elif isinstance(block, b.Fold):
        with st.expander(markdown(block.label), expanded=block.open):
            draw(block.blocks)
    elif isinstance(block, b.Badge):
        badge(block)
    elif isinstance(block, b.Row):
        for column, blocks in zip(st.columns(list(block.widths), **({"gap": block.gap} if block.gap else {})),
                                  block.columns):
            with column:
                draw(blocks)
    else:
        raise TypeError(f"not a view block: {block!r}")


def badge(block: b.Badge) -> None:
    """The page's badge, one row at its top (keyed, so a test finds it on every page)."""
    with st.container(key="page-badge", horizontal=True, gap="small"):
        if block.simulated:
            st.badge(md(block.simulated_text), color="orange", help=b.SIMULATED_HELP)
        st.badge(md(block.labels), color="blue",
                 help="The labels the numbers read: released, reviewed (the latest verdicts) or agreed; the sidebar's "
                      "Labels choice changes them.")


def _column(column: b.Column) -> Any:
    config = st.column_config
    common = {"label": column.label or column.name, "help": column.help, "width": column.width,
              "pinned": column.pinned or None}
    common = {k: v for k, v in common.items() if v is not None}
    if column.link_text is not None:
        return config.LinkColumn(display_text=column.link_text, **common)
    if column.number or column.format:
        return config.NumberColumn(**common, **({"format": column.format} if column.format else {}))
    return config.TextColumn(**common)


def selected_cell(name: str) -> tuple[int, str] | None:
    """(row position, column title) of the cell chosen in the coloured table ``name``, if any."""
    state = st.session_state.get(f"table-{name}")
    cells = (state.get("selection") or {}).get("cells") if hasattr(state, "get") else None
    if not cells:
        return None
    row, column = cells[0]
    return int(row), str(column)


def _table(block: b.Table, clicked: Callable[[], None] | None = None) -> None:
    kwargs: dict[str, Any] = {}
    config: dict[str, Any] = {}
    if "run" in block.frame.columns and "run_id" in block.frame.columns:  # run labels beside the full ids
        config.update(run_columns.columns([str(v) for v in block.frame["run"]]))
    config.update({c.name: _column(c) for c in block.columns})
    if config:
        kwargs["column_config"] = config
    if block.height is not None:
        kwargs["height"] = block.height
    if block.placeholder is not None:
        kwargs["placeholder"] = block.placeholder
    caption = markdown(block.caption) if block.caption else None
    if block.styles is None:
        table(block.frame, block.name, caption=caption, download=block.download, **kwargs)
        return
    # Our colours per cell: the shown frame styled, its CSV beside it as every table has.
    frame = block.frame.reset_index(drop=True)
    styles = block.styles.reset_index(drop=True).set_axis(frame.columns, axis=1)
    if caption:
        st.caption(caption)
    kwargs["column_config"] = pinned_keys(frame, kwargs.get("column_config"))
    if clicked is not None:  # a grid read as a heatmap: a click on a cell opens it, as a heatmap's would
        kwargs.update(on_select=clicked, selection_mode="single-cell")
    st.dataframe(frame.style.apply(lambda _: styles, axis=None), hide_index=True, key=f"table-{block.name}", **kwargs)
    csv_button(frame if block.download is None else block.download, block.name)
