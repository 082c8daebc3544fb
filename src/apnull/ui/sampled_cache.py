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
- ``VIEWS``: what a tab shows for one input set, ready to display (the algorithms' tables as frames;
  the last chart's figure, order-change table and caption numbers): 96 entries, 16 MB. A rerun with
  cached inputs looks each tab up once and does no per-piece work (no progress bars, no pandas).
- the paper's tables beside the exact values: one entry.

At most 304 MB in all, whatever the visitors ask.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import rendle as sm
from ..memo import Memo, freeze, rough_nbytes
from ..plots import packed
from ..plots import sampled as ps
from ..views import sampled as sv

_MB = 2**20
FIGURE1 = Memo(64, max_bytes=32 * _MB, sizeof=rough_nbytes)
CURVES = Memo(256, max_bytes=64 * _MB, sizeof=rough_nbytes)
TABLES = Memo(64, max_bytes=16 * _MB, sizeof=rough_nbytes)
CHUNKS = Memo(256, max_bytes=64 * _MB, sizeof=rough_nbytes)
CHANGES = Memo(64, max_bytes=16 * _MB, sizeof=rough_nbytes)
SIMULATIONS = Memo(32, max_bytes=32 * _MB, sizeof=rough_nbytes)
FIGURES = Memo(96, max_bytes=64 * _MB, sizeof=rough_nbytes)
VIEWS = Memo(96, max_bytes=16 * _MB, sizeof=rough_nbytes)
PAPER = Memo(1)


class ExampleTables(NamedTuple):
    """The running example's tables for one input set: the long table (CSV), the wide exact table and
    the wide 'mean ± SD' sampled table (both displayed)."""

    long: pd.DataFrame
    exact: pd.DataFrame
    sampled: pd.DataFrame


class SamplesView(NamedTuple):
    """The last chart's tab for one input set: figure, order-change table, the curves (CSV), the exact
    order and the largest s of the grid (caption)."""

    figure: object
    changes: pd.DataFrame
    curves: pd.DataFrame
    exact_order: str
    top: int


class PaperView(NamedTuple):
    """The paper's tables beside ours: the comparison (CSV), its display frame and the numbers the
    text quotes."""

    comparison: pd.DataFrame
    display: pd.DataFrame
    worst: dict
    all_exact: bool


def figure(key, build):
    """The figure stored for ``key`` (a tuple naming the figure and every input it follows from), else
    ``build()``'s, packed (:func:`apnull.plots.packed`: its arrays encoded once) and stored. The figure is
    shared: callers only read it (``st.plotly_chart`` copies)."""
    return FIGURES.get_or_compute(key, lambda: packed(build()))


def figure1_data(n, k):
    """Figure 1's curves (metric of the true rank) for n items and cut-off k."""
    return FIGURE1.get_or_compute((n, k), lambda: freeze(sv.figure1_curves(n, k)))


def sampled_curve(metric, size, n, sizes, k, replace, whole):
    """(ranks, (mean, sd)) of one curve of Figure 3; the ranks depend on all the curves' sizes. One
    entry for every k the curve does not depend on (:func:`apnull.views.sampled.figure3_cutoff`)."""
    def compute():
        ranks = sv.figure3_ranks(n, sizes, k, whole=whole)
        return freeze((ranks, sm.expected_sampled_metric(metric, ranks, n, size, k=k, replace=replace)))

    key = (metric, size, n, tuple(sizes), sv.figure3_cutoff(metric, k, n, sizes, whole), replace, whole)
    return CURVES.get_or_compute(key, compute)


def table_long(rankings_items, n, s, k, replace):
    """:func:`apnull.rendle.sampled_metrics_table` of the algorithms."""
    return TABLES.get_or_compute((rankings_items, n, s, k, replace),
                                 lambda: sm.sampled_metrics_table(dict(rankings_items), n, s, k=k, replace=replace))


def curve_chunk(rankings_items, n, sizes, metric, k, replace):
    """Expected sampled metric of every algorithm at the sample sizes ``sizes`` (one chunk of Figure 2);
    one entry for every k the metric ignores (:func:`apnull.views.sampled.cutoff_of`)."""
    return CHUNKS.get_or_compute(
        (rankings_items, n, tuple(sizes), metric, sv.cutoff_of(metric, k), replace),
        lambda: freeze(sm.expected_metric_curve(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace)))


def cached_exact_order_changes(rankings_items, n, sizes, metric, k, replace, curves):
    """Where the order of the algorithms changes along ``sizes`` (located exactly by bisection).
    ``curves`` (the metric at ``sizes``, as :func:`curve_chunk` gives it) follows from the other
    arguments, so it is not part of the key."""
    return CHANGES.get_or_compute(
        (rankings_items, n, tuple(sizes), metric, sv.cutoff_of(metric, k), replace),
        lambda: freeze(sv.exact_order_changes(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace,
                                              curves=curves)))


def simulation(rankings_items, n, s, reps, seed, k, replace, expected):
    """Simulated sampled evaluations beside the exact expectations (``expected``, the table of
    :func:`table_long` for the same arguments, is not part of the key)."""
    return SIMULATIONS.get_or_compute(
        (rankings_items, n, s, reps, seed, k, replace),
        lambda: sv.simulation_table(dict(rankings_items), n, s, reps, seed, k=k, replace=replace, expected=expected))


def rank_figure(n, k, metric, label):
    """The first chart (metric of the true rank, :func:`apnull.plots.sampled.metric_vs_rank_figure`)."""
    def build():
        full, top = figure1_data(n, k)
        return ps.metric_vs_rank_figure(full, top, n, highlight=label)

    return figure(("rank", n, k, label), build)


def sampled_rank_figure(metric, sizes, n, k, replace, whole, label, progress=None):
    """The second chart (expected sampled metric versus the true rank for the sample sizes ``sizes``).
    On a miss its curves are fetched one size at a time; ``progress()`` (called only then) returns a
    callable ``step(i, total, size)`` and the page's progress bar with it (closed by ``step(None)``)."""
    key = ("sampled", metric, tuple(sizes), n, sv.figure3_cutoff(metric, k, n, sizes, whole), replace, whole, label)
    fig = FIGURES.get(key)
    if fig is not None:
        return fig
    step = progress() if progress is not None else None
    curves, ranks = {}, None
    for i, size in enumerate(sizes, start=1):
        ranks, curves[size] = sampled_curve(metric, size, n, tuple(sizes), k, replace, whole)
        if step is not None:
            step(i, len(sizes), size)
    if step is not None:
        step(None, len(sizes), None)
    exact_ranks = sv.rank_grid(n, extra=(k, k + 1)) if whole else np.arange(1, min(n, 1000) + 1)
    exact = sm.metric_at_rank(metric, exact_ranks, n, k)
    return figure(key, lambda: ps.sampled_vs_rank_figure(ranks, exact, curves, label, n, replace=replace,
                                                          exact_ranks=exact_ranks))


def example_tables(rankings_items, n, s, k, replace) -> ExampleTables:
    """The running example's tables (:class:`ExampleTables`) for the algorithms' ranks."""
    def build():
        long = table_long(rankings_items, n, s, k, replace)
        return ExampleTables(long, sv.exact_table(long, dict(rankings_items)), sv.sampled_table(long))

    return VIEWS.get_or_compute(("example", rankings_items, n, s, k, replace), build)


def simulation_view(rankings_items, n, s, reps, seed, k, replace, expected):
    """(long, wide) simulated evaluations: :func:`simulation` and its 'mean ± SD' table."""
    def build():
        sim = simulation(rankings_items, n, s, reps, seed, k, replace, expected)
        return sim, sv.simulation_wide(sim)

    return VIEWS.get_or_compute(("simulation", rankings_items, n, s, reps, seed, k, replace), build)


def samples_view(rankings_items, n, metric, k, replace, label, progress=None) -> SamplesView:
    """The last chart's tab (:class:`SamplesView`): the expected sampled metric of every algorithm on a
    log grid of s (in at most five chunks), the exact order changes and the figure. ``progress`` as in
    :func:`sampled_rank_figure` (``step(i, total, None)`` per chunk)."""
    key = ("samples", rankings_items, n, metric, sv.cutoff_of(metric, k), replace, label)
    view = VIEWS.get(key)
    if view is not None:
        return view
    rankings = dict(rankings_items)
    instances = sum(len(r) for r in rankings.values())
    sizes = sv.figure2_sizes(n, replace, instances, metric)
    chunks = np.array_split(sizes, min(len(sizes), 5))
    step = progress() if progress is not None else None
    parts = []
    for i, chunk in enumerate(chunks, start=1):
        parts.append(curve_chunk(rankings_items, n, tuple(chunk.tolist()), metric, k, replace))
        if step is not None:
            step(i, len(chunks), None)
    if step is not None:
        step(None, len(chunks), None)

    def build():
        base = {name: np.concatenate([p[name] for p in parts]) for name in rankings}
        changes = cached_exact_order_changes(rankings_items, n, tuple(sizes.tolist()), metric, k, replace, base)
        extra = sv.flip_sizes(sizes, changes)  # the exact flip points (and the s just before) join the grid
        more = curve_chunk(rankings_items, n, tuple(extra.tolist()), metric, k, replace) if extra.size else None
        grid, curves = sv.merge_curves(sizes, base, extra, more)
        exact = {name: sm.algorithm_exact_metric(r, n, metric, k=k) for name, r in rankings.items()}
        fig = packed(ps.metric_vs_samples_figure(grid, curves, label, n, changes=changes, exact=exact,
                                                 replace=replace))
        return SamplesView(fig, sv.changes_table(changes, label), pd.DataFrame({"s": grid, **curves}),
                           sm.algorithm_order(exact), int(sizes.max()))

    return VIEWS.get_or_compute(key, build)


def paper_view() -> PaperView:
    """The paper's printed tables beside the exact values, ready to display (:class:`PaperView`)."""
    def build():
        cmp = sv.paper_comparison()
        worst = cmp.loc[cmp["deviation_se"].abs().idxmax()]
        return PaperView(cmp, sv.paper_comparison_display(cmp),
                         {c: worst[c] for c in ("algorithm", "label", "deviation_se", "sampled_mean", "paper_mean")},
                         bool(cmp["exact_digits_agree"].all()))

    return PAPER.get_or_compute("view", build)
