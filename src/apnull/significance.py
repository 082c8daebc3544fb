"""Null thresholds and p-values of AP and Precision@R, with the choice of method.

Methods
-------
- ``"exact"``: Precision@R from its hypergeometric law; AP by counting all C(m+n, m) placements
  (allowed up to ``EXACT_MAX_PLACEMENTS``).
- ``"grid"``: the AP grid law (:func:`apnull.exact.ap_law_grid`), quantiles within ``tol``.
- ``"mc"``: Monte Carlo, ``draws`` random rankings from ``seed``.
- ``"auto"``: Precision@R is always exact; AP is exact when (m+n) * C(m+n, m) <= ``AUTO_EXACT_WORK``
  (the counting programme's cost),
  else the grid law when its work N*m*G <= ``AUTO_GRID_WORK`` (well under a second), else Monte
  Carlo. Every result records the method that produced it (``NullDistribution.method``).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ._validate import MAX_DRAWS, as_int, as_probability, check_metric, check_sizes
from .exact import EXACT_MAX_PLACEMENTS, ap_law_exact, ap_law_grid, grid_size_for, pr_law
from .law import NullDistribution
from .sampling import sample_null

__all__ = ["null_distribution", "threshold", "p_value", "choose_method", "METHODS",
           "AUTO_EXACT_WORK", "AUTO_GRID_WORK", "DEFAULT_DRAWS"]

METHODS = ("auto", "exact", "grid", "mc")
#: "auto" counts placements exactly while (m+n) * C(m+n, m) is at most this (about 0.1 s).
AUTO_EXACT_WORK = 5_000_000
#: "auto" uses the grid law up to this many cell updates (about half a second).
AUTO_GRID_WORK = 6 * 10**8
#: Draws used by "mc" when none are given.
DEFAULT_DRAWS = 100_000

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 64


def choose_method(m, n, metric="ap", method="auto", tol=1e-3) -> str:
    """The method "auto" resolves to for (m, n, metric); other methods are returned unchanged."""
    m, n = check_sizes(m, n)
    metric = check_metric(metric)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method != "auto":
        return method
    if metric == "pr":
        return "exact"
    if (m + n) * math.comb(m + n, m) <= AUTO_EXACT_WORK:
        return "exact"
    if (m + n) * m * grid_size_for(m, tol) <= AUTO_GRID_WORK:
        return "grid"
    return "mc"


def null_distribution(m, n, metric="ap", method="auto", draws=None, seed=None, tol=1e-3,
                      grid_size=None) -> NullDistribution:
    """The null law of AP or Precision@R for m positives and n negatives.

    Parameters
    ----------
    m, n : int
        Positives (>= 1) and negatives (>= 0), m + n <= 10^6.
    metric : {"ap", "pr"}
    method : {"auto", "exact", "grid", "mc"}
        See the module docstring. "grid" applies to AP only; for Precision@R it means "exact".
    draws : int, optional
        Monte Carlo draws (default 100,000; at most 10^7).
    seed : int, optional
        Monte Carlo seed; None picks a fresh one, kept in ``.seed``.
    tol : float
        Guaranteed quantile accuracy of the grid law in AP units (default 1e-3).
    grid_size : int, optional
        The grid law's G, overriding ``tol``.

    Returns
    -------
    NullDistribution
        With ``cdf``, ``sf``, ``quantile``, ``mean``, ``std``, ``support()`` and ``method``.

    Raises
    ------
    ValueError
        For bad sizes, an unknown metric or method, or an exact/grid law that is too large (the
        message names the method to use instead).
    """
    m, n = check_sizes(m, n)
    metric = check_metric(metric)
    tol = as_probability(tol, "tol", open_low=True)
    chosen = choose_method(m, n, metric, method, tol)
    if metric == "pr" and chosen == "grid":
        chosen = "exact"
    if chosen == "mc":
        draws = as_int(DEFAULT_DRAWS if draws is None else draws, "draws", minimum=1, maximum=MAX_DRAWS)
    key = (m, n, metric, chosen, draws if chosen == "mc" else None, seed if chosen == "mc" else None,
           tol if chosen == "grid" else None, grid_size if chosen == "grid" else None)
    cacheable = not (chosen == "mc" and seed is None)
    if cacheable and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    if chosen == "exact":
        law = pr_law(m, n) if metric == "pr" else ap_law_exact(m, n, max_placements=EXACT_MAX_PLACEMENTS)
    elif chosen == "grid":
        law = ap_law_grid(m, n, grid_size=grid_size, tol=tol)
    else:
        sample = sample_null(m, n, draws, seed)
        law = NullDistribution.from_draws(metric, m, n, getattr(sample, metric), seed=sample.seed)
    if cacheable:
        _CACHE[key] = law
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return law


def threshold(m, n, metric="ap", q=0.95, method="auto", **kwargs) -> float:
    """The q-quantile of the null law: a value a random ranking reaches with probability <= 1 - q.

    For exact and grid laws the smallest support value x with P(X <= x) >= q (R's ``qhyper``); for
    Monte Carlo numpy's default interpolation (R's quantile type 7). ``kwargs`` go to
    :func:`null_distribution` (draws, seed, tol, grid_size). Use ``null_distribution(...).method``
    to see which method answered.
    """
    q = as_probability(q, "q")
    return float(null_distribution(m, n, metric, method, **kwargs).quantile(q))


def p_value(value, m, n, metric="ap", method="auto", **kwargs) -> float:
    """P(X >= value) under the null: the chance that a random ranking scores at least ``value``.

    Monte Carlo p-values are (1 + #{draws >= value}) / (1 + draws), never zero. Values are compared
    with a relative tolerance of 1e-12 so that an AP computed in another order matches its null value.
    """
    v = check_value(value)
    return float(null_distribution(m, n, metric, method, **kwargs).sf(v))


def check_value(value) -> float:
    """An observed AP or Precision@R as a float in [0, 1], else ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a number between 0 and 1, got {value!r}") from None
    if not (np.isfinite(v) and -1e-12 <= v <= 1 + 1e-12):
        raise ValueError(f"value must be a number between 0 and 1, got {value!r}")
    return v
