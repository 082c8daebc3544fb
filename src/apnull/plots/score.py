"""Figures of the "Score your data" page: the volcano plot of a screen and one perturbation's
permutation null against its observed mAP. Data from :mod:`apnull.views.score`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._style import LEGEND_BELOW, PALETTE, fast_figure, layout_dict

__all__ = ["volcano_figure", "null_figure", "level_line", "mAP_range", "selected_ring", "pick_layout", "MAX_SVG_POINTS", "SIGNIFICANT",
           "NOT_SIGNIFICANT"]

#: More points than this are drawn with WebGL (Scattergl).
MAX_SVG_POINTS = 5000
SIGNIFICANT = PALETTE["threshold"]
NOT_SIGNIFICANT = PALETTE["ratio"]
SELECTED = PALETTE["exact"]
NULL_BARS = PALETTE["ap"]

_HOVER = ("<b>%{customdata[0]}</b><br>replicates: %{customdata[1]}<br>mAP = %{x:.4f}"
          "<br>p = %{customdata[2]:.3g}<br>q = %{customdata[3]:.3g}<extra></extra>")


def _custom(data: pd.DataFrame) -> np.ndarray:
    return np.column_stack([data["name"].astype(str).to_numpy(dtype=object),
                            data["n_replicates"].to_numpy(dtype=object),
                            data["p_value"].to_numpy(dtype=object), data["q_value"].to_numpy(dtype=object)])


def level_line(y: float, x0: float, x1: float, name: str, color: str, dash: str, hover: str) -> dict:
    """A horizontal line at -log10 p = ``y`` across [x0, x1] (a BH cutoff, the smallest p), with its legend name
    (a plain trace dict, for :func:`._style.fast_figure`)."""
    return dict(type="scatter", x=[x0, x1], y=[y, y], mode="lines", name=name,
                line=dict(color=color, dash=dash, width=1.5), hovertemplate=hover + "<extra></extra>")


def mAP_range(values) -> tuple[float, float]:
    """The x range of a plot of mAP values: their span padded by 5% (at least 0.02) so a point and the
    20 px ring of a selected point are not cut at the edge, within [-pad, 1 + pad]; (0, 1) padded when empty."""
    values = pd.Series(values, dtype=float)
    x0, x1 = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    pad = max(0.05 * (x1 - x0), 0.02)
    return max(-pad, x0 - pad), min(1.0 + pad, x1 + pad)


def volcano_figure(data: pd.DataFrame, fdr: float, cutoff: float | None = None, p_floor: float | None = None,
                   highlight: str | None = None, method: str | None = None, height: int = 480) -> go.Figure:
    """mAP (x) against -log10 p (y), one point per perturbation, coloured by q <= fdr.

    Parameters
    ----------
    data : DataFrame
        :func:`apnull.views.score.volcano_data`: ``name``, ``n_replicates``, ``mAP``, ``p_value``,
        ``q_value``, ``neg_log10_p``, ``significant``.
    fdr : float
        The FDR level q of the colours (legend: ``q ≤ fdr`` and ``q > fdr``).
    cutoff : float, optional
        Largest significant p (:func:`apnull.views.score.p_cutoff`): a dashed line at -log10 of it.
    p_floor : float, optional
        Smallest attainable p, 1 / (1 + B) for B permutations: a dotted line.
    highlight : str, optional
        Name of a perturbation to ring (the one whose null is shown).
    method : str, optional
        The null's name, for the subtitle.

    Traces, in order: ``q ≤ fdr (k)`` and ``q > fdr (k)`` markers (``customdata`` = name, replicates,
    p, q: a click's selection names the perturbation), the points whose p is a bound (``at_floor`` in
    ``data``: no null value reached the observed mAP) as triangles coloured the same way, then the optional lines ``BH cutoff ...`` and
    ``smallest p ...`` and the ring ``selected: <name>``.
    """
    kind = "scattergl" if len(data) > MAX_SVG_POINTS else "scatter"
    size = 9 if len(data) <= 500 else 6
    floor = (data["at_floor"].to_numpy(dtype=bool) if "at_floor" in data else np.zeros(len(data), dtype=bool))
    significant = data["significant"].to_numpy(dtype=bool)
    traces = []
    for flag, color, sign in ((True, SIGNIFICANT, "≤"), (False, NOT_SIGNIFICANT, ">")):
        part = data.loc[(significant == flag) & ~floor]
        traces.append(dict(
            type=kind, x=part["mAP"].to_numpy(), y=part["neg_log10_p"].to_numpy(), mode="markers",
            name=f"q {sign} {fdr:g} ({len(part):,})",
            marker=dict(color=color, size=size, opacity=0.85, line=dict(color="white", width=0.5)),
            customdata=_custom(part), hovertemplate=_HOVER))
    if floor.any():
        part = data.loc[floor]
        colors = np.where(significant[floor], SIGNIFICANT, NOT_SIGNIFICANT)
        traces.append(dict(
            type=kind, x=part["mAP"].to_numpy(), y=part["neg_log10_p"].to_numpy(), mode="markers",
            name=f"no shuffle reached it: p is a bound ({len(part):,})",
            marker=dict(color=colors.tolist(), size=size + 3, symbol="triangle-up", opacity=0.9,
                        line=dict(color="black", width=1)),
            customdata=_custom(part), hovertemplate=_HOVER.replace("<br>p = ", "<br>p ≤ ")))
    x0, x1 = mAP_range(data["mAP"])
    if cutoff is not None:
        y = -np.log10(max(cutoff, 1e-300))
        traces.append(level_line(y, x0, x1, f"BH cutoff: p ≤ {cutoff:.3g}", SIGNIFICANT, "dash",
                                 f"q ≤ {fdr:g} for every p ≤ {cutoff:.4g}<br>-log10 p = {y:.3f}"))
    if p_floor is not None:
        y = -np.log10(p_floor)
        traces.append(level_line(y, x0, x1, f"smallest p = {p_floor:.3g}", PALETTE["mean"], "dot",
                                 f"smallest attainable p = 1/(1 + permutations) = {p_floor:.4g}"))
    if highlight is not None:
        sel = data.loc[data["name"].astype(str) == str(highlight)]
        if len(sel):
            traces.append(selected_ring(sel, highlight, size + 10, _custom(sel), _HOVER))
    sub = f"{len(data):,} perturbations" + (f"; {method} null" if method else "")
    tops = [float(data["neg_log10_p"].max()) if len(data) else 1.0]
    tops += [-np.log10(max(v, 1e-300)) for v in (cutoff, p_floor) if v is not None]
    return fast_figure(traces, pick_layout(
        f"Volcano plot: mAP against its p-value<br><sup>{sub}; click a point to see its null</sup>",
        "mAP (mean AP over the replicates)", (x0, x1), 1.08 * max(tops) + 0.05, height))


def selected_ring(sel: pd.DataFrame, name: str, size: float, customdata, hover: str) -> dict:
    """The ring around the chosen point of a clickable mAP plot (``selected: <name>``), a trace dict."""
    return dict(type="scatter", x=sel["mAP"].to_numpy(), y=sel["neg_log10_p"].to_numpy(), mode="markers",
                name=f"selected: {name}", marker=dict(size=size, color="rgba(0,0,0,0)",
                                                      line=dict(color=SELECTED, width=2.5)),
                customdata=customdata, hovertemplate=hover)


def pick_layout(title: str, x_title: str, x_range: tuple[float, float], y_top: float, height: int) -> dict:
    """The layout of a clickable plot of mAP against -log10 p (the volcano, the labels figure): legend
    under the x axis, a click selects a point, dragging pans."""
    return layout_dict(title, x_title, "-log10 p-value", height=height, legend=dict(LEGEND_BELOW),
                       margin=dict(t=70), clickmode="event+select", dragmode="pan",
                       xaxis=dict(range=list(x_range)), yaxis=dict(range=[0, y_top]))


def null_figure(hist: pd.DataFrame, observed: float, name: str, p_value: float, q_value: float | None = None,
                permutations: int | None = None, n_replicates: int | None = None, null_mean: float | None = None,
                height: int = 480) -> go.Figure:
    """The permutation null of one perturbation's mAP (bars) with its observed mAP (green dashed line).

    ``hist``: :func:`apnull.views.score.null_histogram` (``left``, ``right``, ``centre``, ``count``,
    ``share``). Traces: bars ``null``, the line ``observed mAP = ...`` and, if ``null_mean`` is given,
    the dotted line ``null mean = ...``. The title gives the name, mAP and p (and q).
    """
    width = float(hist["right"].iloc[0] - hist["left"].iloc[0])
    traces = [dict(
        type="bar", x=hist["centre"].to_numpy(), y=hist["share"].to_numpy(), width=width, name="null",
        showlegend=False, marker=dict(color=NULL_BARS, line=dict(width=0)), opacity=0.75,
        customdata=hist[["left", "right", "count"]].to_numpy(),
        hovertemplate=("null mAP in [%{customdata[0]:.4f}, %{customdata[1]:.4f})<br>%{customdata[2]:,.0f} "
                       "permutations (share %{y:.4f})<extra></extra>"))]
    top = float(hist["share"].max()) * 1.08 or 1.0
    traces.append(dict(type="scatter", x=[observed, observed], y=[0, top], mode="lines",
                       name=f"observed mAP = {observed:.4f}", line=dict(color=PALETTE["value"], dash="dash", width=3),
                       hovertemplate=f"observed mAP = {observed:.6f}<br>p = {p_value:.4g}<extra></extra>"))
    if null_mean is not None:
        traces.append(dict(type="scatter", x=[null_mean, null_mean], y=[0, top], mode="lines",
                           name=f"null mean = {null_mean:.4f}", line=dict(color=PALETTE["mean"], dash="dot", width=2),
                           hovertemplate=f"mean of the null = {null_mean:.6f}<extra></extra>"))
    q_part = f", q = {q_value:.3g}" if q_value is not None and np.isfinite(q_value) else ""
    details = []
    if n_replicates is not None:
        details.append(f"{int(n_replicates)} replicates")
    if permutations is not None:
        details.append(f"{int(permutations):,} label permutations")
    return fast_figure(traces, layout_dict(
        f"{name}: mAP = {observed:.4f}, p = {p_value:.3g}{q_part}<br><sup>permutation null of the mAP"
        + (f" ({', '.join(details)})" if details else "") + "</sup>",
        "mAP", f"share of permutations per bin of {width:.3g}", height=height, bargap=0,
        legend=dict(LEGEND_BELOW), margin=dict(t=70), yaxis=dict(range=[0, top * 1.02])))
