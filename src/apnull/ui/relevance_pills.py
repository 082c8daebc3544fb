"""One click marks an item relevant or not: a row of pills beside the ranking editor.

A checkbox in ``st.data_editor`` takes two clicks (the first selects the cell, the second ticks it).
Each pill here is one item of the ranking, in rank order; a selected pill is a relevant item, and one
click toggles it. The pills are drawn from the canonical ranking in session state
(:data:`apnull.ui.ranking_editor.RANKING`) on every run, and a click writes the new relevance there
before the page runs again, so the editor, the metrics and the link (``?r=``) follow on that run.
"""

from __future__ import annotations

import streamlit as st

from .ranking_editor import RANKING

#: Session-state key of the pills (not a URL parameter: the ranking is in ``r``).
PILLS = "_ranking_pills"
#: Rankings longer than this show no pills (a wall of buttons); the editor's checkboxes remain.
MAX_PILLS = 100
#: Longest item name shown on a pill.
NAME_CHARS = 24
#: The space left between the pills and the table below them (``st.space`` size): at least the
#: height of the table's floating toolbar (44 px).
TOOLBAR_ROOM = "medium"


def _toggled() -> None:
    """The pills changed: mark exactly the chosen positions relevant in the canonical ranking."""
    ss = st.session_state
    chosen = set(ss.get(PILLS) or ())
    ss[RANKING] = [(item, i in chosen) for i, (item, _) in enumerate(ss.get(RANKING, []))]


def _pill_label(ranking: list, i: int) -> str:
    name = str(ranking[i][0])
    return f"{i + 1}. {name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + '…'}"


def relevance_pills(ranking: list, container=None) -> None:
    """Pills over ``ranking`` (list of (item, relevant) in rank order, as the editor left it): one per
    item, selected when relevant; a click toggles the item. Nothing for an empty ranking; a caption
    instead for rankings over ``MAX_PILLS`` items."""
    box = container or st.container()
    if not ranking:
        return
    if len(ranking) > MAX_PILLS:
        box.caption(f"With more than {MAX_PILLS} items, tick **relevant** in the table to mark an item.")
        return
    st.session_state[PILLS] = [i for i, (_, rel) in enumerate(ranking) if rel]
    box.pills("Relevant items: one click marks or unmarks an item", list(range(len(ranking))),
              selection_mode="multi", key=PILLS, on_change=_toggled,
              format_func=lambda i: _pill_label(ranking, i),
              help="Each pill is one item, numbered by its rank; a highlighted pill is a relevant item. "
                   "Click once to switch it.")
    # room for the table's toolbar, which floats above the table's top right corner once the table is
    # touched: without it, at 390 px the toolbar covered the last pills (a tap there opened "Show/hide
    # columns")
    box.space(TOOLBAR_ROOM)
