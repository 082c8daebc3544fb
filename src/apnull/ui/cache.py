"""Cached wrappers around the library for the dashboard, shared by every session.

Caches are bounded by entries and age (one hour), and so in memory:

- ``null_draws``: 128 sizes x at most 1,000,000 draws x 2 arrays x 8 bytes: at most 2 GB, in practice
  a few MB (the default view is 50 sizes x 10,000 draws = 8 MB);
- ``density_figures``, ``quantile_view``: 16 views each, figures of at most 200 curves x 401 points:
  under 0.2 GB;
- null laws: the library's own cache (:data:`apnull.significance.CACHE_BYTES`, 256 MB);
- ``law_figure`` (threshold lookup): 64 figures of at most a few hundred bars;
- ``moments``, ``exact_size_summary``: small.

Shared objects are handed out as they are (``st.cache_resource``: no pickling on every hit) and
are read-only: draws are read-only arrays, laws have read-only arrays, and figures are only read
(``st.plotly_chart`` serialises a copy). Per-size draws are cached one size at a time, so a page
can loop over sizes with a progress bar and a rerun with one more size only computes that size.
"""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from .. import significance
from ..exact import expected_ap, ap_variance
from ..sampling import sample_null

_TTL = 3600
#: seconds between two updates of a progress bar
PROGRESS_EVERY = 0.1


@st.cache_resource(max_entries=128, ttl=_TTL, show_spinner=False)
def null_draws(m: int, n: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(ap, pr) Monte Carlo draws for one size, read-only; identical for a (m, n, draws, seed) on any page."""
    s = sample_null(m, n, draws, seed)
    for arr in (s.ap, s.pr):
        arr.setflags(write=False)
    return s.ap, s.pr


def null_law(m: int, n: int, metric: str = "ap", method: str = "auto", draws: int | None = None,
             seed: int | None = 0, tol: float = 1e-3):
    """The null law (see apnull.null_distribution, whose bounded, thread-safe cache holds it); seed
    defaults to 0 so Monte Carlo is reproducible."""
    return significance.null_distribution(m, n, metric, method, draws=draws, seed=seed, tol=tol)


@st.cache_resource(max_entries=64, ttl=_TTL, show_spinner=False)
def law_figure(m: int, n: int, metric: str, method: str, draws: int | None, seed: int | None, threshold: float,
               value: float, mean: float, q: float):
    """:func:`apnull.plots.lookup.law_figure` of the cached :func:`null_law`, built once per input set
    (a wide exact law takes tens of milliseconds to bin and draw)."""
    from ..plots.lookup import law_figure as build

    return build(null_law(m, n, metric, method, draws=draws, seed=seed), threshold, value, mean=mean, q=q)


def sizes_with_progress(sizes, draws: int, seed: int, fetch=None, label: str = "Sampling null rankings",
                        container=None):
    """Run ``fetch(m, n)`` (default: the cached :func:`null_draws`) for every size under one progress
    bar (an uncached loop over cached pieces, in ``container`` if given); returns the results in order."""
    fetch = fetch or (lambda m, n: (m, n, *null_draws(m, n, draws, seed)))
    progress = (container or st).progress(0.0, text=f"{label}...")
    out = []
    shown = time.monotonic()
    for i, (m, n) in enumerate(sizes, start=1):
        out.append(fetch(m, n))
        if time.monotonic() - shown >= PROGRESS_EVERY:  # cached sizes take microseconds: no message each
            progress.progress(i / len(sizes), text=f"{label}: size {i} of {len(sizes)} (m = {m}, n = {n})")
            shown = time.monotonic()
    progress.empty()
    return out


@st.cache_data(max_entries=1024, ttl=_TTL, show_spinner=False)
def moments(m: int, n: int) -> tuple[float, float]:
    """(E[AP], SD[AP]) in closed form."""
    return expected_ap(m, n), float(np.sqrt(ap_variance(m, n)))


@st.cache_data(max_entries=512, ttl=_TTL, show_spinner=False)
def exact_size_summary(m: int, n: int, tol: float = 1e-3):
    """Cached :func:`apnull.views.null.exact_size_summary`."""
    from ..views.null import exact_size_summary as compute

    return compute(m, n, tol)


@st.cache_resource(max_entries=16, ttl=_TTL, show_spinner=False)
def quantile_view(M: int, N: int, K: int, draws: int, seed: int, method: str):
    """(summary, wide table, figure) of the "Quantiles vs size" page, built once per input set from the
    per-size caches (fill them first, e.g. with :func:`sizes_with_progress`)."""
    import pandas as pd

    from .. import plots
    from ..views import null as summaries

    sizes = summaries.check_grid_request(M, N, K, draws)
    if method == "mc":
        summary = summaries.summarise_draws([(m, n, *null_draws(m, n, draws, seed)) for m, n in sizes])
    else:
        summary = pd.concat([exact_size_summary(m, n) for m, n in sizes], ignore_index=True)
    fig = plots.quantile_figure(summary, M, N, exact_mean=summaries.exact_mean_curve(M, N, K))
    return summary, summaries.wide_summary(summary), fig


@st.cache_resource(max_entries=16, ttl=_TTL, show_spinner=False)
def density_figures(M: int, N: int, K: int, draws: int, seed: int, show_exact: bool):
    """The two density figures of the "Null densities" page and, per metric, how many sizes have the
    exact overlay. Cached whole, so a rerun with the same inputs rebuilds nothing."""
    from .. import plots
    from ..views import null as summaries

    samples = [(m, n, *null_draws(m, n, draws, seed)) for m, n in summaries.check_grid_request(M, N, K, draws)]
    out = []
    for metric in ("ap", "pr"):
        curves = summaries.density_curves(samples, metric)
        exact = summaries.exact_density_curves(curves, metric) if show_exact else None
        fig = plots.density_figure(curves, metric, M, N, exact=exact, draws=draws)
        out.append((metric, fig, None if exact is None else len(exact)))
    return out
