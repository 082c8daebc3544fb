"""Shared look of the project's figures."""

import plotly.graph_objects as go
import plotly.io as pio

COLORSCALE = "Viridis"
FONT = dict(family="Inter, Source Sans Pro, sans-serif", size=13)
METRIC_NAMES = {"ap": "Average Precision", "pr": "Precision@R"}
#: plotly_white's layout only, built once: naming the whole template copies it on every figure, and a
#: plain dict is validated again on every figure (about 40 ms each).
TEMPLATE = go.layout.Template(layout=pio.templates["plotly_white"].layout)
PALETTE = {"ap": "#1f77b4", "pr": "#d62728", "mean": "#555555", "ratio": "#9e9e9e", "exact": "#111111",
           "threshold": "#e45756", "value": "#2ca02c"}


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 430) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left"), height=height, font=FONT, template=TEMPLATE,
        margin=dict(l=60, r=20, t=60, b=50), hovermode="closest",
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1),
    )
    fig.update_xaxes(title=x_title, showline=True, linecolor="#999", ticks="outside")
    fig.update_yaxes(title=y_title, showline=True, linecolor="#999", ticks="outside", rangemode="tozero")
    return fig


def pending_figure(title: str, x_title: str, y_title: str, note: str = "computing...") -> go.Figure:
    """An empty figure with the axes and title of one still being computed (the page's placeholder)."""
    fig = go.Figure()
    base_layout(fig, f"{title}<br><sup>{note}</sup>", x_title, y_title)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1], showticklabels=False)
    return fig
