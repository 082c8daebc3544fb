"""What a scoring run will use, said before it runs: features, columns left out, perturbations,
replicates and controls per stratum, and what will be skipped.

:func:`screen_plan` checks the table exactly as :func:`apnull.score.score_profiles` does (same
errors) but draws no permutation; the dashboard shows its answer above the Score button.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .table.keys import combine_columns
from .table.screen import prepare_screen

__all__ = ["ScreenPlan", "screen_plan"]


@dataclass(frozen=True)
class ScreenPlan:
    """What a run on a table would use.

    Attributes
    ----------
    features : list of str
        The feature columns, in table order.
    left_out : DataFrame
        [column, reason]: every other column (the perturbation and stratum columns excepted).
    strata : DataFrame
        [stratum, controls, perturbations, replicates]: per stratum, its control rows, the scored
        perturbations with replicates there, and their replicate rows.
    perturbations : int
        Perturbations that will be scored (2 or more replicates, controls in each of their strata).
    skipped : DataFrame
        [perturbation, reason]: perturbations that will be skipped.
    warnings : list of str
        Rows ignored, duplicate rows, strata without controls.
    rows : int
        Rows used (after ignoring rows with an empty perturbation or stratum, and rows left out for
        missing values).
    dropped_features : list of str
        Feature columns left out for NaN or infinite values (``nan="drop-features"``).
    dropped_rows : list of int
        0-based input rows left out for NaN or infinite values (``nan="drop-rows"``).
    looks_raw : str or None
        With ``normalize="none"``: why the features look un-normalised (a sentence), or None
        (:func:`apnull.score.table.normalize.raw_look`).
    """

    features: list
    left_out: pd.DataFrame
    strata: pd.DataFrame
    perturbations: int
    skipped: pd.DataFrame
    warnings: list
    rows: int
    dropped_features: tuple = ()
    dropped_rows: tuple = ()
    looks_raw: str | None = None


def screen_plan(table, perturbation, control="DMSO", stratum=None, features=None,
                similarity="cosine", *, nan="error", positives_differ_by=None, negatives="controls",
                normalize="none") -> ScreenPlan:
    """The :class:`ScreenPlan` of ``score_profiles(table, perturbation, control, stratum, features=features,
    similarity=similarity, nan=nan, positives_differ_by=positives_differ_by, negatives=negatives,
    normalize=normalize)``
    (``perturbation`` one column or several); raises the same ValueError that call would raise for the
    table and these choices."""
    keyed = combine_columns(table, perturbation, control, stratum)
    screen = prepare_screen(keyed.table, keyed.column, control, stratum, features, similarity, nan,
                            positives_differ_by, negatives, normalize)
    counts = {s: [len(idx), 0, 0] for s, idx in screen.controls.items()}
    for p in screen.perts:
        for s, reps in zip(p.strata, p.reps):
            counts[s][1] += 1
            counts[s][2] += len(reps)
    strata = pd.DataFrame([(s or "(whole table)", c, n, r) for s, (c, n, r) in sorted(counts.items())],
                          columns=["stratum", "controls", "perturbations", "replicates"])
    return ScreenPlan(features=list(screen.features),
                      left_out=pd.DataFrame(screen.left_out, columns=["column", "reason"]),
                      strata=strata, perturbations=len(screen.perts),
                      skipped=pd.DataFrame([(str(n), r) for n, r in screen.skipped], columns=["perturbation", "reason"]),
                      warnings=list(screen.warnings), rows=int(screen.rows.size),
                      dropped_features=tuple(screen.dropped_features),
                      dropped_rows=tuple(int(r) for r in screen.dropped_rows), looks_raw=screen.looks_raw)
