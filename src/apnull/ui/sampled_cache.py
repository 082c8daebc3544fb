"""Bounded caches of the "Sampled metrics" page (Rendle): each wraps one call of
:mod:`apnull.rendle` or :mod:`apnull.views.sampled` in a :class:`apnull.memo.Memo` shared by every
session of the server. Nothing is pickled per rerun (``st.cache_data`` would copy each entry on
every read); arrays are stored read-only and tables are only read by the page. Arguments are
hashable (rankings as tuples of (name, ranks)).

Bounds (entries, bytes; least recently used dropped first):

- ``FIGURE1``: Figure 1's curves per (n, k): 64 entries, 32 MB.
- ``CURVES``: one curve of Figure 3 per input set: 256 entries, 64 MB.
- ``TABLES``: the sampled-metrics table per input set: 64 entries, 16 MB.
- ``CHUNKS``: one chunk of Figure 2 per input set: 256 entries, 64 MB.
- ``CHANGES``: the order changes along Figure 2's sizes: 64 entries, 16 MB.
- ``SIMULATIONS``: simulated evaluations: 32 entries, 32 MB.
- ``FIGURES``: the page's three figures, keyed by the inputs they follow from: 96 entries, 64 MB
  (building one costs 0.1-0.4 s of Python; a rerun with cached inputs only sends it).
- the paper's tables beside the exact values: one entry.

At most 288 MB in all, whatever the visitors ask.
"""

from __future__ import annotations

from .. import rendle as sm
from ..memo import Memo, freeze, rough_nbytes
from ..views import sampled as sv

_MB = 2**20
FIGURE1 = Memo(64, max_bytes=32 * _MB, sizeof=rough_nbytes)
CURVES = Memo(256, max_bytes=64 * _MB, sizeof=rough_nbytes)
TABLES = Memo(64, max_bytes=16 * _MB, sizeof=rough_nbytes)
CHUNKS = Memo(256, max_bytes=64 * _MB, sizeof=rough_nbytes)
CHANGES = Memo(64, max_bytes=16 * _MB, sizeof=rough_nbytes)
SIMULATIONS = Memo(32, max_bytes=32 * _MB, sizeof=rough_nbytes)
FIGURES = Memo(96, max_bytes=64 * _MB, sizeof=rough_nbytes)
PAPER = Memo(1)


def figure(key, build):
    """The figure stored for ``key`` (a tuple naming the figure and every input it follows from), else
    ``build()``'s, stored. The figure is shared: callers only read it (``st.plotly_chart`` copies)."""
    return FIGURES.get_or_compute(key, build)


def figure1_data(n, k):
    """Figure 1's curves (metric of the true rank) for n items and cut-off k."""
    return FIGURE1.get_or_compute((n, k), lambda: freeze(sv.figure1_curves(n, k)))


def sampled_curve(metric, size, n, sizes, k, replace, whole):
    """(ranks, (mean, sd)) of one curve of Figure 3; the ranks depend on all the curves' sizes."""
    def compute():
        ranks = sv.figure3_ranks(n, sizes, k, whole=whole)
        return freeze((ranks, sm.expected_sampled_metric(metric, ranks, n, size, k=k, replace=replace)))

    return CURVES.get_or_compute((metric, size, n, tuple(sizes), k, replace, whole), compute)


def table_long(rankings_items, n, s, k, replace):
    """:func:`apnull.rendle.sampled_metrics_table` of the algorithms."""
    return TABLES.get_or_compute((rankings_items, n, s, k, replace),
                                 lambda: sm.sampled_metrics_table(dict(rankings_items), n, s, k=k, replace=replace))


def curve_chunk(rankings_items, n, sizes, metric, k, replace):
    """Expected sampled metric of every algorithm at the sample sizes ``sizes`` (one chunk of Figure 2)."""
    return CHUNKS.get_or_compute(
        (rankings_items, n, tuple(sizes), metric, k, replace),
        lambda: freeze(sm.expected_metric_curve(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace)))


def cached_exact_order_changes(rankings_items, n, sizes, metric, k, replace, curves):
    """Where the order of the algorithms changes along ``sizes`` (located exactly by bisection).
    ``curves`` (the metric at ``sizes``, as :func:`curve_chunk` gives it) follows from the other
    arguments, so it is not part of the key."""
    return CHANGES.get_or_compute(
        (rankings_items, n, tuple(sizes), metric, k, replace),
        lambda: freeze(sv.exact_order_changes(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace,
                                              curves=curves)))


def simulation(rankings_items, n, s, reps, seed, k, replace, expected):
    """Simulated sampled evaluations beside the exact expectations (``expected``, the table of
    :func:`table_long` for the same arguments, is not part of the key)."""
    return SIMULATIONS.get_or_compute(
        (rankings_items, n, s, reps, seed, k, replace),
        lambda: sv.simulation_table(dict(rankings_items), n, s, reps, seed, k=k, replace=replace, expected=expected))


def cached_paper_comparison():
    """The paper's printed tables beside the exact values."""
    return PAPER.get_or_compute("paper", sv.paper_comparison)
