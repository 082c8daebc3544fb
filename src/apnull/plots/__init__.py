"""Plotly figure builders: plain data in, ``go.Figure`` out. No streamlit, testable without a server."""

from .null import density_figure, quantile_figure, size_colors

__all__ = ["density_figure", "quantile_figure", "size_colors"]
