"""Plotly figure builders: plain data in, ``go.Figure`` out. No streamlit, testable without a server.

One module per topic: ``null`` (densities, quantiles), ``lookup``, ``binning``, ``hypergeom``,
``ranking``, ``sampled``.
"""

from . import binning, hypergeom, lookup, null, ranking, sampled
from ._style import packed, pending_figure
from .null import density_figure, pmf_figure, quantile_figure, size_colors

__all__ = ["binning", "density_figure", "hypergeom", "lookup", "null", "packed", "pending_figure", "pmf_figure",
           "quantile_figure", "ranking", "sampled", "size_colors"]
