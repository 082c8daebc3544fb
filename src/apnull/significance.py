"""Null thresholds and p-values of AP and Precision@R, with the choice of method.

Methods
-------
- ``"exact"``: Precision@R from its hypergeometric law; AP by counting all C(m+n, m) placements
  (allowed up to ``EXACT_MAX_PLACEMENTS``).
- ``"grid"``: the AP grid law (:func:`apnull.exact.ap_law_grid`), quantiles within ``tol``.
- ``"mc"``: Monte Carlo, ``draws`` random rankings from ``seed``.
- ``"auto"``: Precision@R is always exact; AP by each law's cost (:func:`law_costs`): exact when
  its work is at most ``AUTO_EXACT_WORK`` (the counting programme's (m+n) * C(m+n, m); a closed form's
  m + n for n <= 1), else the grid law when its work N*m*G (m + n + G for m = 1, a closed form) is
  at most ``AUTO_GRID_WORK`` (well under a second), else Monte Carlo with the default draws, or as
  many as ``AUTO_MC_WORK`` allows where that is fewer (:func:`auto_draws`). Every result records the
  method that produced it (``NullDistribution.method``).

Thresholds at a level alpha = 1 - q come from the law where it resolves alpha (:func:`alpha_floor`)
and from the counted far tail below that (:func:`apnull.thresholds.counted_threshold`), or are refused
with the smallest alpha the law answers (:func:`resolved_threshold`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .exact import ap_law_exact, ap_law_grid, grid_size_for, pr_law
from .law import VALUE_TOL, NullDistribution
from .limits import (EXACT_MAX_PLACEMENTS, MAX_SAMPLING_WORK, as_probability, check_choice, check_draws,
                     check_metric, check_sizes, check_value, draw_cost)
from .memo import Memo
from .sampling import sample_null
from .tail import TAIL_WORK, TailPValue, combine
from .thresholds import MAX_THRESHOLD_WIDTH, TAIL_QUANTILE_BELOW, Threshold, alpha_floor, level, resolved_threshold

__all__ = ["null_distribution", "threshold", "p_value", "choose_method", "null_position", "NullPosition",
           "tail_pvalue", "resolved_pvalue", "TailPValue", "law_costs", "auto_draws", "Threshold",
           "resolved_threshold", "alpha_floor", "TAIL_QUANTILE_BELOW", "MAX_THRESHOLD_WIDTH", "AUTO_MC_WORK",
           "METHODS", "AUTO_EXACT_WORK", "AUTO_GRID_WORK", "DEFAULT_DRAWS", "CACHE_SIZE", "CACHE_BYTES"]

METHODS = ("auto", "exact", "grid", "mc")
#: "auto" counts placements exactly while (m+n) * C(m+n, m) is at most this (about 0.1 s).
AUTO_EXACT_WORK = 5_000_000
#: "auto" uses the grid law up to this many cell updates (about half a second).
AUTO_GRID_WORK = 6 * 10**8
#: Draws used by "mc" when none are given ...
DEFAULT_DRAWS = 100_000
#: ... or fewer, where that many would take more Monte Carlo work than this (a quarter of
#: ``apnull.limits.MAX_SAMPLING_WORK``, about 10 s on 2 cores): 4,980 draws at m = n = 100,000.
AUTO_MC_WORK = MAX_SAMPLING_WORK // 4

#: Laws kept by :func:`null_distribution` (least recently used dropped first): at most this many, and
#: at most CACHE_BYTES of arrays (the newest law is always kept, so a single Monte Carlo law of 10^7
#: draws, about 320 MB, may exceed it alone). Laws are read-only, so callers in different threads or
#: sessions share them safely; a law asked for by several threads at once is computed once.
CACHE_SIZE = 64
CACHE_BYTES = 256 * 2**20


def _nbytes(law: NullDistribution) -> int:
    """Bytes held by a law's arrays, plus a quarter for its cumulative sums."""
    return sum(a.nbytes for a in (law.values, law.probs, law.draws, law.counts) if a is not None) * 5 // 4


_CACHE = Memo(CACHE_SIZE, CACHE_BYTES, sizeof=_nbytes)


def choose_method(m, n, metric="ap", method="auto", tol=1e-3) -> str:
    """The method "auto" resolves to for (m, n, metric); other methods are returned unchanged."""
    m, n = check_sizes(m, n)
    metric = check_metric(metric)
    return _choose(m, n, metric, check_choice(method, METHODS, "method"), tol)


def _scan_work(m: int, n: int) -> float:
    """(m + n) * C(m + n, m), the exact counting programme's work, without building a huge C (inf
    where C(m + n, m) >= 2^64)."""
    N, b = m + n, min(m, n)
    if b and b * math.log2(N / b) > 64:  # C(N, b) >= (N / b)^b
        return math.inf
    return float(N * math.comb(N, b))


def law_costs(m: int, n: int, tol: float = 1e-3, draws: int | None = None) -> dict:
    """The work of each law for AP at (m, n), in the units "auto" compares against ``AUTO_EXACT_WORK``,
    ``AUTO_GRID_WORK`` and ``MAX_SAMPLING_WORK``: "exact" (m + n by a closed form for n <= 1, else the
    counting programme's (m + n) C(m + n, m); m = 1 counts as the programme, which "auto" keeps to
    small n), "grid" (N m G; m + n + G for m = 1, a closed form) and "mc" (draws x
    :func:`apnull.limits.draw_cost`). Unchecked."""
    N = m + n
    G = grid_size_for(m, tol)
    return {"exact": float(N) if n <= 1 else _scan_work(m, n),
            "grid": float(N + G) if m == 1 else float(N) * m * G,
            "mc": float(DEFAULT_DRAWS if draws is None else draws) * draw_cost(m, n)}


def _choose(m: int, n: int, metric: str, method: str, tol: float) -> str:
    if method != "auto":
        return method
    if metric == "pr":
        return "exact"
    cost = law_costs(m, n, tol)
    if cost["exact"] <= AUTO_EXACT_WORK:
        return "exact"
    if cost["grid"] <= AUTO_GRID_WORK:
        return "grid"
    return "mc"


def auto_draws(m: int, n: int) -> int:
    """Monte Carlo draws when none are given: ``DEFAULT_DRAWS``, or as many as fit ``AUTO_MC_WORK``
    where that is fewer (4,980 at m = n = 100,000; 2,475 at m = 999,990, n = 10), at least 1,000."""
    return int(max(1000, min(DEFAULT_DRAWS, AUTO_MC_WORK // draw_cost(m, n))))


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
        Monte Carlo draws (default 100,000, or fewer where that would take more than ``AUTO_MC_WORK``:
        :func:`auto_draws`; at most 10^7).
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

    Examples
    --------
    Four positives among 34 items: the exact law (every one of the C(34, 4) placements counted).

    >>> from apnull import null_distribution
    >>> law = null_distribution(4, 30)
    >>> law.method, round(law.mean, 4), round(law.quantile(0.95), 4)
    ('exact', 0.201, 0.4269)
    >>> round(law.pvalue(0.5), 4)  # P(AP >= 0.5) for a random ranking
    0.0237

    A larger size, on a grid of step 1/G with every quantile within ``error_bound``; Monte Carlo with
    a seed gives the same draws every time.

    >>> grid = null_distribution(20, 500, method="grid")
    >>> grid.method, grid.error_bound, round(grid.quantile(0.95), 3)
    ('grid', 0.001, 0.086)
    >>> mc = null_distribution(4, 30, method="mc", draws=10_000, seed=1)
    >>> mc.draws.size, round(mc.quantile(0.95), 4)
    (10000, 0.4229)
    """
    m, n = check_sizes(m, n)
    metric = check_metric(metric)
    tol = as_probability(tol, "tol", open_low=True)
    chosen = _choose(m, n, metric, check_choice(method, METHODS, "method"), tol)
    if metric == "pr" and chosen == "grid":
        chosen = "exact"
    if chosen == "mc":
        draws = auto_draws(m, n) if draws is None else check_draws(draws)
    key = (m, n, metric, chosen, draws if chosen == "mc" else None, seed if chosen == "mc" else None,
           tol if chosen == "grid" else None, grid_size if chosen == "grid" else None)

    def compute() -> NullDistribution:
        if chosen == "exact":
            return pr_law(m, n) if metric == "pr" else ap_law_exact(m, n, max_placements=EXACT_MAX_PLACEMENTS)
        if chosen == "grid":
            return ap_law_grid(m, n, grid_size=grid_size, tol=tol)
        sample = sample_null(m, n, draws, seed)
        return NullDistribution.from_draws(metric, m, n, getattr(sample, metric), seed=sample.seed)

    if chosen == "mc" and seed is None:  # a fresh seed every call: nothing to share
        return compute()
    return _CACHE.get_or_compute(key, compute)


def threshold(m, n, metric="ap", q=0.95, method="auto", alpha=None, **kwargs) -> float:
    """The q-quantile of the null law: a value a random ranking exceeds with probability <= 1 - q.

    For exact and grid laws the smallest support value x with P(X <= x) >= q (R's ``qhyper``); for
    Monte Carlo numpy's default interpolation (R's quantile type 7). ``alpha`` (instead of q) gives
    the level as alpha = 1 - q, which keeps its meaning however small (1 - 1e-30 is 1.0 as a float).
    Where the law does not resolve alpha (:func:`alpha_floor`) the threshold is counted from the far
    tail, or refused: see :func:`resolved_threshold`, which also says which answered. ``kwargs`` go to
    :func:`null_distribution` (draws, seed, tol, grid_size).

    Raises
    ------
    ValueError
        For bad input, and for an alpha below what the law resolves that counting cannot bracket
        (the message gives the smallest alpha the law answers).

    Examples
    --------
    >>> from apnull import threshold
    >>> round(threshold(4, 30), 4)  # AP of 4 positives among 34 items: 95% of random rankings score <= this
    0.4269
    >>> round(threshold(4, 30, q=0.99), 4), threshold(4, 30, metric="pr")
    (0.5845, 0.5)
    >>> threshold(4, 30, alpha=1e-9)  # below P(AP = 1) = 1 / 46,376: only AP = 1 is left above it
    1.0
    """
    q, alpha = level(q, alpha)
    return resolved_threshold(null_distribution(m, n, metric, method, **kwargs), q=q, alpha=alpha).value


def p_value(value, m, n, metric="ap", method="auto", **kwargs) -> float:
    """P(X >= value) under the null: the chance that a random ranking scores at least ``value``.

    The point of :func:`tail_pvalue`: the law's own p-value where it resolves it, the counted far tail
    where it does not (so a value that can occur never gets 0: P(AP = 1) = 1 / C(m+n, m)). Monte Carlo
    p-values are (1 + #{draws >= value}) / (1 + draws), never zero, where at least 10 draws reach the
    value; beyond that AP's p-value is counted. Values are compared with an
    absolute tolerance of ``VALUE_TOL`` (1e-12) so that an AP computed in another order matches its
    null value.

    Examples
    --------
    >>> from apnull import p_value
    >>> round(p_value(0.5, 4, 30), 4)  # AP = 0.5 with 4 positives and 30 negatives
    0.0237
    >>> round(p_value(0.75, 4, 30, metric="pr"), 4)  # 3 of the 4 positives in the top 4
    0.0026
    >>> round(p_value(0.2, 10, 300, method="mc", draws=10_000, seed=1), 6)  # (1 + 26 hits) / (1 + 10,000)
    0.0027
    """
    return tail_pvalue(value, m, n, metric, method, **kwargs).p


def tail_pvalue(value, m, n, metric="ap", method="auto", rtol=1e-9, work=TAIL_WORK, **kwargs) -> TailPValue:
    """P(X >= value) with bounds that hold and its log10, resolved in the far tail.

    The law of ``method`` (see :func:`null_distribution`, which ``kwargs`` go to) answers where it
    resolves the p-value; in the far tail, where the grid law trims and Monte Carlo sees no draw,
    AP's p-value is counted (:func:`apnull.tail.combine`, :func:`apnull.tail.tail_bounds`) to a
    relative error ``rtol`` within ``work`` states. Returns a :class:`apnull.tail.TailPValue`: ``p``,
    ``low``, ``high``, ``log10_p`` (exact where the float underflows), ``rel_error``, ``source``.
    """
    v = check_value(value)
    return combine(null_distribution(m, n, metric, method, **kwargs), v, rtol=rtol, work=work)


def resolved_pvalue(value, law: NullDistribution, rtol=1e-9, work=TAIL_WORK) -> TailPValue:
    """:func:`tail_pvalue` for a law already in hand (the pages and ``score`` hold theirs)."""
    return combine(law, check_value(value), rtol=rtol, work=work)


class NullPosition(NamedTuple):
    """Where an observed AP falls in the null law of its (m, n).

    p : P(AP_null >= ap), the p-value (Monte Carlo: (1 + #{draws >= ap}) / (1 + draws)).
    percentile : the null percentile, 100 * P(AP_null < ap): the share of random orderings scoring
        strictly lower (Monte Carlo: the share of draws below ap). For exact and grid laws
        ``percentile + 100 p = 100``. The command line and the ranking editor both report this one.
    p_low, p_high : guaranteed bounds on the exact p (exact and grid laws, and Monte Carlo laws whose
        far tail was counted); a 95% Wilson interval for Monte Carlo otherwise; both equal ``p`` for
        the exact law. The p and its bounds come from :func:`resolved_pvalue`.
    at_floor : True when no Monte Carlo draw reached ap and counting could not resolve the p (p is then
        1 / (1 + draws), an upper end).
    method, mean : the law's method ("exact", "grid", "mc") and mean.
    placements_at_least, placements : for the exact law, how many of the C(m+n, m) placements score
        >= ap, and C(m+n, m); None otherwise.
    """

    p: float
    percentile: float
    p_low: float
    p_high: float
    at_floor: bool
    method: str
    mean: float
    placements_at_least: int | None
    placements: int | None
    log10_p: float = math.nan
    rel_error: float = math.nan
    source: str = ""


def null_position(ap, law: NullDistribution) -> NullPosition:
    """p-value and null percentile of an observed AP under ``law`` (see :class:`NullPosition`)."""
    ap = check_value(ap)
    tail = resolved_pvalue(ap, law)
    p = tail.p
    if law.draws is not None:
        below = float(np.searchsorted(law.draws, ap - VALUE_TOL, side="left") / law.draws.size)
        at_floor = bool(law.draws[-1] < ap - VALUE_TOL) and tail.source == "mc bound"
    else:
        below = float(max(0.0, 1.0 - p))
        at_floor = False
    lo, hi = tail.low, tail.high
    count = total = None
    if law.method == "exact" and law.total is not None and law.counts is not None:
        total = int(law.total)
        idx = np.searchsorted(law.values, ap - VALUE_TOL, side="left")
        count = int(np.sum(law.counts[idx:]))
    return NullPosition(p=p, percentile=100.0 * below, p_low=min(lo, hi), p_high=max(lo, hi), at_floor=at_floor,
                        method=law.method, mean=float(law.mean), placements_at_least=count, placements=total,
                        log10_p=tail.log10_p, rel_error=tail.rel_error, source=tail.source)
