"""Figure of the consistency step: each label's mAP against -log10 of its permutation p-value.
Data from :func:`apnull.views.consistency.figure_data`; a label's null is drawn with
:func:`apnull.plots.score.null_figure`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._style import PALETTE, fast_figure
from .score import NOT_SIGNIFICANT, SIGNIFICANT, level_line, mAP_range, pick_layout, selected_ring

__all__ = ["labels_figure"]

_HOVER = ("<b>%{customdata[0]}</b><br>perturbations: %{customdata[1]}<br>mAP = %{x:.4f}"
          "<br>p = %{customdata[2]:.3g}<br>q = %{customdata[3]:.3g}<extra></extra>")


def _custom(data: pd.DataFrame) -> np.ndarray:
    return np.column_stack([data["name"].to_numpy(dtype=object), data["n_perturbations"].to_numpy(dtype=object),
                            data["p_value"].to_numpy(dtype=object), data["q_value"].to_numpy(dtype=object)])


def labels_figure(data: pd.DataFrame, fdr: float, cutoff: float | None = None, p_floor: float | None = None,
                  highlight: str | None = None, height: int = 460) -> go.Figure:
    """Label mAP (x) against -log10 p (y), coloured by q <= fdr.

    Traces, in order: ``q ≤ fdr (k)`` and ``q > fdr (k)`` markers (``customdata`` = label,
    perturbations, p, q: a click names the label), then the optional lines ``BH cutoff: p ≤ ...`` (the
    q threshold: every label above it has q <= fdr) and ``smallest p = ...`` (1 / (1 + B)), and the ring
    ``selected: <label>``.
    """
    traces = []
    significant = data["significant"].to_numpy(dtype=bool)
    for flag, color, sign in ((True, SIGNIFICANT, "≤"), (False, NOT_SIGNIFICANT, ">")):
        part = data.loc[significant == flag]
        traces.append(dict(type="scatter", x=part["mAP"].to_numpy(), y=part["neg_log10_p"].to_numpy(),
                           mode="markers", name=f"q {sign} {fdr:g} ({len(part):,})",
                           marker=dict(color=color, size=10, opacity=0.85, line=dict(color="white", width=0.5)),
                           customdata=_custom(part), hovertemplate=_HOVER))
    x0, x1 = mAP_range(data["mAP"])
    tops = [float(data["neg_log10_p"].max()) if len(data) else 1.0]
    if cutoff is not None:
        y = -np.log10(max(cutoff, 1e-300))
        tops.append(y)
        traces.append(level_line(y, x0, x1, f"BH cutoff: p ≤ {cutoff:.3g}", SIGNIFICANT, "dash",
                                 f"q ≤ {fdr:g} for every p ≤ {cutoff:.4g}<br>-log10 p = {y:.3f}"))
    if p_floor is not None:
        y = -np.log10(p_floor)
        tops.append(y)
        traces.append(level_line(y, x0, x1, f"smallest p = {p_floor:.3g}", PALETTE["mean"], "dot",
                                 f"smallest attainable p = 1/(1 + permutations) = {p_floor:.4g}"))
    if highlight is not None:
        sel = data.loc[data["name"] == str(highlight)]
        if len(sel):
            traces.append(selected_ring(sel, highlight, 20, _custom(sel), _HOVER))
    return fast_figure(traces, pick_layout(
        f"Consistency: label mAP against its p-value<br><sup>{len(data):,} labels; click a point to see its "
        "null</sup>", "label mAP (mean AP of its carriers)", (x0, x1), 1.08 * max(tops) + 0.05, height))
