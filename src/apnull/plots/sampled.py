"""Figures of sampled metrics (Rendle 2020, "Evaluation Metrics for Item Recommendation under Sampling"), the charts of the "Sampled metrics" page.

Figure builders (plain data in, ``go.Figure`` out):

- :func:`metric_vs_rank_figure`: metric versus true rank, whole range and top 100 (paper Figure 1);
- :func:`sampled_vs_rank_figure`: expected sampled metric versus true rank for several s (Figure 3);
- :func:`metric_vs_samples_figure`: expected sampled metric versus s per algorithm, with the sample
  sizes at which the algorithms' order changes (Figure 2).

The page's input checks and the data behind these figures are in :mod:`apnull.views.sampled`.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ._style import FONT, LEGEND_BELOW, PALETTE, TEMPLATE, fast_figure, layout_dict

#: Line colour of each metric in Figure 1.
METRIC_COLORS = {"auc": "#7f7f7f", "ap": PALETTE["ap"], "ndcg": "#2ca02c", "recall": PALETTE["pr"],
                 "precision": "#9467bd", "ap@k": "#8c564b", "ndcg@k": "#e377c2"}
#: Colours of the algorithms (A, B, C, then cycling).
ALGORITHM_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def _algo_color(i: int) -> str:
    return ALGORITHM_COLORS[i % len(ALGORITHM_COLORS)]


# ----------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------


def metric_vs_rank_figure(full: Mapping[str, tuple], top: Mapping[str, tuple], n: int,
                          highlight: str | None = None) -> go.Figure:
    """Metric of one relevant item versus its true rank (paper Figure 1).

    Parameters
    ----------
    full, top : mapping {label: (ranks, values)}
        The curves over the whole range 1..n (left panel, axes x and y) and over the top ranks (right
        panel, axes x2 and y2).
    n : int
        Number of items, for the titles.
    highlight : str, optional
        Label drawn thicker (the metric chosen on the page).

    Built from plain dicts (:func:`apnull.plots._style.fast_figure`, checked against plotly's validation
    in tests/test_plots_validation.py): the layout of ``make_subplots(rows=1, cols=2)``.
    """
    top_max = max((int(np.max(r)) for r, _ in top.values()), default=100)
    traces = []
    for col, curves in ((1, full), (2, top)):
        suffix = "" if col == 1 else "2"
        for label, (ranks, values) in curves.items():
            key = _label_key(label)
            width = 3.2 if label == highlight else 1.8
            traces.append(dict(
                type="scatter", x=np.asarray(ranks), y=np.asarray(values), mode="lines", name=label,
                legendgroup=label, showlegend=col == 1, xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                line=dict(color=METRIC_COLORS.get(key, "#333"), width=width,
                          shape="hv" if key in ("recall", "precision") else "linear"),
                hovertemplate=f"{label}<br>true rank = %{{x:,}}<br>value = %{{y:.6f}}<extra></extra>",
            ))
    axis = dict(showline=True, linecolor="#999", ticks="outside")
    titles = [(f"all {n:,} ranks", 0.23), (f"top {top_max:,} ranks", 0.77)]
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 0.46], title=dict(text="true rank"), **axis),
        yaxis=dict(anchor="x", domain=[0.0, 1.0], title=dict(text="metric"), range=[0, 1.03], **axis),
        xaxis2=dict(anchor="y2", domain=[0.54, 1.0], title=dict(text="true rank"), **axis),
        yaxis2=dict(anchor="x2", domain=[0.0, 1.0], title=dict(text="metric"), range=[0, 1.03], **axis),
        annotations=[dict(font=dict(size=16), showarrow=False, text=text, x=x, xanchor="center", xref="paper",
                          y=1.0, yanchor="bottom", yref="paper") for text, x in titles],
        title=dict(text=f"Metric versus the true rank<br><sup>of the one relevant item among n = {n:,} items"
                        "</sup>", x=0, xanchor="left"),
        height=480, font=FONT, template=TEMPLATE, margin=dict(l=60, r=20, t=90, b=60),
        hovermode="closest", legend=dict(LEGEND_BELOW),
    )
    return fast_figure(traces, layout)


def _label_key(label: str) -> str:
    low = label.lower()
    for key in ("precision", "recall", "ndcg", "auc"):
        if low.startswith(key):
            return key
    return "ap" if low.startswith("ap") else low


def sampled_vs_rank_figure(ranks, exact, curves: Mapping[int, tuple], label: str, n: int,
                           replace: bool = True, exact_ranks=None) -> go.Figure:
    """Expected sampled metric versus true rank for several sample sizes s (paper Figure 3).

    Parameters
    ----------
    ranks : array_like of int
        True ranks of the sampled curves.
    exact : array_like of float
        The exact metric at ``exact_ranks`` (default ``ranks``), drawn in black.
    curves : mapping {s: (mean, sd)}
        Expected sampled metric and its SD at ``ranks`` for each sample size s.
    label : str
        Display name of the metric.
    """
    ranks = np.asarray(ranks)
    xr = ranks if exact_ranks is None else np.asarray(exact_ranks)
    sizes = sorted(curves)
    colors = sample_colorscale("Plasma", list(np.linspace(0.0, 0.8, max(len(sizes), 2))))
    traces = []
    for color, s in zip(colors, sizes):
        mean, sd = (np.asarray(a, dtype=float) for a in curves[s])
        traces.append(dict(
            type="scatter", x=ranks, y=mean, mode="lines", name=f"sampled, s = {s:,}", line=dict(color=color, width=2),
            customdata=sd,
            hovertemplate=(f"sampled {label}, s = {s:,}<br>true rank = %{{x:,}}<br>E = %{{y:.6f}}"
                           "<br>SD of one instance = %{customdata:.4f}<extra></extra>"),
        ))
    key = _label_key(label)
    traces.append(dict(
        type="scatter", x=xr, y=np.asarray(exact, dtype=float), mode="lines", name=f"exact {label}",
        line=dict(color=PALETTE["exact"], width=2.4, dash="dash", shape="hv" if key in ("recall", "precision") else "linear"),
        hovertemplate=f"exact {label}<br>true rank = %{{x:,}}<br>value = %{{y:.6f}}<extra></extra>",
    ))
    how = "with" if replace else "without"
    layout = layout_dict(f"Expected sampled {label} versus true rank<br><sup>n = {n:,} items, s irrelevant items "
                         f"sampled {how} replacement<br>the relevant item is ranked among s + 1</sup>",
                         "true rank", f"{label}", height=500, margin=dict(t=75, b=60), legend=dict(LEGEND_BELOW),
                         yaxis=dict(range=[0, 1.03]))
    return fast_figure(traces, layout)


def metric_vs_samples_figure(sizes, curves: Mapping[str, Sequence[float]], label: str, n: int,
                             changes: Sequence[dict] = (), exact: Mapping[str, float] | None = None,
                             replace: bool = True) -> go.Figure:
    """Expected sampled metric of each algorithm versus the sample size s (paper Figure 2).

    Parameters
    ----------
    sizes : array_like of int
        Sample sizes (x, log scale).
    curves : mapping {algorithm: values at ``sizes``}
    changes : sequence of dict
        Order changes ``{"samples", "previous", "order"}`` (the first entry, with ``previous``
        None, is the order at the smallest s and gets no line); each later one is a vertical line.
    exact : mapping {algorithm: exact metric}, optional
        Drawn as dotted horizontal lines in the algorithm's colour.
    """
    sizes = np.asarray(sizes)
    traces, annotations = [], []
    for i, (name, values) in enumerate(curves.items()):
        traces.append(dict(
            type="scatter", x=sizes, y=np.asarray(values, dtype=float), mode="lines", name=f"{name} (sampled)",
            legendgroup=name, line=dict(color=_algo_color(i), width=2.4),
            hovertemplate=f"{name}<br>s = %{{x:,}}<br>E[sampled {label}] = %{{y:.6f}}<extra></extra>",
        ))
        if exact is not None and name in exact:
            traces.append(dict(
                type="scatter", x=[sizes.min(), sizes.max()], y=[exact[name]] * 2, mode="lines",
                name=f"{name} (exact)", legendgroup=name, line=dict(color=_algo_color(i), width=1.4, dash="dot"),
                hovertemplate=f"{name}: exact {label} = {exact[name]:.6f}<extra></extra>",
            ))
    flips = [c for c in changes if c.get("previous") is not None]
    for j, c in enumerate(flips):
        traces.append(dict(
            type="scatter", x=[c["samples"], c["samples"]], y=[0, 1.0], mode="lines", name="order changes",
            legendgroup="changes", showlegend=j == 0, line=dict(color="#555", width=1, dash="dash"),
            hovertemplate=(f"s = {c['samples']:,}: order changes<br>{c['previous']} → {c['order']}"
                           "<extra></extra>"),
        ))
        annotations.append(dict(x=math.log10(c["samples"]), y=1.0, yref="y", text=c["order"], showarrow=False,
                                textangle=-90, xanchor="right", yanchor="top", xshift=-4,
                                font=dict(size=10, color="#555")))
    how = "with" if replace else "without"
    layout = layout_dict(f"Expected sampled {label} versus s<br><sup>s: sampled irrelevant items, {how} replacement; "
                         f"n = {n:,}<br>dashed lines: s where the algorithms' order changes</sup>",
                         "s (sampled irrelevant items, log scale)", f"E[sampled {label}]", height=560,
                         xaxis=dict(type="log"), yaxis=dict(range=[0, 1.02]), margin=dict(t=75, b=60),
                         legend=dict(LEGEND_BELOW),
                         **({"annotations": annotations} if annotations else {}))
    return fast_figure(traces, layout)
