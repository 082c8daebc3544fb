"""The ranking editor's state machine: the ranking in session state, the link (``?r=``), presets and
the data editor, kept in step with one another.

Session state holds the canonical ranking under ``"ranking"`` (a list of (item, relevant) in rank
order). The link wins on arrival and whenever it is changed from outside the page; a preset is
applied when it is chosen (or "Apply again" is pressed); an edit in the data editor that reorders or
renumbers rows rebuilds the editor on the new order (one ``st.rerun``, bounded so it cannot loop).
The model of a ranking (presets, text form, positions) is :mod:`apnull.views.ranking`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..views import ranking as rk
from .common import guard
from .ranking_cache import editor_frame
from .state import rewrite_renamed_value
from .widgets import bound_int, bound_select

RANKING = "ranking"            # the canonical ranking: list of (item, relevant) in rank order
URL_SEEN = "_ranking_url"      # the r parameter as this page last read or wrote it
BASE = "_ranking_base"         # the ranking the current editor was built from
SHOWN = "_ranking_shown"       # the ranking the editor showed at the end of the last run
VERSION = "_ranking_version"   # editor key suffix; a new one rebuilds the editor
APPLIED = "_ranking_applied"   # the preset choice last applied
REBUILDS = "_ranking_rebuilds"  # editor rebuilds in a row (st.rerun after a reorder)
DEFAULT = list(rk.PR_EXAMPLE)
DEFAULT_CHOICE = (rk.PRESETS[0],)
#: Longest part of an unreadable link quoted back in an error.
QUOTE = 300


def _quote(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= QUOTE else f"{text[:QUOTE]}..."


def load_ranking() -> tuple[bool, str | None]:
    """Bring the ranking in from the link (on arrival, or when the link changed from outside).

    Returns (first_run, r_url). An unreadable link or ranking shows ``st.error`` and the
    precision-recall example instead.
    """
    ss = st.session_state
    r_url = st.query_params.get("r")
    first_run = URL_SEEN not in ss
    problem = None
    if (first_run and (RANKING not in ss or r_url is not None)) or (not first_run and r_url != ss[URL_SEEN]):
        ss[RANKING] = list(DEFAULT)
        if r_url is not None:
            try:
                ss[RANKING] = rk.from_text(r_url)
            except ValueError as exc:
                problem = exc
    ss[URL_SEEN] = r_url
    if problem is not None:
        st.error(f"The ranking in the link (`r=...`) could not be read: {_quote(problem)}. Showing the "
                 "precision-recall example instead.", icon=":material/link_off:")
    try:
        ss[RANKING] = rk.check_rows(ss[RANKING])
    except ValueError as exc:
        st.error(f"{_quote(exc)}. Showing the precision-recall example instead.", icon=":material/error:")
        ss[RANKING] = list(DEFAULT)
    return first_run, r_url


def _apply_again(random_preset: bool) -> None:
    ss = st.session_state
    if random_preset:
        ss["rk_seed"] = int(ss.get("rk_seed", 0)) + 1
    else:
        ss[APPLIED] = None


def preset_controls(first_run: bool, r_url: str | None) -> tuple:
    """The preset choice (with its model or seed) and the "Apply again" button; applies a newly
    chosen preset to the ranking. A ranking in the link wins over the preset on arrival. Returns the
    choice tuple (preset, [model or seed]). A link with an earlier preset name (``rk.RENAMED_PRESETS``)
    opens on the preset's name now."""
    ss = st.session_state
    rewrite_renamed_value("rk_preset", rk.RENAMED_PRESETS)
    preset = bound_select(
        "Preset", "rk_preset", rk.PRESETS, default=rk.PRESETS[0],
        help="The precision-recall example and the MAP tutorial's models replace the ranking; Perfect, "
             "Worst and Random reorder the current items. Choosing a preset applies it; 'Apply again' "
             "re-applies it after edits.",
    )
    choice = (preset,)
    if preset == rk.TUTORIAL_PRESET:
        choice += (bound_select("Model", "rk_model", list(rk.TUTORIAL_MODELS), default="model 1",
                                help="The model rankings of query q1 in the MAP tutorial."),)
        st.caption(
            "The MAP tutorial: query q1 has two relevant documents, **1** and **2**; n1 ... n8 are the "
            "other eight documents each model retrieved. All three models find both relevant documents "
            "(recall@10 = 1), but AP tells them apart: 1 with both on top (model 2), 0.5 at ranks 2 and 4 "
            "(model 1), 0.156 at ranks 9 and 10 (model 3). Recall does not look at where the hits are; "
            "AP does. (The tutorial's model 0 never retrieves document 1, so it is left out.)"
        )
    elif preset == "Random":
        choice += (bound_int("Shuffle seed", "rk_seed", 0, min_value=0,
                             help="A uniformly random order of the current items, drawn with this seed: one "
                                  "draw from the null law of the last section."),)
    elif preset in ("Perfect", "Worst"):
        st.caption("Perfect puts every relevant item above every other one (AP = 1); Worst puts them all "
                   "at the bottom, the lowest AP these items allow.")
    st.button("Shuffle again (seed + 1)" if preset == "Random" else "Apply again",
              on_click=_apply_again, args=(preset == "Random",), key="apply_again", icon=":material/refresh:")
    if (ss.get(APPLIED) != choice and not first_run) or (first_run and r_url is None and choice != DEFAULT_CHOICE):
        ss[RANKING] = rk.apply_preset(preset, ss[RANKING],
                                      model=choice[1] if preset == rk.TUTORIAL_PRESET else "model 1",
                                      seed=choice[1] if preset == "Random" else 0)
    ss[APPLIED] = choice
    return choice


def ranking_editor(choice: tuple) -> list:
    """The data editor over the ranking; returns the ranking as edited and writes it to the link."""
    ss = st.session_state
    editor_key = f"ranking_editor_{ss.get(VERSION, 0)}"
    if ss.get(SHOWN) != ss[RANKING] or BASE not in ss or editor_key not in ss:
        # changed by a preset, the link or a test, or the editor's state is gone (page switch): rebuild
        ss[BASE] = list(ss[RANKING])
        ss[VERSION] = ss.get(VERSION, 0) + 1
    edited = st.data_editor(
        editor_frame(tuple(ss[BASE])), key=f"ranking_editor_{ss[VERSION]}", num_rows="dynamic", hide_index=True,
        column_order=("position", "item", "relevant"),
        column_config={
            "position": st.column_config.NumberColumn(
                "position", min_value=1, step=1, format="%d", width=80,
                help="Rank of the item, 1 = top. Type another number to move the row there; the other "
                     "rows shift to make room."),
            "item": st.column_config.TextColumn("item", help="Name of the item (any text)."),
            "relevant": st.column_config.CheckboxColumn("relevant", default=False, width=85,
                                                        help="Tick the items that are relevant."),
        },
    )
    st.caption(REORDER_HELP)
    new = rk.apply_positions(edited["item"].tolist(), edited["relevant"].tolist(), edited["position"].tolist(),
                             edited["base"].tolist())
    with guard():  # too many rows (e.g. a big paste): say so and keep the last good ranking
        rk.check_rows(new)
    shown_now = [(None if pd.isna(p) else int(p), None if pd.isna(i) else i, None if pd.isna(r) else bool(r))
                 for p, i, r in zip(edited["position"], edited["item"], edited["relevant"])]
    stale = shown_now != [(pos, item, rel) for pos, (item, rel) in enumerate(new, start=1)]
    if stale and ss.get(REBUILDS, 0) < 2:  # (the bound only guards against a rerun loop)
        # reordered, renumbered or filled in: rebuild the editor on the ranking as it now stands
        ss[RANKING] = new
        ss[SHOWN] = None
        ss[REBUILDS] = ss.get(REBUILDS, 0) + 1
        st.rerun()
    ss[REBUILDS] = 0
    ss[RANKING] = ss[SHOWN] = new
    _write_link(new, choice)
    return new


#: How to change the table, under it: its rows cannot be dragged (Streamlit's data editor has no drag and
#: drop), so it says how to reorder before a student tries.
REORDER_HELP = ("**To reorder**, type the new rank in a row's **position** (rows cannot be dragged): it moves "
                "there and the rows between shift by one. Click the empty row at the bottom to add an item; "
                "select rows by the box at their left edge and press Delete to remove them.")


def _write_link(new: list, choice: tuple) -> None:
    """Keep ``?r=`` in step with the ranking (the default example with the default preset stays out)."""
    as_text = rk.to_text(new)
    text = None if (new == DEFAULT and choice == DEFAULT_CHOICE) else as_text
    if st.query_params.get("r") != text:
        if text is None:
            del st.query_params["r"]
        else:
            st.query_params["r"] = text
    st.session_state[URL_SEEN] = text
    if new and len(as_text) <= 600:
        st.caption("The ranking as text (the r parameter of the link):")
        st.code(as_text, language=None, wrap_lines=True)
