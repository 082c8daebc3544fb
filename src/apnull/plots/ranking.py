"""Figures of one ranking: its step precision-recall curve with the AP area shaded, and where its
AP falls in the null law of its size. Plain data in, ``go.Figure`` out."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from ._style import LEGEND_BELOW, PALETTE, fast_figure, layout_dict

AREA_FILL = "rgba(31, 119, 180, 0.22)"
RELEVANT_COLOR = "#2ca02c"
OTHER_COLOR = "#7f7f7f"
TAIL_COLOR = "#e45756"
BODY_COLOR = "#b0b7c3"

#: At most this many distinct null values are drawn as one bar each; beyond, they are binned.
MAX_BARS = 80
BINS = 50


def _fraction(num: int, den: int) -> str:
    return f"{num}/{den}"


def pr_curve_figure(curve, k: int | None = None, height: int = 480) -> go.Figure:
    """The precision-recall points of a ranking and its AP step area.

    Parameters
    ----------
    curve : apnull.views.ranking.PRCurve
        Arrays per rank (``rank``, ``item``, ``relevant``, ``hits``, ``precision``, ``recall``),
        ``m``, ``ap`` and the step outline ``step_x``, ``step_y`` (area = AP).
    k : int, optional
        Cut-off to ring on the curve (the point at rank k), when within 1..len(ranking).

    Traces, in order: the shaded AP area (``fill="tozeroy"`` under ``step_x``/``step_y``; its
    trapezoid integral is AP), the raw path through the points in rank order (dotted), the
    non-relevant points, the relevant points, and the ring at rank k. Hover on a point shows its
    rank, item, precision@rank and recall@rank as fractions and decimals.
    """
    m = int(curve.m)
    traces = [
        dict(type="scatter", x=curve.step_x, y=curve.step_y, mode="lines", fill="tozeroy", fillcolor=AREA_FILL,
             line=dict(color=PALETTE["ap"], width=2.5), name=f"AP area = {curve.ap:.3f}",
             hovertemplate="recall step up to %{x:.3f}<br>precision on this step = %{y:.4f}<extra>AP area</extra>"),
        dict(type="scatter", x=curve.recall, y=curve.precision, mode="lines",
             line=dict(color="#999", width=1, dash="dot"), name="path in rank order", hoverinfo="skip"),
    ]
    text = np.array([
        (f"rank {int(r)}: <b>{html.escape(item)}</b> ({'relevant' if rel else 'not relevant'})"
         f"<br>precision@{int(r)} = {_fraction(int(h), int(r))} = {p:.4f}"
         f"<br>recall@{int(r)} = {_fraction(int(h), m)} = {rc:.4f}")
        for r, item, rel, h, p, rc in zip(curve.rank, curve.item, curve.relevant, curve.hits, curve.precision,
                                          curve.recall)
    ], dtype=object)
    for flag, name, color, symbol in ((False, "not relevant", OTHER_COLOR, "circle-open"),
                                      (True, "relevant", RELEVANT_COLOR, "circle")):
        sel = curve.relevant == flag
        if sel.any():
            traces.append(dict(
                type="scatter", x=curve.recall[sel], y=curve.precision[sel], mode="markers", name=name,
                marker=dict(color=color, size=9, symbol=symbol, line=dict(width=1.5, color=color)),
                text=text[sel], customdata=curve.rank[sel], hovertemplate="%{text}<extra></extra>"))
    if k is not None and 1 <= int(k) <= len(curve.rank):
        i = int(k) - 1
        traces.append(dict(
            type="scatter", x=[curve.recall[i]], y=[curve.precision[i]], mode="markers", name=f"k = {int(k)}",
            marker=dict(color="#ff7f0e", size=18, symbol="circle-open", line=dict(width=2.5)),
            text=[text[i]], hovertemplate="%{text}<extra>k</extra>"))
    j = int(np.argmax(curve.step_y[::2]))  # label the area on its tallest step
    label = dict(x=(j + 0.5) / m, y=curve.step_y[2 * j] / 2, text=f"<b>AP = {curve.ap:.3f}</b>", showarrow=False,
                 font=dict(size=16, color=PALETTE["ap"]), bgcolor="rgba(255,255,255,0.85)", borderpad=3)
    # a short first line, subtitle lines of about 60 characters, the legend in a row under the x axis:
    # at 390 px the one-line title was cut and the legend ran into the axis title
    title = (f"Precision-recall curve<br><sup>the shaded area is AP = {curve.ap:.4f}; m = {m} relevant, "
             f"n = {int(curve.n)} not;<br>each relevant item adds a step of width 1/m at its precision</sup>")
    layout = layout_dict(title, "recall@k", "precision@k", height, annotations=[label],
                     legend=dict(LEGEND_BELOW), margin=dict(l=60, r=20, t=90, b=50),
                     xaxis=dict(range=[-0.02, 1.04], tickformat=".2f"),
                     yaxis=dict(range=[0, 1.06], tickformat=".2f"))
    return fast_figure(traces, layout)


#: Share of the null chart's plot height kept free above the highest bar for the observed AP's label.
LABEL_ROOM = 0.35


def null_position_figure(values, probs, ap: float, p: float, m: int, n: int, method: str,
                         height: int = 320) -> go.Figure:
    """The null law of AP for (m, n) with the observed AP marked and its upper tail (the p-value) red.

    Parameters
    ----------
    values, probs : arrays
        The law's support and probabilities (``NullDistribution.values`` and ``.probs``). Up to ``MAX_BARS``
        values get one bar each; more are summed into ``BINS`` equal bins on [0, 1] (a bin is in the
        tail when its centre is at least ``ap``).
    ap, p : float
        The observed AP and its p-value, for the marker and its label.
    """
    values = np.asarray(values, dtype=float)
    probs = np.asarray(probs, dtype=float)
    if values.size <= MAX_BARS:
        x, y = values, probs
        width = max(0.008, min(0.02, 0.6 * float(np.min(np.diff(values))) if values.size > 1 else 0.02))
        tail = x >= ap - 1e-9
        hover = "AP = %{x:.4f}<br>P(AP = x) = %{y:.4f}<extra></extra>"
        ylabel = "probability"
    else:
        edges = np.linspace(0.0, 1.0, BINS + 1)
        y, _ = np.histogram(values, bins=edges, weights=probs)
        x = (edges[:-1] + edges[1:]) / 2
        width = edges[1] - edges[0]
        tail = x >= ap
        hover = "AP in [%{customdata[0]:.3f}, %{customdata[1]:.3f})<br>probability = %{y:.4f}<extra></extra>"
        ylabel = f"probability per bin of {width:.2f}"
    traces = []
    for flag, name, color in ((False, "null law", BODY_COLOR), (True, "AP ≥ this ranking's (p-value)", TAIL_COLOR)):
        sel = tail == flag
        if not sel.any():
            continue
        trace = dict(type="bar", x=x[sel], y=y[sel], width=width, marker=dict(color=color), name=name,
                     hovertemplate=hover)
        if values.size > MAX_BARS:
            trace["customdata"] = np.column_stack([x[sel] - width / 2, x[sel] + width / 2])
        traces.append(trace)
    left = ap < 0.5  # the label on the wider side of the line (a 390 px phone has room for one side only)
    marker_line = dict(type="line", x0=ap, x1=ap, xref="x", y0=0, y1=1, yref="paper",
                       line=dict(color=PALETTE["value"], width=2.5))
    # the label's two lines sit in headroom above the highest bar (LABEL_ROOM of the plot's height), never
    # on a bar: a box over the bar tops made two equal bars of 0.05 look like 0.043
    top = float(np.max(y)) if y.size else 1.0
    label = dict(x=ap, y=1, yref="paper", text=f"this ranking<br>AP = {ap:.3f}, p = {p:.3g}", showarrow=False,
                 xanchor="left" if left else "right", yanchor="top", xshift=6 if left else -6, align="left",
                 font=dict(color=PALETTE["value"]), bgcolor="rgba(255,255,255,0.85)")
    names = {"exact": "exact law", "grid": "grid law", "mc": "Monte Carlo"}
    # a short first line and the sizes below it: the title fits a phone's width; the legend goes under
    # the axis, where it cannot run into the title
    title = (f"AP of a random ordering<br><sup>of these items: m = {m}, n = {n}; "
             f"{names.get(method, method)}</sup>")
    layout = layout_dict(title, "AP", ylabel, height + 40, bargap=0, barmode="overlay", shapes=[marker_line],
                         annotations=[label], xaxis=dict(range=[0, 1.02]), margin=dict(t=70, b=90),
                         yaxis=dict(range=[0, top / (1 - LABEL_ROOM)]),
                         legend=dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0))
    return fast_figure(traces, layout)
