"""Figures of null laws across sizes: densities and quantiles versus size (the reference experiment: (4i, 30i), i = 1..50)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale

from ._style import COLORSCALE, METRIC_NAMES, PALETTE, base_layout, fast_figure, layout_dict, typed_array

STATISTICS = {"q95": "95th percentile", "q90": "90th percentile", "q75": "75th percentile", "avg": "mean"}
DASHES = {"q95": "solid", "q90": "dash", "q75": "dot", "avg": "dashdot"}


def size_colors(totals) -> list[str]:
    """One colour per size on the continuous scale, by m + n (smallest to largest)."""
    totals = np.asarray(totals, dtype=float)
    lo, hi = totals.min(), totals.max()
    pos = np.zeros_like(totals) if hi == lo else (totals - lo) / (hi - lo)
    return sample_colorscale(COLORSCALE, list(pos))


def density_figure(curves: list[dict], metric: str, M: int, N: int, exact: list[dict] | None = None,
                   draws: int | None = None) -> go.Figure:
    """Density curves of one metric, one line per size, coloured by m + n.

    Parameters
    ----------
    curves : list of dict
        Each with keys ``m``, ``n``, ``x``, ``y`` (a density on the grid x).
    metric : {"ap", "pr"}
    M, N : int
        The base size, for the subtitle.
    exact : list of dict, optional
        The exact law smoothed with the same kernel (same keys), drawn dashed in black.
    """
    totals = [c["m"] + c["n"] for c in curves]
    colors = size_colors(totals)
    # Plain trace dicts, not validated (fast_figure): a view has up to 400 traces. Arrays are encoded once
    # here as float32 typed arrays (half the bytes of float64, and 7 significant digits are more than the
    # hover shows), so sending the cached figure again does not encode them again. Curves sharing one x
    # grid share its encoding.
    xs: dict[int, dict] = {}

    def x_of(c):
        if id(c["x"]) not in xs:
            xs[id(c["x"])] = typed_array(c["x"])
        return xs[id(c["x"])]

    traces = [dict(type="scatter", x=x_of(c), y=typed_array(c["y"]), mode="lines", line=dict(color=color, width=1.4),
                   name=f"m={c['m']}, n={c['n']}", showlegend=False,
                   hovertemplate=(f"m = {c['m']}, n = {c['n']}<br>{metric.upper()} = %{{x:.4f}}"
                                  "<br>density = %{y:.3f}<extra></extra>"))
              for c, color in zip(curves, colors)]
    traces += [dict(type="scatter", x=x_of(c), y=typed_array(c["y"]), mode="lines",
                    line=dict(color=PALETTE["exact"], width=1.2, dash="dash"),
                    name=f"exact law ({c.get('method', 'exact')}, same kernel)", legendgroup="exact",
                    showlegend=i == 0,
                    hovertemplate=(f"exact law, m = {c['m']}, n = {c['n']}<br>{metric.upper()} = %{{x:.4f}}"
                                   "<br>density = %{y:.3f}<extra></extra>"))
               for i, c in enumerate(exact or [])]
    # an invisible trace carries the colour bar for m + n
    traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                       marker=dict(colorscale=get_colorscale(COLORSCALE), cmin=min(totals), cmax=max(totals), color=[min(totals)],
                                   showscale=True, colorbar=dict(title=dict(text="m + n"), thickness=14))))
    sub = f"M = {M}, N = {N}, sizes (M·i, N·i)" + (f", {draws:,} draws each" if draws else "")
    return fast_figure(traces, layout_dict(f"{METRIC_NAMES[metric]} under the null<br><sup>{sub}</sup>",
                                           METRIC_NAMES[metric], "density", xaxis=dict(range=[0, _visible_end(curves)])))


def _visible_end(curves: list[dict]) -> float:
    """Right end of the x range: where every curve has fallen below 0.2% of its peak (at most 1)."""
    end = 0.0
    for c in curves:
        y = np.asarray(c["y"], dtype=float)
        if y.size and y.max() > 0:
            seen = np.flatnonzero(y > 0.002 * y.max())
            end = max(end, float(np.asarray(c["x"])[seen[-1]]))
    return min(1.0, end * 1.05 + 0.01) if end > 0 else 1.0


def quantile_figure(summary: pd.DataFrame, M: int, N: int, exact_mean: pd.DataFrame | None = None,
                    metrics=("ap", "pr"), statistics=("q95", "q90", "q75", "avg")) -> go.Figure:
    """Null quantiles and mean versus m, beside m / (m + n).

    Parameters
    ----------
    summary : DataFrame
        Long table with columns ``m``, ``n``, ``metric`` ("ap"/"pr"), ``statistic`` (q75, q90, q95,
        avg) and ``value``.
    exact_mean : DataFrame, optional
        Columns ``m``, ``value``: the exact E[AP] curve.
    """
    fig = go.Figure()
    for metric in metrics:
        for stat in statistics:
            part = summary[(summary["metric"] == metric) & (summary["statistic"] == stat)].sort_values("m")
            if part.empty:
                continue
            fig.add_trace(go.Scatter(
                x=part["m"], y=part["value"], mode="lines",
                line=dict(color=PALETTE[metric], dash=DASHES[stat], width=2 if stat == "q95" else 1.5),
                name=f"{METRIC_NAMES[metric]}: {STATISTICS[stat]}", customdata=part[["n"]],
                hovertemplate=(f"{METRIC_NAMES[metric]} {STATISTICS[stat]}<br>m = %{{x}}, n = %{{customdata[0]}}"
                               "<br>value = %{y:.4f}<extra></extra>"),
            ))
    if exact_mean is not None and len(exact_mean):
        fig.add_trace(go.Scatter(
            x=exact_mean["m"], y=exact_mean["value"], mode="lines",
            line=dict(color=PALETTE["exact"], width=2.5, dash="dot"), name="exact E[AP]",
            hovertemplate="exact E[AP]<br>m = %{x}<br>%{y:.5f}<extra></extra>",
        ))
    ratio = M / (M + N)
    fig.add_hline(y=ratio, line=dict(color=PALETTE["ratio"], width=6), opacity=0.35)
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=PALETTE["ratio"], width=6),
                             opacity=0.35, name=f"M/(M+N) = {ratio:.4f}"))
    base_layout(fig, f"Null summary statistics versus size<br><sup>M = {M}, N = {N}; grey band: M/(M+N)</sup>",
                "m (positives)", "metric value", height=520)
    fig.update_layout(legend=dict(orientation="v", y=1, x=1.02, xanchor="left", yanchor="top"))
    return fig
