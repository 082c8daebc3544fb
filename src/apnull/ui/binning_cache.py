"""Bounded cache of the "Binning n" page, shared by every session of the server.

Building the page's three plotly figures costs about 0.3 s of Python per input set (the threshold
curve itself is one pass, cached by :mod:`apnull.binning_cost`), so the whole view (bins, cost
table, summary and figures) is kept per input set in ``VIEWS``, a :class:`apnull.memo.Memo` of
64 entries and 64 MB (a view with max = 5,000 is about 0.5 MB); a rerun with cached inputs only
sends the figures. Tables and figures are shared: the page only reads them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..binning import bin_table, breakpoints
from ..binning_cost import binning_cost, binning_summary
from ..memo import Memo, freeze, rough_nbytes
from ..plots import packed
from ..plots.binning import breakpoint_figure, threshold_binning_figure, threshold_error_figure
from .pageview import PageView

VIEWS = Memo(64, max_bytes=64 * 2**20, sizeof=rough_nbytes)


class BinningView(NamedTuple):
    """Everything the page shows for one input set."""

    breakpoints: np.ndarray
    bins: pd.DataFrame
    cost: pd.DataFrame
    summary: dict
    breakpoint_figure: object
    threshold_figure: object
    error_figure: object
    #: (method, first n, last n) of each method the thresholds came from ("exact" or "grid")
    methods: tuple


def _view(m, q, max_value, power, representative, metric) -> BinningView:
    """The page's tables and figures; ValueError (not cached) for inputs out of range."""
    bps = freeze(breakpoints(max_value, power))
    bins = bin_table(max_value, power)
    cost = binning_cost(m, q, max_value, power, representative, metric)
    first_n = bins["first_n"].to_numpy()
    return BinningView(bps, bins, cost, binning_summary(cost), packed(breakpoint_figure(bps, max_value, power)),
                       packed(threshold_binning_figure(cost, first_n, m, q, metric, representative)),
                       packed(threshold_error_figure(cost, first_n, m, q, metric, representative)),
                       tuple((meth, int(row["min"]), int(row["max"]))
                             for meth, row in cost.groupby("method")["n"].agg(["min", "max"]).iterrows()))


#: the page's view of (m, q, max_value, power, representative, metric) (``binning_view.ready(...)``: stored)
binning_view = PageView(VIEWS, _view)
