"""Bounded caches of the "Hypergeometric check" page, shared by every session of the server.

Each is a :class:`apnull.memo.Memo` (nothing pickled per rerun, arrays stored read-only, tables and
figures only read by the page). Bounds (entries, bytes; least recently used dropped first):

- ``BLOCKS``: one block of shuffled rankings (Precision@K and AP, 16 bytes a draw) per
  (m, n, k, seed, block): 512 entries, 64 MB. A block is one compiled call
  (:func:`apnull.views.hypergeometric.shuffled_block`).
- ``HYPER``: the hypergeometric draws per (m, n, k, draws, seed): 64 entries, 32 MB.
- ``VIEWS``: the page's tables and both figures per (m, n, k, draws, seed): 64 entries, 64 MB
  (a view is about 0.4 MB at 10,000 draws and 2.4 MB at 100,000, mostly the scatter's points).

At most 160 MB in all.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import hypergeom
from ..memo import Memo, freeze, rough_nbytes
from ..plots import packed
from ..plots.hypergeom import ap_precision_scatter, precision_histograms
from ..views import hypergeometric as hv
from .pageview import PageView

_MB = 2**20
BLOCKS = Memo(512, max_bytes=64 * _MB, sizeof=rough_nbytes)
HYPER = Memo(64, max_bytes=32 * _MB, sizeof=rough_nbytes)
VIEWS = Memo(64, max_bytes=64 * _MB, sizeof=rough_nbytes)


class HypergeomView(NamedTuple):
    """Everything the page shows for one input set."""

    sample: hv.ShuffledSample
    hyper: np.ndarray
    thresholds: pd.DataFrame
    summary: pd.DataFrame
    fit: pd.DataFrame
    pmf: tuple[np.ndarray, np.ndarray]
    histograms: object  # plotly figure
    scatter: object  # plotly figure


def cached_shuffled_block(m, n, k, seed, block, rows) -> hv.ShuffledSample:
    """Block ``block`` (``rows`` draws) of the shuffled rankings, cached."""
    return BLOCKS.get_or_compute((m, n, k, seed, block, rows),
                                 lambda: freeze(hv.shuffled_block(m, n, k, seed, block, rows)))


def hyper_draws(m, n, k, draws, seed) -> np.ndarray:
    """Precision@K drawn from the hypergeometric law, cached."""
    return HYPER.get_or_compute((m, n, k, draws, seed),
                                lambda: freeze(hypergeom.hypergeom_precision_at_k(m, n, k, draws, seed)))


def _view(m, n, k, draws, seed) -> HypergeomView:
    """The page's tables and figures for checked inputs (shuffled blocks from :func:`cached_shuffled_block`)."""
    parts = [cached_shuffled_block(m, n, k, seed, b, rows) for b, rows in hv.block_layout(m, draws)]
    sample = freeze(hv.ShuffledSample(np.concatenate([p.precision for p in parts]),
                                      np.concatenate([p.ap for p in parts])))
    hyper = hyper_draws(m, n, k, draws, seed)
    thresholds = hv.thresholds_table(m, n, k, sample.precision)
    summary = hv.summary_table(m, n, k, sample, hyper, seed=seed)
    fit = hv.fit_table(m, n, k, {"shuffled labels": sample.precision, "hypergeometric draws": hyper})
    pmf = freeze(hypergeom.hypergeom_pmf(m, n, k))
    ap_row = summary.set_index("statistic").loc["AP (shuffled)"]
    hist = packed(precision_histograms(sample.precision, hyper, k, thresholds, pmf=pmf, m=m, n=n))
    scatter = packed(ap_precision_scatter(sample.precision, sample.ap, k, expected_ap=float(ap_row["exact mean"]),
                                   ap_threshold=float(ap_row["exact 95pct"])))
    return HypergeomView(sample, hyper, thresholds, summary, fit, pmf, hist, scatter)


#: the page's view of (m, n, k, draws, seed) (``hypergeom_view.ready(...)``: stored, no progress bar needed)
hypergeom_view = PageView(VIEWS, _view)
