"""Bounded caches of the "Sampled metrics" page (Rendle): each wraps one call of
:mod:`apnull.rendle` or :mod:`apnull.views.sampled`. Arguments are hashable (rankings as tuples of
(name, ranks)) so that Streamlit can key the caches; entries expire after an hour."""

from __future__ import annotations

import streamlit as st

from .. import rendle as sm
from ..views import sampled as sv

_TTL = 3600


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def figure1_data(n, k):
    """Figure 1's curves (metric of the true rank) for n items and cut-off k."""
    return sv.figure1_curves(n, k)


@st.cache_data(max_entries=256, ttl=_TTL, show_spinner=False)
def sampled_curve(metric, size, n, sizes, k, replace, whole):
    """(ranks, (mean, sd)) of one curve of Figure 3; the ranks depend on all the curves' sizes."""
    ranks = sv.figure3_ranks(n, sizes, k, whole=whole)
    return ranks, sm.expected_sampled_metric(metric, ranks, n, size, k=k, replace=replace)


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def table_long(rankings_items, n, s, k, replace):
    """:func:`apnull.rendle.sampled_metrics_table` of the algorithms."""
    return sm.sampled_metrics_table(dict(rankings_items), n, s, k=k, replace=replace)


@st.cache_data(max_entries=256, ttl=_TTL, show_spinner=False)
def curve_chunk(rankings_items, n, sizes, metric, k, replace):
    """Expected sampled metric of every algorithm at the sample sizes ``sizes`` (one chunk of Figure 2)."""
    return sm.expected_metric_curve(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace)


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def cached_exact_order_changes(rankings_items, n, sizes, metric, k, replace, curves):
    """Where the order of the algorithms changes along ``sizes`` (located exactly by bisection)."""
    return sv.exact_order_changes(dict(rankings_items), n, list(sizes), metric, k=k, replace=replace, curves=curves)


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner=False)
def simulation(rankings_items, n, s, reps, seed, k, replace, expected):
    """Simulated sampled evaluations beside the exact expectations."""
    return sv.simulation_table(dict(rankings_items), n, s, reps, seed, k=k, replace=replace, expected=expected)


@st.cache_data(max_entries=1, ttl=_TTL, show_spinner=False)
def cached_paper_comparison():
    """The paper's printed tables beside the exact values."""
    return sv.paper_comparison()
