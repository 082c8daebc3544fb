"""The scoring page's inputs: the choices and defaults each table gets, the settings a shared link
carries, the plan said before scoring, and the method text.

No streamlit (the page and :mod:`apnull.ui.score_cache` draw and keep them).
"""

from __future__ import annotations

import pandas as pd

from .score import NO_STRATUM, guess_control, guess_perturbation, guess_stratum, label_columns

__all__ = ["METHOD_TEXT", "LINK_SETTINGS", "TABLE_KEYS", "link_settings", "preferred_first",
           "perturbation_options", "stratum_options", "table_defaults", "plan_summary"]

#: How the page's p-values are made (shown in an expander below the inputs).
METHOD_TEXT = (
    "Each replicate of a perturbation ranks its sibling replicates among the controls of its stratum by "
    "profile similarity; its **AP** says how high the siblings came, and the perturbation's **mAP** averages "
    "the APs of its replicates.\n\n"
    "A fixed mAP cut-off misleads: what a random ranking scores depends on how many replicates and controls "
    "there are, so one threshold is too lax for some perturbations and too strict for others. Here each "
    "perturbation gets its own **permutation null**: within every plate, the perturbation's label is handed "
    "to randomly drawn members of its replicates-plus-controls pool (keeping the counts), the mAP is "
    "recomputed on the same similarities, B times; the **p-value** is the share of those shuffles, counting "
    "the real one, that reach the observed mAP (never below 1/(1 + B)). Benjamini-Hochberg turns the "
    "p-values into **q-values**, the false discovery rate of calling everything up to that point a hit. The "
    "shortcuts (treating the k APs as independent, or copairs's null) are miscalibrated: see the table at "
    "the bottom. Click a point of the volcano plot to see that perturbation's null.\n\n"
    "The downloaded query table has one row per replicate; `row` is the 0-based position of the profile "
    "among the uploaded file's data rows (the first row under the header is 0), followed by its stratum "
    "and metadata columns, so it joins back to the file.")

#: Inputs a shared link may carry for an uploaded file, with the words the page uses for them.
LINK_SETTINGS = {"sc_pert": "perturbation column", "sc_control": "control", "sc_stratum": "stratum",
                 "sc_features": "features", "sc_similarity": "similarity", "sc_null": "null",
                 "sc_perms": "B", "sc_auto": "adaptive B", "sc_seed": "seed", "sc_fdr": "FDR level"}


def link_settings(params: dict) -> str:
    """The settings a link carries, as "control = DMSO, B = 9999" (empty when it carries none)."""
    def cut(text):
        text = str(text)
        return text if len(text) <= 30 else text[:30] + "..."

    parts = [f"{word} = {cut(params[k])}" for k, word in LINK_SETTINGS.items() if params.get(k)]
    return ", ".join(parts)


#: The page's inputs that depend on the table: reset to the new table's guesses when the table changes.
TABLE_KEYS = ("sc_pert", "sc_control", "sc_stratum", "sc_features", "sc_inspect")


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
            f"{strata:,} stratum/strata")
    if len(plan.skipped):
        text += f"; **{len(plan.skipped):,} will be skipped** (see below)"
    return text + "."
