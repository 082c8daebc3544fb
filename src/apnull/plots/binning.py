"""Figures of the n-binning: the breakpoint diagram and what binning does to the threshold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._style import LEGEND_BELOW, METRIC_NAMES, PALETTE, fast_figure, layout_dict

__all__ = ["breakpoint_figure", "threshold_binning_figure", "threshold_error_figure", "bin_edge_trace"]

SHORT = {"ap": "AP", "pr": "Precision@R"}
EDGE_COLOR = "#e0e0e0"
BINNED_COLOR = "#ff7f0e"


def breakpoint_figure(bps, max_value: float, power: float) -> go.Figure:
    """Break width (distance to the previous breakpoint) versus breakpoint, lines and points.

    The bin-width diagram: x = ``bps[1:]``, y = ``np.diff(bps)``; the first breakpoint (1) has no width.
    Hover gives the bin number, the breakpoint and the width. Built from plain dicts (no plotly
    validation; tests/test_plots_validation.py holds it to the validated JSON), as are the other figures here.

    With one breakpoint (``max_value`` below ``2^power``) there is no width to draw: the figure says so in
    its middle and what to change, rather than showing empty axes.
    """
    bps = np.asarray(bps, dtype=float)
    x, y = bps[1:], np.diff(bps)
    trace = dict(type="scatter", x=x, y=y, mode="lines+markers", name="break width",
                 line=dict(color=PALETTE["ap"], width=2), marker=dict(size=6), customdata=np.arange(2, bps.size + 1),
                 hovertemplate="breakpoint %{customdata} = %{x:.4f}<br>width = %{y:.4f}<extra></extra>")
    count = f"{bps.size} breakpoint{'s' if bps.size != 1 else ''}"
    extra = {}
    if bps.size < 2:
        extra["annotations"] = [dict(
            text=f"Only breakpoint 1 (1 to the power {power:g}) is at most {max_value:g}, so there is no width "
                 f"to draw.<br>The next breakpoint, 2 to the power {power:g}, is {2.0 ** power:.4g}: raise max "
                 "past it or lower the power.", xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False)]
        extra["xaxis"], extra["yaxis"] = dict(visible=False), dict(visible=False)
    return fast_figure([trace], layout_dict(
        f"Nonlinear breakpoints<br><sup>breakpoint i is i to the power {power:g}, for i = 1, 2, 3, ...<br>"
        f"while it stays at most {max_value:g}: {count}, the last at {bps[-1]:.1f}</sup>",
        "break point", "break width", height=380, margin=dict(t=75), **extra))


def _edges(first_n, top: float, bottom: float = 0.0) -> dict:
    """The trace of :func:`bin_edge_trace` as a plain dict."""
    edges = np.asarray(first_n, dtype=float) - 0.5
    xs, ys = [], []
    for e in edges.tolist():
        xs += [e, e, None]
        ys += [bottom, top, None]
    return dict(type="scatter", x=xs, y=ys, mode="lines", name="bin edges", line=dict(color=EDGE_COLOR, width=1),
                hoverinfo="skip")


def bin_edge_trace(first_n, top: float, bottom: float = 0.0) -> go.Scatter:
    """One trace of thin vertical lines between bins, at first_n - 0.5 (n is a whole number)."""
    return go.Scatter(_edges(first_n, top, bottom))


def _hover_data(cost: pd.DataFrame) -> np.ndarray:
    return cost[["bin", "representative_n", "threshold", "binned_threshold", "difference"]].to_numpy(dtype=float)


_HOVER = ("n = %{x}<br>bin %{customdata[0]:.0f}, representative n = %{customdata[1]:.0f}"
          "<br>threshold at n = %{customdata[2]:.6f}<br>threshold at representative = %{customdata[3]:.6f}"
          "<br>difference = %{customdata[4]:+.6f}<extra></extra>")


def threshold_binning_figure(cost: pd.DataFrame, first_n, m: int, q: float, metric: str,
                             representative: str) -> go.Figure:
    """Threshold at each n (line) and at its bin's representative n (steps) against n.

    Parameters
    ----------
    cost : DataFrame
        :func:`apnull.binning_cost.binning_cost` output (n, bin, representative_n, threshold,
        binned_threshold, difference).
    first_n : array_like
        First n of every bin >= 1 (bin edges are drawn before them).

    Traces, bottom to top: ``bin edges``, ``threshold at the bin's representative (...)`` (shape
    "hv": constant over a bin), ``representatives`` (markers at the representative n), ``threshold
    at n``.
    """
    n = cost["n"].to_numpy()
    threshold, binned = cost["threshold"].to_numpy(), cost["binned_threshold"].to_numpy()
    lo = float(min(threshold.min(), binned.min()))
    hi = float(max(threshold.max(), binned.max()))
    pad = 0.05 * (hi - lo) if hi > lo else 0.05
    custom = _hover_data(cost)
    reps = np.unique(cost["representative_n"].to_numpy())
    rep_thr = threshold[np.searchsorted(n, reps)]  # n runs 0, 1, ..., max
    traces = [
        _edges([f for f in first_n if f <= n.max()], hi + pad, max(0.0, lo - pad)),
        # the binned steps are wide and pale, the exact curve thin and dark on top: both stay visible
        dict(type="scatter", x=n, y=binned, mode="lines", line=dict(color=BINNED_COLOR, width=4, shape="hv"),
             name=f"threshold at the bin's representative ({representative})", opacity=0.75, customdata=custom,
             hovertemplate=_HOVER),
        dict(type="scatter", x=reps, y=rep_thr, mode="markers", name="representatives",
             marker=dict(color=BINNED_COLOR, size=7, symbol="circle-open", line=dict(width=1.5)),
             hovertemplate="representative n = %{x}<br>threshold = %{y:.6f}<extra></extra>"),
        dict(type="scatter", x=n, y=threshold, mode="lines", name="threshold at n",
             line=dict(color=PALETTE[metric], width=1.5), customdata=custom, hovertemplate=_HOVER),
    ]
    short = SHORT[metric]
    return fast_figure(traces, layout_dict(
        f"{METRIC_NAMES[metric]} threshold at each n"
        f"<br><sup>line: at n; steps: at the representative n of its bin ({representative})"
        f"<br>m = {m}, q = {q:g}; grey lines: bin edges</sup>",
        "n (negatives)", f"{short} threshold (q = {q:g})", height=440, margin=dict(t=75), legend=dict(LEGEND_BELOW),
        yaxis=dict(range=[max(0.0, lo - pad), hi + pad], rangemode="normal"), xaxis=dict(range=[-1, n.max() + 1])))


def threshold_error_figure(cost: pd.DataFrame, first_n, m: int, q: float, metric: str,
                           representative: str) -> go.Figure:
    """The threshold error of binning (threshold at the representative - threshold at n) against n.

    Bars above zero: the binned test is stricter than the exact one at that n; below zero: it is
    more lenient (lets through scores the exact null would reject). Traces: ``bin edges``,
    ``stricter (binned > exact)``, ``more lenient (binned < exact)``, ``no change`` (markers at 0).
    """
    diff = cost["difference"].to_numpy(dtype=float)
    n = cost["n"].to_numpy()
    custom = _hover_data(cost)
    big = float(np.abs(diff).max()) if diff.size else 0.0
    top = big * 1.1 if big > 0 else 0.01
    low = -top if (diff < 0).any() else -0.05 * top
    traces = [_edges([f for f in first_n if f <= n.max()], top, low)]
    groups = [("stricter (binned > exact)", diff > 1e-12, PALETTE["ap"]),
              ("more lenient (binned < exact)", diff < -1e-12, PALETTE["threshold"])]
    for name, mask, color in groups:
        traces.append(dict(type="bar", x=n[mask], y=diff[mask], name=name, marker=dict(color=color, line=dict(width=0)),
                           width=0.8, customdata=custom[mask], hovertemplate=_HOVER))
    same = np.abs(diff) <= 1e-12
    traces.append(dict(type="scatter", x=n[same], y=np.zeros(int(same.sum())), mode="markers", name="no change",
                       marker=dict(color="#999999", size=3), customdata=custom[same], hovertemplate=_HOVER))
    short = SHORT[metric]
    return fast_figure(traces, layout_dict(
        f"What binning costs ({short} threshold)"
        f"<br><sup>threshold at the representative n of the bin minus at n"
        f"<br>m = {m}, q = {q:g}, representative = {representative}; grey lines: bin edges</sup>",
        "n (negatives)", "threshold error", height=400, margin=dict(t=75), legend=dict(LEGEND_BELOW), bargap=0,
        barmode="overlay",
        yaxis=dict(range=[low, top], rangemode="normal", zeroline=True, zerolinecolor="#666"),
        xaxis=dict(range=[-1, n.max() + 1])))
