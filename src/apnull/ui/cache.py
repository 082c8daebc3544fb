"""The dashboard's caches, shared by every session of the server process.

A class of 30 students asks for the same views, or for views that share sizes, many times a minute,
so each result is computed once and then served from memory. The caches are :class:`apnull.memo.Memo`
objects: bounded by entries (and bytes where entries vary in size), least recently used dropped
first, and a key asked for by several sessions at once is computed by one of them while the others
wait. Shared objects are read-only (frozen arrays, laws with read-only arrays, figures that are only
read: ``st.plotly_chart`` serialises a copy).

- ``DRAWS``: the Monte Carlo draws (AP and Precision@R, 16 bytes a draw) of each (m, n, seed), at most
  256 MB. Draw i of a size is the same whatever the number of draws, so a view asking for more draws
  of a cached size only draws the new ones (10,000 -> 20,000 costs 10,000), and fewer is a slice.
- ``SUMMARIES``: one :class:`apnull.views.null.SizeSummary` per (m, n, draws, seed), about 7 KB (two
  density curves on 401 points and eight statistics); 8,192 entries, about 60 MB.
- ``EXACT_SUMMARIES``: the exact-law rows of one size (quantiles page, "exact law"); 1,024 tables.
- ``VIEWS``: whole views per input set (the density figure pair, the quantile summary and figure, the
  lookup figures); 96 entries and 128 MB (a density view of 200 sizes is about 1.7 MB).
- ``MOMENTS``: closed-form (E[AP], SD[AP]) pairs; 1,024 entries.
- null laws: the library's own cache (:data:`apnull.significance.CACHE_BYTES`, 256 MB, 64 laws).

A view is looked up first; only when it is missing are its sizes fetched, under a progress bar
(an uncached loop over cached sizes), so a rerun of a cached view costs microseconds of cache work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import streamlit as st

from .. import significance
from ..exact import ap_variance, expected_ap
from ..memo import Memo
from ..sampling import draw_rows
from ..views import null as summaries

#: seconds between two updates of a progress bar
PROGRESS_EVERY = 0.1


def _view_bytes(value) -> int:
    """Rough bytes of a cached view: the strings and arrays of its figures and tables."""
    import pandas as pd
    import plotly.graph_objects as go

    if isinstance(value, go.Figure):
        return _view_bytes(value._data) + _view_bytes(value._layout)
    if isinstance(value, pd.DataFrame):
        return int(value.memory_usage(deep=True).sum())
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, dict):
        return sum(_view_bytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_view_bytes(item) for item in value)
    return 8


def _draws_bytes(value) -> int:
    return sum(a.nbytes for a in value)


DRAWS = Memo(4096, max_bytes=256 * 2**20, sizeof=_draws_bytes)
SUMMARIES = Memo(8192)
EXACT_SUMMARIES = Memo(1024)
VIEWS = Memo(96, max_bytes=128 * 2**20, sizeof=_view_bytes)
MOMENTS = Memo(1024)


def size_draws(m: int, n: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(ap, pr): the first ``draws`` Monte Carlo draws of (m, n) under ``seed`` (read-only arrays, the
    numbers of :func:`apnull.sample_null`); cached draws are extended or sliced, never drawn again."""
    def extend():
        have = DRAWS.get((m, n, seed))
        start = 0 if have is None else have[0].size
        new = draw_rows(m, n, seed, start, draws)
        out = new if have is None else tuple(np.concatenate(pair) for pair in zip(have, new))
        for arr in out:
            arr.setflags(write=False)
        return out

    ap, pr = DRAWS.get_or_compute((m, n, seed), extend, fits=lambda have: have[0].size >= draws)
    return ap[:draws], pr[:draws]


def size_summary(m: int, n: int, draws: int, seed: int) -> summaries.SizeSummary:
    """The cached :class:`~apnull.views.null.SizeSummary` of (m, n) from ``draws`` draws under ``seed``;
    the same numbers on every page that asks (the draws depend only on (seed, m, n))."""
    return SUMMARIES.get_or_compute((m, n, draws, seed),
                                    lambda: summaries.summarise_size(m, n, *size_draws(m, n, draws, seed)))


def exact_size_summary(m: int, n: int, tol: float = 1e-3):
    """Cached :func:`apnull.views.null.exact_size_summary` (a small table; callers only read it)."""
    return EXACT_SUMMARIES.get_or_compute((m, n, tol), lambda: summaries.exact_size_summary(m, n, tol))


def sizes_with_progress(sizes: Sequence[tuple[int, int]], fetch: Callable[[int, int], object],
                        label: str = "Sampling null rankings", container=None) -> list:
    """``fetch(m, n)`` for every size, in order, under one progress bar (in ``container`` if given).

    The bar shows while sizes are computed and is removed at the end; it is updated at most every
    ``PROGRESS_EVERY`` seconds (cached sizes take microseconds, so a message each would cost more).
    """
    progress = (container or st).progress(0.0, text=f"{label}...")
    out = []
    shown = time.monotonic()
    for i, (m, n) in enumerate(sizes, start=1):
        out.append(fetch(m, n))
        if time.monotonic() - shown >= PROGRESS_EVERY:
            progress.progress(i / len(sizes), text=f"{label}: size {i} of {len(sizes)} (m = {m}, n = {n})")
            shown = time.monotonic()
    progress.empty()
    return out


def _view(key: Hashable, sizes, fetch, build: Callable[[list], object], label: str, container=None,
          progress: bool = True):
    """The cached view ``key``; on a miss its sizes are fetched (under a progress bar unless not
    ``progress``) and ``build(parts)`` makes it (once, whatever the sessions asking)."""
    view = VIEWS.get(key)
    if view is None:
        parts = (sizes_with_progress(sizes, fetch, label, container) if progress
                 else [fetch(m, n) for m, n in sizes])
        view = VIEWS.get_or_compute(key, lambda: build(parts))
    return view


def density_figures(M: int, N: int, K: int, draws: int, seed: int, show_exact: bool, container=None,
                    progress: bool = True):
    """The "Null densities" view: per metric (metric, figure, sizes with the exact overlay or None)."""
    from .. import plots

    sizes = summaries.check_grid_request(M, N, K, draws)

    def build(parts):
        out = []
        for metric in summaries.METRICS:
            curves = [p.curves[metric] for p in parts]
            exact = summaries.exact_density_curves(curves, metric) if show_exact else None
            fig = plots.density_figure(curves, metric, M, N, exact=exact, draws=draws)
            out.append((metric, fig, None if exact is None else len(exact)))
        return tuple(out)

    return _view(("density", M, N, K, draws, seed, show_exact), sizes,
                 lambda m, n: size_summary(m, n, draws, seed), build, "Sampling null rankings", container, progress)


def quantile_view(M: int, N: int, K: int, draws: int, seed: int, method: str, container=None,
                  progress: bool = True):
    """The "Quantiles vs size" view: (long summary, wide table, figure), Monte Carlo or exact laws."""
    import pandas as pd

    from .. import plots

    sizes = summaries.check_grid_request(M, N, K, draws)
    if method == "mc":
        fetch, label = (lambda m, n: size_summary(m, n, draws, seed)), "Sampling null rankings"
    else:
        fetch, label = exact_size_summary, "Exact laws"

    def build(parts):
        summary = summaries.summarise_draws(parts) if method == "mc" else pd.concat(parts, ignore_index=True)
        fig = plots.quantile_figure(summary, M, N, exact_mean=summaries.exact_mean_curve(M, N, K))
        return summary, summaries.wide_summary(summary), fig

    key = ("quantiles", M, N, K, draws if method == "mc" else None, seed if method == "mc" else None, method)
    return _view(key, sizes, fetch, build, label, container, progress)


def null_law(m: int, n: int, metric: str = "ap", method: str = "auto", draws: int | None = None,
             seed: int | None = 0, tol: float = 1e-3):
    """The null law (see apnull.null_distribution, whose bounded, thread-safe cache holds it); seed
    defaults to 0 so Monte Carlo is reproducible."""
    return significance.null_distribution(m, n, metric, method, draws=draws, seed=seed, tol=tol)


def law_figure(m: int, n: int, metric: str, method: str, draws: int | None, seed: int | None, threshold: float,
               value: float, mean: float, q: float):
    """:func:`apnull.plots.lookup.law_figure` of the cached :func:`null_law`, built once per input set
    (a wide exact law takes tens of milliseconds to bin and draw)."""
    from ..plots.lookup import law_figure as build

    key = ("law", m, n, metric, method, draws, seed, threshold, value, mean, q)
    return VIEWS.get_or_compute(key, lambda: build(null_law(m, n, metric, method, draws=draws, seed=seed),
                                                   threshold, value, mean=mean, q=q))


def moments(m: int, n: int) -> tuple[float, float]:
    """(E[AP], SD[AP]) in closed form."""
    return MOMENTS.get_or_compute((m, n), lambda: (expected_ap(m, n), float(np.sqrt(ap_variance(m, n)))))


def warm_default_views() -> None:
    """Compute what a visitor sees first, so the first visitors find it cached: the default view of the
    densities and quantiles pages (seed 000's experiment) and the threshold lookup's laws for its first
    size (about 0.3 s). Runs in the warm-up thread (see :mod:`apnull.ui.warmup`); a visitor who asks
    meanwhile joins the computation in progress instead of repeating it."""
    d = summaries.DEFAULT_VIEW
    density_figures(d["M"], d["N"], d["K"], d["draws"], d["seed"], False, progress=False)
    quantile_view(d["M"], d["N"], d["K"], d["draws"], d["seed"], "mc", progress=False)
    for metric in summaries.METRICS:
        null_law(d["M"], d["N"], metric)
    moments(d["M"], d["N"])
