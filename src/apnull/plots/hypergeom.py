"""Figures of the hypergeometric check: Precision@K histograms and AP versus Precision@K."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import FONT, LEGEND_BELOW, PALETTE, TEMPLATE, fast_figure, layout_dict

#: Colour and dash of each threshold line, by the names of apnull.hypergeom.thresholds_table.
LINE_STYLES = {
    "m / (m + n)": dict(color="#7f7f7f", dash="solid"),
    "empirical mean": dict(color="#1f77b4", dash="dash"),
    "95% chance threshold": dict(color=PALETTE["threshold"], dash="dot"),
}
BAR_COLORS = {"shuffled": "#4c78a8", "hypergeometric": "#f58518"}
PMF_COLOR = PALETTE["exact"]


def _hits(precision, k: int) -> np.ndarray:
    return np.rint(np.asarray(precision, dtype=float) * k).astype(np.int64)


def histogram_data(precision, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(hits j, count of draws with j hits) for every j = 0..max hit seen (zeros kept)."""
    hits = _hits(precision, k)
    counts = np.bincount(hits, minlength=1) if hits.size else np.zeros(1, dtype=np.int64)
    return np.arange(counts.size), counts


def precision_histograms(shuffled, hyper, k: int, thresholds, pmf=None, m: int | None = None,
                         n: int | None = None) -> go.Figure:
    """Two histograms of Precision@K on a shared x axis: shuffled labels (top) and hypergeometric draws.

    Parameters
    ----------
    shuffled, hyper : array_like of float
        Precision@K draws (values j / k).
    k : int
        The cut-off; bars sit at j / k and are 0.6 / k wide.
    thresholds : DataFrame or list of (name, value)
        The threshold lines (``apnull.hypergeom.thresholds_table``): drawn as vertical lines in both
        panels, one legend entry each.
    pmf : (hits, probs), optional
        The exact hypergeometric pmf, drawn as markers on both panels.
    m, n : int, optional
        For the title.

    The bar height is the share of draws (so the exact pmf sits on the same scale); hover gives
    the value, the hit count, the number of draws and the exact probability.
    """
    samples = {"shuffled": np.asarray(shuffled, dtype=float), "hypergeometric": np.asarray(hyper, dtype=float)}
    titles = {
        "shuffled": f"Shuffled labels ({samples['shuffled'].size:,} rankings)",
        "hypergeometric": f"Hypergeometric draws ({samples['hypergeometric'].size:,} draws)",
    }
    # the layout of make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12), as plain dicts
    axes = {1: dict(xaxis="x", yaxis="y"), 2: dict(xaxis="x2", yaxis="y2")}
    traces = []
    exact = {}
    if pmf is not None:
        ph, pp = (np.asarray(a) for a in pmf)
        exact = {int(h): float(p) for h, p in zip(ph, pp)}
    ymax = 0.0
    for row, (name, x) in enumerate(samples.items(), start=1):
        hits, counts = histogram_data(x, k)
        share = counts / max(x.size, 1)
        ymax = max(ymax, float(share.max()) if share.size else 0.0)
        custom = np.column_stack([hits, counts, [exact.get(int(h), 0.0) for h in hits]])
        traces.append(dict(
            type="bar", x=hits / k, y=share, width=0.6 / k, marker=dict(color=BAR_COLORS[name]), name=name,
            legendgroup=name, customdata=custom,
            hovertemplate=(f"{name}<br>Precision@{k} = %{{x:.4f}} (%{{customdata[0]:.0f}} hits)"
                           "<br>share = %{y:.4f} (%{customdata[1]:,.0f} draws)"
                           "<br>exact P = %{customdata[2]:.4f}<extra></extra>"), **axes[row]))
    if exact:
        ph = np.array(sorted(exact))
        pp = np.array([exact[h] for h in ph])
        ymax = max(ymax, float(pp.max()))
        for row in (1, 2):
            traces.append(dict(
                type="scatter", x=ph / k, y=pp, mode="markers", name="exact hypergeometric pmf", legendgroup="pmf",
                showlegend=row == 1, customdata=ph,
                marker=dict(symbol="diamond", size=10, color="rgba(0,0,0,0)", line=dict(color=PMF_COLOR, width=2)),
                hovertemplate=(f"exact pmf<br>Precision@{k} = %{{x:.4f}} (%{{customdata}} hits)"
                               "<br>P = %{y:.5f}<extra></extra>"), **axes[row]))
    rows = list(thresholds.itertuples(index=False, name=None)) if hasattr(thresholds, "itertuples") else list(thresholds)
    top = ymax * 1.08 if ymax > 0 else 1.0
    for name, value in rows:
        style = LINE_STYLES.get(name, dict(color="#2ca02c", dash="dashdot"))
        for row in (1, 2):
            traces.append(dict(
                type="scatter", x=[value, value], y=[0, top], mode="lines", line=dict(width=2.2, **style),
                name=f"{name} = {value:.4f}", legendgroup=f"line-{name}", showlegend=row == 1,
                hovertemplate=f"{name}<br>Precision@{k} = {value:.6f}<extra></extra>", **axes[row]))
    size = f"m = {m}, n = {n}, k = {k}" if m is not None else f"k = {k}"
    line = dict(showline=True, linecolor="#999", ticks="outside")
    x_range = [-0.5 / k, 1 + 0.5 / k]
    y_axis = dict(title=dict(text="share of draws"), range=[0, top * 1.02], **line)
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 1.0], matches="x2", showticklabels=False, range=x_range, **line),
        yaxis=dict(anchor="x", domain=[0.56, 1.0], **y_axis),
        xaxis2=dict(anchor="y2", domain=[0.0, 1.0], range=x_range, title=dict(text=f"Precision@{k}"), **line),
        yaxis2=dict(anchor="x2", domain=[0.0, 0.44], **y_axis),
        annotations=[dict(font=dict(size=16), showarrow=False, text=titles[name], x=0.5, xanchor="center",
                          xref="paper", y=y, yanchor="bottom", yref="paper")
                     for name, y in (("shuffled", 1.0), ("hypergeometric", 0.44))],
        title=dict(text=f"Precision@{k} under the null<br><sup>shuffled labels against the hypergeometric law"
                        f"<br>{size}; bars: share of draws; diamonds: exact pmf</sup>", x=0, xanchor="left"),
        height=700, font=FONT, template=TEMPLATE, margin=dict(l=60, r=20, t=100, b=60),
        hovermode="closest", bargap=0, legend=dict(LEGEND_BELOW),
    )
    return fast_figure(traces, layout)


def ap_precision_scatter(precision, ap, k: int, max_points: int = 4000, jitter: float = 0.3,
                         expected_ap: float | None = None, ap_threshold: float | None = None,
                         seed: int = 0) -> go.Figure:
    """AP versus Precision@K of the same shuffled rankings (one point per shuffled ranking).

    Precision@K takes only k + 1 values, so the points are jittered sideways by up to
    ``jitter / k`` (hover shows the exact, unjittered values). At most ``max_points`` points are
    drawn (the first ones: the draws are independent, so they are a random subset); the mean AP at
    each Precision@K value uses every draw and is drawn as a diamond whose size grows with the
    number of draws. Optional horizontal lines: the exact E[AP] and the AP 95% threshold.
    """
    precision = np.asarray(precision, dtype=float)
    ap = np.asarray(ap, dtype=float)
    total = precision.size
    shown = min(total, int(max_points))
    x, y = precision[:shown], ap[:shown]
    rng = np.random.default_rng(seed)
    xj = x + rng.uniform(-jitter / k, jitter / k, size=shown)
    traces = [dict(
        type="scattergl", x=xj, y=y, mode="markers", name=f"one shuffled ranking ({shown:,} shown)",
        marker=dict(size=5, color=PALETTE["ap"], opacity=0.35), customdata=np.column_stack([x, y]),
        hovertemplate=(f"Precision@{k} = %{{customdata[0]:.4f}}<br>AP = %{{customdata[1]:.6f}}"
                       "<extra>shuffled ranking</extra>"),
    )]
    hits = _hits(precision, k)
    counts = np.bincount(hits)
    sums = np.bincount(hits, weights=ap)
    have = counts > 0
    h = np.nonzero(have)[0]
    means = sums[have] / counts[have]
    sizes = 8 + 30 * np.sqrt(counts[have] / counts.max())
    traces.append(dict(
        type="scatter", x=h / k, y=means, mode="markers", name="mean AP at this Precision@K (size: draws)",
        marker=dict(symbol="diamond", size=sizes, color="#ff7f0e", line=dict(color="#333", width=1)),
        customdata=np.column_stack([h, counts[have], counts[have] / total]),
        hovertemplate=(f"Precision@{k} = %{{x:.4f}} (%{{customdata[0]:.0f}} hits)<br>mean AP = %{{y:.6f}}"
                       "<br>draws = %{customdata[1]:,.0f} (%{customdata[2]:.2%})<extra></extra>"),
    ))
    for value, name, color, dash in ((expected_ap, "exact E[AP]", PALETTE["mean"], "dash"),
                                     (ap_threshold, "exact AP 95% threshold", PALETTE["threshold"], "dot")):
        if value is None:
            continue
        traces.append(dict(
            type="scatter", x=[-0.5 / k, 1 + 0.5 / k], y=[value, value], mode="lines",
            line=dict(color=color, dash=dash, width=2), name=f"{name} = {value:.4f}",
            hovertemplate=f"{name} = {value:.6f}<extra></extra>",
        ))
    sub = f"{shown:,} of {total:,} draws shown, jittered sideways" if shown < total else f"{total:,} draws, jittered sideways"
    layout = layout_dict(f"AP versus Precision@{k}<br><sup>each point: one shuffled ranking, both scores<br>{sub}</sup>",
                         f"Precision@{k}", "Average Precision", height=560, margin=dict(t=75, b=60),
                         legend=dict(LEGEND_BELOW, itemsizing="constant"),  # the diamonds' sizes vary: one symbol size
                         xaxis=dict(range=[-0.5 / k, 1 + 0.5 / k]), yaxis=dict(range=[0, 1.02]))
    return fast_figure(traces, layout)
