"""Figure of the "Compare two pipelines" page: each perturbation's mAP under B against its mAP under A,
with the diagonal where both are equal, coloured by which side retrieves it. Data from
:func:`apnull.views.compare.scatter_data`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._style import LEGEND_BELOW, PALETTE, base_layout

__all__ = ["compare_figure", "COLORS"]

#: Colour of each "retrieved" category (q-value at most the FDR level on that side).
COLORS = {"both": PALETTE["value"], "A only": PALETTE["ap"], "B only": PALETTE["pr"], "neither": PALETTE["ratio"]}

_HOVER = ("<b>%{customdata[0]}</b><br>mAP A = %{x:.4f}<br>mAP B = %{y:.4f}<br>delta = %{customdata[1]:+.4f}"
          "<br>q A = %{customdata[2]:.3g}, q B = %{customdata[3]:.3g}<br>unit: %{customdata[4]}<extra></extra>")


def compare_figure(data: pd.DataFrame, alpha: float, mean_delta: float | None = None, height: int = 500) -> go.Figure:
    """mAP of A (x) against mAP of B (y), one point per perturbation, and the diagonal mAP_b = mAP_a.

    Parameters
    ----------
    data : DataFrame
        :func:`apnull.views.compare.scatter_data`: ``name``, ``mAP_a``, ``mAP_b``, ``delta``, ``retrieved``,
        ``unit``, ``q_value_a``, ``q_value_b``.
    alpha : float
        The FDR level behind ``retrieved`` (the legend says q ≤ alpha).
    mean_delta : float, optional
        Drawn as the dotted line mAP_b = mAP_a + mean_delta.

    Traces, in order: the diagonal ``A = B``, optionally ``mean delta ...``, then one marker trace per
    category of :data:`COLORS` present (``retrieved by both (k)``, ``A only (k)``, ...), ``customdata`` =
    name, delta, q A, q B, unit.
    """
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="A = B", line=dict(color=PALETTE["mean"], width=1.5),
                             hovertemplate="mAP of B = mAP of A<extra></extra>"))
    if mean_delta is not None and np.isfinite(mean_delta):
        x = np.array([max(0.0, -mean_delta), min(1.0, 1.0 - mean_delta)])
        fig.add_trace(go.Scatter(x=x, y=x + mean_delta, mode="lines", name=f"mean delta {mean_delta:+.3f}",
                                 line=dict(color=PALETTE["mean"], width=1.5, dash="dot"),
                                 hovertemplate=f"mAP of B = mAP of A {mean_delta:+.4f}<extra></extra>"))
    labels = {"both": "retrieved by both", "A only": "by A only", "B only": "by B only", "neither": "by neither"}
    size = 9 if len(data) <= 500 else 6
    for kind, color in COLORS.items():
        part = data.loc[data["retrieved"] == kind]
        if part.empty:
            continue
        custom = np.column_stack([part["name"].astype(str).to_numpy(dtype=object), part["delta"].to_numpy(dtype=object),
                                  part["q_value_a"].to_numpy(dtype=object), part["q_value_b"].to_numpy(dtype=object),
                                  part["unit"].astype(str).to_numpy(dtype=object)])
        fig.add_trace(go.Scatter(x=part["mAP_a"], y=part["mAP_b"], mode="markers", name=f"{labels[kind]} ({len(part):,})",
                                 marker=dict(color=color, size=size, opacity=0.85, line=dict(color="white", width=0.5)),
                                 customdata=custom,
                                 hovertemplate=_HOVER.replace("<extra>", f"<br>{labels[kind]} (q ≤ {alpha:g})<extra>")))
    base_layout(fig, f"mAP of B against mAP of A<br><sup>{len(data):,} perturbations; above the line B retrieves "
                     f"better; colour: q ≤ {alpha:g}</sup>", "mAP of A", "mAP of B", height=height)
    fig.update_xaxes(range=[-0.03, 1.03])
    fig.update_yaxes(range=[-0.03, 1.03], rangemode="normal")
    fig.update_layout(legend=dict(LEGEND_BELOW), margin=dict(b=110, t=70))
    return fig
