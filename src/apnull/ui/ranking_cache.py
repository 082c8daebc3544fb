"""Bounded caches of the "Ranking editor" page, shared by every session of the server.

A ranking and its cut-off k determine everything the page shows below the editor; a class clicking
through the presets asks for the same few rankings again and again. Three :class:`apnull.memo.Memo`
caches keep what a rerun would otherwise rebuild (values shared and only read by the page; figures
packed once, :func:`apnull.plots.packed`):

- ``RANKINGS``: per (ranking, k) the metric cards, the precision-recall curve and its figure, and the
  table (for the CSV, and with the "in top k" column for display): 256 entries, 16 MB (a ranking has
  at most :data:`apnull.limits.MAX_RANKING_ITEMS` rows; a view is a few kB to a few hundred kB).
- ``FRAMES``: the data editor's input frame per ranking: 256 entries, 8 MB.
- ``NULLS``: per (m, n, AP) where the AP falls in the null law of (m, n) and that law's figure: 256
  entries, 16 MB. The law itself stays in the library's bounded cache.

At most 40 MB in all.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import metrics
from ..memo import Memo, freeze, rough_nbytes
from ..plots import packed
from ..plots.ranking import null_position_figure, pr_curve_figure
from ..views import ranking as rk
from .cache import moments, null_law
from .pageview import PageView

__all__ = ["RANKINGS", "NULLS", "FRAMES", "editor_frame", "DRAWS", "DEFAULT_K", "RankingView", "NullView", "ranking_view",
           "position_view", "warm_default_view"]

_MB = 2**20
RANKINGS = Memo(256, max_bytes=16 * _MB, sizeof=rough_nbytes)
NULLS = Memo(256, max_bytes=16 * _MB, sizeof=rough_nbytes)
FRAMES = Memo(256, max_bytes=8 * _MB, sizeof=rough_nbytes)
#: Monte Carlo draws when the null law of the ranking's (m, n) is too large to count exactly.
DRAWS = 20_000
#: The page's cut-off k before the user changes it.
DEFAULT_K = 3


class RankingView(NamedTuple):
    """What the page shows for one ranking and cut-off k (``k_ok``: 1 <= k <= len(ranking))."""

    relevant: np.ndarray
    k_ok: bool
    cards: list
    curve: object  # views.ranking.PRCurve, None without a relevant item
    curve_figure: object
    table: pd.DataFrame  # rank, item, relevant, precision@k, recall@k (the CSV)
    shown: pd.DataFrame  # the table with "in top k" when k is within the ranking (displayed)


class NullView(NamedTuple):
    """Where an AP falls in the null law of (m, n): :func:`apnull.significance.null_position`, the
    law's method and error bound, the closed-form E[AP] and SD[AP], and the figure."""

    position: object
    method: str
    error_bound: float | None
    mean: float
    sd: float
    figure: object
    describe: str = ""  # the law's technical description (NullDistribution.describe), for a tooltip


def editor_frame(rows: tuple) -> pd.DataFrame:
    """The data editor's input for ``rows`` ((item, relevant) in rank order): columns position, item,
    relevant and base (the position the row was built at, hidden; it tells a moved row from a renumbered
    one). Shared: the editor only reads it."""
    def build():
        return pd.DataFrame({
            "position": pd.Series(range(1, len(rows) + 1), dtype="Int64"),
            "item": pd.Series([item for item, _ in rows], dtype="object"),
            "relevant": pd.Series([rel for _, rel in rows], dtype="boolean"),
            "base": pd.Series(range(1, len(rows) + 1), dtype="Int64"),
        })

    return FRAMES.get_or_compute(rows, build)


def ranking_view(rows: tuple, k: int) -> RankingView:
    """The view of ``rows`` (a tuple of (item, relevant) in rank order, not empty) at cut-off ``k``."""
    def build():
        items = [item for item, _ in rows]
        rel = freeze(rk.relevance(list(rows)))
        k_ok = 1 <= k <= rel.size
        curve = rk.pr_curve_points(rel, items) if rel.any() else None
        fig = packed(pr_curve_figure(curve, k if k_ok else None)) if curve is not None else None
        table = metrics.ranking_table(rel, items).rename(columns={"precision": "precision@k", "recall": "recall@k"})
        shown = table.assign(**{"in top k": table["rank"] <= k}) if k_ok else table
        return RankingView(rel, k_ok, rk.metric_cards(rel, k), curve, fig, table, shown)

    return RANKINGS.get_or_compute((rows, k), build)


def _position_view(m: int, n: int, ap: float) -> NullView:
    """Where ``ap`` falls in the null law of AP for (m, n) (exact, grid or Monte Carlo with ``DRAWS``
    draws and seed 0, as :func:`apnull.null_distribution` chooses)."""
    def build():
        from ..significance import null_position

        law = null_law(m, n, "ap", "auto", draws=DRAWS, seed=0)
        pos = null_position(ap, law)
        mean, sd = moments(m, n)
        fig = packed(null_position_figure(law.values, law.probs, ap, pos.p, m, n, law.method))
        return NullView(pos, law.method, getattr(law, "error_bound", None), mean, sd, fig, law.describe())

    return build()


#: where an AP falls in the null law of (m, n) (``position_view.ready(m, n, ap)``: stored, answers at once)
position_view = PageView(NULLS, _position_view)


def warm_default_view() -> None:
    """What the page's first visit shows, into the shared caches: the editor's frame, the view at
    :data:`DEFAULT_K` and the null position of the precision-recall example (the page's default ranking).
    The server's warm-up runs it, so a class arriving at the page together does not wait for its first
    visitor's build (``to_ranking`` in benchmarks/load.py --lesson all)."""
    rows = tuple(rk.PR_EXAMPLE)
    editor_frame(rows)
    view = ranking_view(rows, DEFAULT_K)
    m = int(view.relevant.sum())
    if m:
        position_view(m, len(rows) - m, view.curve.ap)
