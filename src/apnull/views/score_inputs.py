"""The scoring page's inputs: the choices and defaults each table gets, the settings a shared link
carries, the plan said before scoring, and the method text.

No streamlit (the page and :mod:`apnull.ui.score_cache` draw and keep them).
"""

from __future__ import annotations

import pandas as pd

from .score import NO_STRATUM, guess_control, guess_perturbation, guess_stratum, label_columns
from .score_report import dropped_text

__all__ = ["LINK_SETTINGS", "TABLE_KEYS", "link_settings", "preferred_first",
           "perturbation_options", "stratum_options", "table_defaults", "plan_summary"]

#: Inputs a shared link may carry for an uploaded file, with the words the page uses for them.
LINK_SETTINGS = {"sc_pert": "perturbation column", "sc_control": "control", "sc_stratum": "stratum",
                 "sc_features": "features", "sc_similarity": "similarity", "sc_null": "null",
                 "sc_perms": "B", "sc_auto": "more draws where needed", "sc_seed": "seed", "sc_fdr": "FDR level",
                 "sc_pert_more": "more perturbation columns", "sc_nan": "missing values",
                 "sc_negatives": "negatives", "sc_differ": "pair rule", "sc_hier": "families",
                 "sc_budget": "time limit", "sc_normalize": "normalise features"}


def link_settings(params: dict) -> str:
    """The settings a link carries, as "control = DMSO, B = 9999" (empty when it carries none)."""
    def cut(text):
        text = str(text)
        return text if len(text) <= 30 else text[:30] + "..."

    parts = [f"{word} = {cut(params[k])}" for k, word in LINK_SETTINGS.items() if params.get(k)]
    return ", ".join(parts)


#: The page's inputs that depend on the table: reset to the new table's guesses when the table changes.
TABLE_KEYS = ("sc_pert", "sc_control", "sc_stratum", "sc_features", "sc_inspect", "sc_pert_more", "sc_differ",
              "sc_hier", "sc_cs_annotation", "sc_cs_sep", "sc_cs_label")


def preferred_first(options, preferred) -> list:
    """``options`` (as text) with ``preferred`` moved to the front (a widget's default is its first option)."""
    options = [str(o) for o in options]
    return ([str(preferred)] if str(preferred) in options else []) + [o for o in options if o != str(preferred)]


def perturbation_options(table: pd.DataFrame) -> list[str]:
    """Columns for the perturbation box, the guessed one first, then labels, then the other columns."""
    labels = label_columns(table)
    columns = labels + [str(c) for c in table.columns if str(c) not in labels]
    return preferred_first(columns, guess_perturbation(labels) or columns[0])


def stratum_options(table: pd.DataFrame, perturbation: str) -> list[str]:
    """Choices of the stratum box: the guessed plate/batch column first, the other label columns, and
    :data:`NO_STRATUM`."""
    labels = [c for c in label_columns(table) if c != perturbation]
    return preferred_first([NO_STRATUM] + labels, guess_stratum(labels, perturbation))


def table_defaults(table: pd.DataFrame) -> dict:
    """The page's table-dependent inputs as a new table shows them: the guessed perturbation column,
    its guessed control value, the guessed stratum, all numeric non-metadata features."""
    pert = perturbation_options(table)[0]
    control = guess_control(table[pert]) if pert in table.columns else None
    return {"sc_pert": pert, "sc_control": control or "", "sc_stratum": stratum_options(table, pert)[0],
            "sc_features": ""}


def plan_summary(plan) -> str:
    """One paragraph saying what a run will use (:class:`apnull.score.ScreenPlan`)."""
    feats = plan.features
    shown = ", ".join(feats[:3]) + (f", ... {feats[-1]}" if len(feats) > 3 else "")
    strata = len(plan.strata)
    text = (f"**{len(feats):,} feature column(s)** ({shown}); **{len(plan.left_out):,} column(s) left out**; "
            f"**{plan.perturbations:,} perturbation(s)** will be scored over {plan.rows:,} rows in "
            f"{strata:,} {'group' if strata == 1 else 'groups'} of rows compared within themselves (plates or "
            f"batches: the *strata*)")
    if len(plan.skipped):
        text += f"; **{len(plan.skipped):,} will be skipped** (see below)"
    dropped = dropped_text(plan)
    return text + "." + (f" {dropped}" if dropped else "")
