"""Figures of null laws across sizes: densities of AP, the discrete law of Precision@R, and
quantiles versus size (the reference experiment: sizes (4i, 30i), i = 1..50)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale

from ._style import COLORSCALE, LEGEND_BELOW, METRIC_NAMES, PALETTE, fast_figure, layout_dict, typed_array

STATISTICS = {"q95": "95th percentile", "q90": "90th percentile", "q75": "75th percentile", "avg": "mean"}
DASHES = {"q95": "solid", "q90": "dash", "q75": "dot", "avg": "dashdot"}
#: How each exact method reads in a hover (the legend says "exact curve"; the method is in the hover).
EXACT_METHODS = {"exact": "every placement counted", "grid": "grid law, quantiles within 0.001"}
#: Each figure's margins (px) as plotly's automargin makes them on the dashboard at a desktop width
#: (Streamlit's chart fonts; room for the axis titles, the default view's tick labels and a one-row legend
#: below; the colour bar widens the right one by itself): set from the start, the first draw is the only
#: one. Where plotly needs more (a narrow screen, wider tick labels) it widens the margin and draws every
#: trace again, as it did on every chart before: that second draw was 0.2 s of the AP densities and 0.5 s
#: of the Precision@R steps in the browser on the 2-core machine, before the densities page's first chart
#: showed (tests/e2e/test_null_pages.py).
DRAWN_MARGINS = {"density": dict(l=76, b=73), "pmf": dict(l=76, b=103), "quantiles": dict(l=79, b=119, r=22)}
#: Exact probabilities below this share of a size's largest one get no dot (they would sit on the x axis).
DOT_FLOOR = 1e-3


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
                    name="exact curve, smoothed like the sampled ones", legendgroup="exact", showlegend=i == 0,
                    hovertemplate=(f"exact law ({EXACT_METHODS.get(c.get('method', 'exact'), c.get('method'))}), "
                                   f"m = {c['m']}, n = {c['n']}<br>smoothed with the same Gaussian kernel"
                                   f"<br>{metric.upper()} = %{{x:.4f}}<br>density = %{{y:.3f}}<extra></extra>"))
               for i, c in enumerate(exact or [])]
    # an invisible trace carries the colour bar for m + n
    traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                       marker=dict(colorscale=get_colorscale(COLORSCALE), cmin=min(totals), cmax=max(totals), color=[min(totals)],
                                   showscale=True, colorbar=dict(title=dict(text="m + n"), thickness=14))))
    sub = f"M = {M}, N = {N}, sizes (M·i, N·i)" + (f", {draws:,} draws each" if draws else "")
    return fast_figure(traces, layout_dict(f"{METRIC_NAMES[metric]} under the null<br><sup>{sub}</sup>",
                                           METRIC_NAMES[metric], "density", xaxis=dict(range=[0, _visible_end(curves)]),
                                           legend=dict(LEGEND_BELOW), margin=DRAWN_MARGINS["density"]))


def pmf_figure(laws: list[dict], M: int, N: int, draws: int | None = None) -> go.Figure:
    """The discrete null law of Precision@R, one size per colour: sampled steps, exact dots.

    Parameters
    ----------
    laws : list of dict
        :func:`apnull.views.null.discrete_pr_laws` entries: ``m``, ``n``, ``x`` (j / m), ``share``
        (sampled) and ``exact`` (hypergeometric) probabilities of j hits, j = 0..m.
    M, N : int
        The base size, for the subtitle.

    Precision@R takes only the values j / m, so each size is a histogram with one bar of width 1 / m
    per value, [(j - 1/2) / m, (j + 1/2) / m], drawn as its outline (a step line), and the exact
    probabilities are dots at the bar centres (those at least ``DOT_FLOOR`` times the size's largest).
    Heights are probability x m (probability per unit of Precision@R), so sizes with different m share
    one scale and the steps approach a density as m grows. Precision@R lies in [0, 1], and so does the
    figure: the bars of j = 0 and j = m are cut at 0 and 1 (half bars, at the same height), and the x axis
    starts at 0 (the dots at 0 and 1 are drawn whole over the axis ends). Hover on a dot gives the size,
    the hit count, the exact probability and the sampled share.
    """
    totals = [c["m"] + c["n"] for c in laws]
    colors = size_colors(totals) if laws else []
    traces = []
    dots = {"x": [], "y": [], "c": [], "custom": []}
    for c, color in zip(laws, colors):
        m = c["m"]
        share = np.asarray(c["share"], dtype=float)
        edges = np.clip((np.arange(m + 2) - 0.5) / m, 0.0, 1.0)  # Precision@R never leaves [0, 1]
        sx = np.repeat(edges, 2)
        sy = np.concatenate([[0.0], np.repeat(share * m, 2), [0.0]])
        traces.append(dict(type="scatter", x=typed_array(sx), y=typed_array(sy), mode="lines",
                           line=dict(color=color, width=1.4), name=f"m={m}, n={c['n']}", showlegend=False,
                           hoverinfo="skip"))
        exact = np.asarray(c["exact"], dtype=float)
        keep = exact >= DOT_FLOOR * exact.max()  # dots too small to see would only line the x axis
        j = np.flatnonzero(keep)
        dots["x"].append(np.asarray(c["x"], dtype=float)[keep])
        dots["y"].append(exact[keep] * m)
        dots["c"].append(np.full(j.size, float(m + c["n"])))
        dots["custom"].append(np.column_stack([np.full(j.size, m), np.full(j.size, c["n"]), j, exact[keep],
                                               share[keep]]))
    if laws:
        cmin, cmax = min(totals), max(totals)
        traces.append(dict(
            type="scatter", x=typed_array(np.concatenate(dots["x"])), y=typed_array(np.concatenate(dots["y"])),
            mode="markers", name="exact law (hypergeometric)", cliponaxis=False,
            marker=dict(size=5, color=typed_array(np.concatenate(dots["c"])), colorscale=get_colorscale(COLORSCALE),
                        cmin=cmin, cmax=cmax, line=dict(color="rgba(0,0,0,0.45)", width=0.5), showscale=True,
                        colorbar=dict(title=dict(text="m + n"), thickness=14)),
            customdata=typed_array(np.concatenate(dots["custom"])),
            hovertemplate=("m = %{customdata[0]:.0f}, n = %{customdata[1]:.0f}: Precision@R = %{x:.4f} "
                           "(%{customdata[2]:.0f} hits)<br>exact P = %{customdata[3]:.5f}, "
                           "sampled share = %{customdata[4]:.5f}<extra></extra>")))
        traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=PALETTE["mean"], width=1.4),
                           name="sampled law (steps: share of draws x m)"))
    end = _pmf_visible_end(laws)
    sub = f"M = {M}, N = {N}, sizes (M·i, N·i)" + (f", {draws:,} draws each" if draws else "")
    return fast_figure(traces, layout_dict(
        f"{METRIC_NAMES['pr']} under the null: a discrete law<br><sup>{sub}</sup>", METRIC_NAMES["pr"],
        "probability × m", xaxis=dict(range=[0, end]), legend=dict(LEGEND_BELOW), margin=DRAWN_MARGINS["pmf"]))


def _pmf_visible_end(laws: list[dict]) -> float:
    """Right end of the x range: past the last value whose exact probability is 0.2% of the largest,
    at most 1 (where Precision@R ends)."""
    end = 0.0
    for c in laws:
        exact = np.asarray(c["exact"], dtype=float)
        if exact.size and exact.max() > 0:
            last = np.flatnonzero(exact > 0.002 * exact.max())[-1]
            end = max(end, (last + 0.5) / c["m"])
    return min(1.0, end * 1.05 + 0.01) if end > 0 else 1.0


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
    """Null quantiles and mean versus m, beside m / (m + n), one panel per metric.

    Parameters
    ----------
    summary : DataFrame
        Long table with columns ``m``, ``n``, ``metric`` ("ap"/"pr"), ``statistic`` (q75, q90, q95,
        avg) and ``value``.
    exact_mean : DataFrame, optional
        Columns ``m``, ``value``: the exact E[AP] curve (AP panel).

    Average Precision (blue) sits in the left panel and Precision@R (red) in the right one, on one
    y axis. The legend has one entry per statistic (the dash tells them apart), which shows or hides
    it in both panels at once; each line's own name (e.g. "Average Precision: 95th percentile")
    is in its hover. The grey band M/(M+N) is in both panels: it is the exact mean of Precision@R.
    """
    axes = {"ap": dict(xaxis="x", yaxis="y"), "pr": dict(xaxis="x2", yaxis="y2")}
    traces, drawn = [], set()
    ordered = summary.sort_values("m", kind="stable")
    parts = {key: part for key, part in ordered.groupby(["metric", "statistic"], sort=False)}
    for metric in ("ap", "pr"):
        if metric not in metrics:
            continue
        for stat in statistics:
            part = parts.get((metric, stat))
            if part is None or part.empty:
                continue
            drawn.add(stat)
            traces.append(dict(
                type="scatter", x=part["m"].to_numpy(), y=part["value"].to_numpy(), mode="lines", legendgroup=stat,
                showlegend=False, line=dict(color=PALETTE[metric], dash=DASHES[stat], width=2 if stat == "q95" else 1.5),
                name=f"{METRIC_NAMES[metric]}: {STATISTICS[stat]}", customdata=part[["n"]].to_numpy(),
                hovertemplate=(f"{METRIC_NAMES[metric]} {STATISTICS[stat]}<br>m = %{{x}}, n = %{{customdata[0]}}"
                               "<br>value = %{y:.4f}<extra></extra>"), **axes[metric]))
    # the legend: one entry per statistic, in the neutral colour (the panels tell the metrics apart)
    for stat in statistics:
        if stat in drawn:
            traces.append(dict(
                type="scatter", x=[None], y=[None], mode="lines", legendgroup=stat, name=STATISTICS[stat],
                line=dict(color=PALETTE["mean"], dash=DASHES[stat], width=2 if stat == "q95" else 1.5), **axes["ap"]))
    if exact_mean is not None and len(exact_mean):
        traces.append(dict(
            type="scatter", x=exact_mean["m"].to_numpy(), y=exact_mean["value"].to_numpy(), mode="lines",
            legendgroup="exact", line=dict(color=PALETTE["exact"], width=2.5, dash="dot"), name="exact E[AP]",
            hovertemplate="exact E[AP]<br>m = %{x}<br>%{y:.5f}<extra></extra>", **axes["ap"]))
    ratio = M / (M + N)
    traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=PALETTE["ratio"], width=6),
                       opacity=0.35, name=f"M/(M+N) = {ratio:.4f}", **axes["ap"]))
    # the layout of make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04), as plain dicts
    line = dict(showline=True, linecolor="#999", ticks="outside")
    layout = layout_dict(
        f"Null summary statistics versus size<br><sup>M = {M}, N = {N}; sizes (M·i, N·i)<br>"
        "grey band: M/(M+N), the exact mean of Precision@R</sup>", "m (positives)", "metric value", height=520,
        xaxis=dict(anchor="y", domain=[0.0, 0.48]), yaxis=dict(anchor="x", domain=[0.0, 1.0]),
        xaxis2=dict(anchor="y2", domain=[0.52, 1.0], title=dict(text="m (positives)"), **line),
        yaxis2=dict(anchor="x2", domain=[0.0, 1.0], matches="y", showticklabels=False, rangemode="tozero", **line),
        annotations=[dict(font=dict(size=16), showarrow=False, text=METRIC_NAMES[metric], x=x, xanchor="center",
                          xref="paper", y=1.0, yanchor="bottom", yref="paper")
                     for metric, x in (("ap", 0.24), ("pr", 0.76))],
        shapes=[dict(line=dict(color=PALETTE["ratio"], width=6), opacity=0.35, type="line", x0=0, x1=1,
                     xref=f"{x} domain", y0=ratio, y1=ratio, yref=y) for x, y in (("x", "y"), ("x2", "y2"))
                if any(t["xaxis"] == x for t in traces)],  # the band in every panel holding a line
        margin=dict(t=100, **DRAWN_MARGINS["quantiles"]), legend=dict(LEGEND_BELOW, title=dict(text="click to show or hide: ")))
    return fast_figure(traces, layout)
