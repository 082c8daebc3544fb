"""Figure of one null law with its threshold and an observed value (the threshold lookup page)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ._style import METRIC_NAMES, PALETTE, fast_figure, layout_dict

__all__ = ["law_figure", "pmf_bars", "law_window", "MAX_STEMS", "TARGET_BARS"]

#: Laws with at most this many support points are drawn as stems, one per value.
MAX_STEMS = 150
#: Wider laws are binned so that about this many bars cover the visible window.
TARGET_BARS = 100
#: Never more bars than this in one figure (the whole support is binned, not only the window).
MAX_BARS = 2000
SHORT = {"ap": "AP", "pr": "Precision@R"}
#: Colours of the pmf: never the threshold's red, which marks a line on top of it.
PMF_COLORS = {"ap": PALETTE["ap"], "pr": "#9467bd"}


def law_window(law, marks=(), tail: float = 1e-4) -> tuple[float, float]:
    """x range worth showing: the law's central 1 - 2*tail mass and every marked value, padded, in [0, 1]."""
    vals = [float(law.quantile(tail)), float(law.quantile(1 - tail))]
    vals += [float(v) for v in marks if v is not None and np.isfinite(v)]
    lo, hi = min(vals), max(vals)
    pad = max(0.04 * (hi - lo), 0.01)
    return max(0.0, lo - pad), min(1.0, hi + pad)


def pmf_bars(values, probs, lo: float, hi: float, bars: int = TARGET_BARS) -> pd.DataFrame:
    """Probabilities summed into equal bins of width (hi - lo) / bars, aligned on lo.

    The bins cover the whole support (also outside [lo, hi]), so no probability is dropped; at most
    MAX_BARS bins (wider ones otherwise). Returns the non-empty bins: ``left``, ``right``, ``centre``,
    ``prob`` (probability of the bin), ``points`` (support values in it).
    """
    values = np.asarray(values, dtype=float)
    probs = np.asarray(probs, dtype=float)
    width = (hi - lo) / bars if hi > lo else 1.0 / bars
    span = values.max() - values.min() if values.size else 0.0
    if span / width > MAX_BARS:
        width = span / MAX_BARS
    idx = np.floor((values - lo) / width + 1e-9).astype(np.int64)
    uniq, inv = np.unique(idx, return_inverse=True)
    prob = np.bincount(inv, weights=probs, minlength=uniq.size)
    points = np.bincount(inv, minlength=uniq.size)
    left = lo + uniq * width
    return pd.DataFrame({"left": left, "right": left + width, "centre": left + width / 2, "prob": prob,
                         "points": points})


def _method_words(law) -> str:
    """The law's method for a subtitle: the grid law by its accuracy (its G is for the tooltip-less
    expert only), the others as they describe themselves."""
    if law.method == "grid":
        return f"grid law, within ±{law.error_bound:.2g}"
    return law.describe()


def _vline(x: float, top: float, name: str, color: str, dash: str, width: float, hover: str) -> dict:
    return dict(type="scatter", x=[x, x], y=[0, top], mode="lines", name=name,
                line=dict(color=color, dash=dash, width=width), hovertemplate=hover + "<extra></extra>")


def law_figure(law, threshold: float, value: float | None = None, mean: float | None = None,
               q: float | None = None, height: int = 470) -> go.Figure:
    """The null pmf of one metric with its threshold, an observed value, M/(M+N) and the mean.

    Parameters
    ----------
    law : apnull.NullDistribution
        Exact, grid or Monte Carlo law (``values``, ``probs``, ``metric``, ``m``, ``n``, ``method``).
        Laws with at most MAX_STEMS support points are drawn as stems (exact probabilities; for
        exact AP laws the hover also gives the count of placements); wider laws (many exact AP
        values, the grid law, a Monte Carlo sample) as about TARGET_BARS bars, each the probability
        (share of draws for Monte Carlo) of an interval of AP.
    threshold : float
        The null threshold (red line).
    value : float, optional
        The observed value (green dashed line).
    mean : float, optional
        The exact mean (black dotted): E[AP] in closed form, or m/(m+n) for Precision@R. Without
        it the law's own mean is drawn and labelled as such.
    q : float, optional
        The level of the threshold, for its label.

    Traces, in order: the pmf (stems: a line trace ``pmf stems`` and a marker trace ``pmf``; bars:
    one bar trace ``pmf``), then vertical lines named ``threshold ...``, ``observed ...``,
    ``M/(M+N) ...`` and ``mean ...``; each line goes from 0 to just above the tallest bar. Built from
    plain dicts (no plotly validation; tests/test_plots_validation.py holds it to the validated JSON).
    """
    metric, m, n = law.metric, law.m, law.n
    short = SHORT[metric]
    values, probs = law.values, law.probs
    ratio = m / (m + n)
    own_mean = mean is None
    mean = float(law.mean) if own_mean else float(mean)
    lo, hi = law_window(law, (threshold, value, mean, ratio))
    traces = []
    mc = law.method == "mc"
    p_word = "share of draws" if mc else "P"
    if values.size <= MAX_STEMS:
        top = float(probs.max())
        xs = np.repeat(values, 3)
        ys = np.column_stack([np.zeros_like(probs), probs, np.full_like(probs, np.nan)]).ravel()
        xs = xs.astype(object)
        xs[2::3] = None
        ys = ys.astype(object)
        ys[2::3] = None
        traces.append(dict(type="scatter", x=list(xs), y=list(ys), mode="lines", name="pmf stems", showlegend=False,
                           hoverinfo="skip", line=dict(color=PMF_COLORS[metric], width=2)))
        if law.counts is not None and law.total is not None:
            custom = np.column_stack([np.asarray(law.counts, dtype=float), np.full(values.size, float(law.total))])
            extra = "<br>%{customdata[0]:,.0f} of %{customdata[1]:,.0f} placements"
        else:
            custom, extra = None, ""
        traces.append(dict(
            type="scatter", x=values, y=probs, mode="markers", name="pmf", marker=dict(color=PMF_COLORS[metric], size=7),
            showlegend=False, hovertemplate=f"{short} = %{{x:.6f}}<br>{p_word} = %{{y:.6g}}{extra}<extra></extra>",
            **({} if custom is None else {"customdata": custom}),
        ))
        y_title = "share of draws" if mc else "probability"
        x_range = [max(0.0, min(lo, values.min() - 0.03)), min(1.0, max(hi, values.max() + 0.03))]
        x_range = [x_range[0] - 0.01, x_range[1] + 0.01]
    else:
        bars = pmf_bars(values, probs, lo, hi)
        top = float(bars["prob"].max())
        custom = bars[["left", "right", "points"]].to_numpy()
        traces.append(dict(
            type="bar", x=bars["centre"].to_numpy(), y=bars["prob"].to_numpy(),
            width=float(bars["right"].iloc[0] - bars["left"].iloc[0]),
            name="pmf", marker=dict(color=PMF_COLORS[metric], line=dict(width=0)), opacity=0.75, showlegend=False,
            customdata=custom,
            hovertemplate=(f"{short} in [%{{customdata[0]:.5f}}, %{{customdata[1]:.5f}})"
                           f"<br>{p_word} = %{{y:.6g}}<br>%{{customdata[2]:,.0f}} distinct values<extra></extra>"),
        ))
        width = float(bars["right"].iloc[0] - bars["left"].iloc[0])
        y_title = f"{p_word if mc else 'probability'} per bin of {width:.3g}"
        x_range = [lo, hi]
    top *= 1.08
    level = f"{q * 100:g}% " if q is not None else ""
    traces.append(_vline(threshold, top, f"threshold {level}= {threshold:.5g}", PALETTE["threshold"], "solid", 2.5,
                         f"{level}null threshold<br>{short} = {threshold:.6f}"))
    if value is not None:
        traces.append(_vline(value, top, f"observed {short} = {value:g}", PALETTE["value"], "dash", 2.5,
                             f"observed {short} = {value:.6f}"))
    traces.append(_vline(ratio, top, f"M/(M+N) = {ratio:.4f}", PALETTE["ratio"], "solid", 2,
                         f"M/(M+N) = {m}/{m + n} = {ratio:.6f}"))
    mean_name = (f"mean of the {'sample' if mc else 'law'} = {mean:.4f}" if own_mean
                 else f"mean E[{short}] = {mean:.4f}")
    traces.append(_vline(mean, top, mean_name, PALETTE["exact"], "dot", 2,
                         mean_name.replace(f" = {mean:.4f}", f" = {mean:.6f}")))
    # the legend goes below the x axis title (4 entries wrap onto up to 4 rows in a half-width column)
    return fast_figure(traces, layout_dict(
        f"{METRIC_NAMES[metric]} under the null<br><sup>m = {m}, n = {n}; {_method_words(law)}</sup>",
        METRIC_NAMES[metric], y_title, height=height, xaxis=dict(range=x_range), yaxis=dict(range=[0, top * 1.02]),
        legend=dict(orientation="h", yanchor="top", y=-0.25, xanchor="left", x=0), margin=dict(b=130, t=70),
        bargap=0))
