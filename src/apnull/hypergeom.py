"""The hypergeometric law of Precision@K under the null, and a goodness-of-fit test.

m positives ("white balls", e.g. replicates) and n negatives ("black balls", e.g. controls) are put in
uniformly random order. The top k positions are "drawn from the urn", so the number of positives in
the top k is Hypergeometric(population m + n, successes m, draws k) and

    Precision@K = hits / k,   E[Precision@K] = m / (m + n)   (for every k).

Precision@R is the case k = m (:func:`apnull.exact.pr_law` uses :func:`hypergeom_pmf`). Shuffled rankings come from the one
sampler, :func:`apnull.sample_null` with ``top=k``; :func:`hypergeom_precision_at_k` draws the hit
count straight from the law instead (R's ``rhyper``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .limits import as_int, as_probability, check_draws, check_seed, check_sizes

__all__ = ["check_top", "hypergeom_pmf", "hypergeom_ppf", "hypergeom_precision_at_k", "hit_counts", "pmf_fit",
           "log_int", "log_comb", "log_tail", "tail_hits", "EXACT_INTEGER_MAX_DRAWS", "EXACT_COMB_MAX_BITS"]

#: Laws with at most this many draws k (k = m for Precision@R) are computed from exact integers
#: (correctly rounded probabilities, a few milliseconds at the bound, no scipy.stats import, which
#: takes more than half a second); larger ones by scipy.stats.hypergeom.
EXACT_INTEGER_MAX_DRAWS = 2000
#: :func:`log_comb` takes C(a, b) as an exact integer while it has at most about this many bits (a few
#: milliseconds); larger ones by a sum of logarithms with a stated error.
EXACT_COMB_MAX_BITS = 200_000
#: Unit roundoff of float64.
_U = 2.0**-53


def check_top(m, n, k) -> tuple[int, int, int]:
    """Validated (m, n, k): sizes as :func:`apnull.limits.check_sizes`, and 1 <= k <= m + n."""
    m, n = check_sizes(m, n)
    k = as_int(k, "k (top positions counted)")
    if not 1 <= k <= m + n:
        raise ValueError(f"k (top positions counted) must lie between 1 and m + n = {m + n}, got {k}")
    return m, n, k


def hypergeom_precision_at_k(m, n, k, draws=10_000, seed=None) -> np.ndarray:
    """``draws`` values of Precision@K drawn straight from its law (R's ``rhyper(nn, m, n, k) / k``).

    The stream is ``numpy.random.default_rng(SeedSequence([seed, m, n, k]))``: independent of the
    shuffled rankings of :func:`apnull.sample_null` with the same seed.
    """
    m, n, k = check_top(m, n, k)
    draws = check_draws(draws)
    rng = np.random.default_rng(np.random.SeedSequence([check_seed(seed), m, n, k]))
    return rng.hypergeometric(m, n, k, size=draws) / k


def hypergeom_pmf(m, n, k) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the hits in the top k: (hits j, P(j)) for j = max(0, k - n) .. min(k, m).

    Precision@K takes the values ``j / k`` with these probabilities (the hypergeometric pmf with
    population m + n, m successes and k draws): P(j) = C(m, j) C(n, k - j) / C(m + n, k). For
    k <= ``EXACT_INTEGER_MAX_DRAWS`` each is the float nearest that fraction, from the recurrences
    C(m, j + 1) = C(m, j) (m - j) / (j + 1) and C(n, i - 1) = C(n, i) i / (n - i + 1) in exact
    integers (scipy's pmf is off by up to 2.5e-10 relative in far tails); beyond, scipy's.
    """
    return _pmf(*check_top(m, n, k))


def _pmf(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`hypergeom_pmf` on checked arguments."""
    lo, hi = max(0, k - n), min(k, m)
    hits = np.arange(lo, hi + 1)
    if lo == hi:  # one possible value (e.g. no negatives): probability 1, whatever the size
        return hits, np.ones(1)
    if k > EXACT_INTEGER_MAX_DRAWS:
        from scipy import stats

        return hits, stats.hypergeom(m + n, m, k).pmf(hits)
    total = math.comb(m + n, k)
    a, b = math.comb(m, lo), math.comb(n, k - lo)  # C(m, j), C(n, k - j) at j = lo
    probs = np.empty(hits.size)
    for i, j in enumerate(range(lo, hi + 1)):
        probs[i] = a * b / total  # int / int: Python rounds the exact quotient correctly
        if j < hi:
            a = a * (m - j) // (j + 1)
            b = b * (k - j) // (n - k + j + 1)
    return hits, probs


def hypergeom_ppf(m, n, k, q=0.95) -> float:
    """``qhyper(q, m, n, k) / k``: the smallest Precision@K value x with P(Precision@K <= x) >= q.

    For k <= ``EXACT_INTEGER_MAX_DRAWS`` decided exactly: the smallest j with
    sum_{i <= j} C(m, i) C(n, k - i) >= q C(m + n, k) in integers, q read as its fraction
    (:func:`apnull.fdr.fractions_of`: 0.95 is 19/20, so a level equal to a cumulative probability
    reaches it); beyond, scipy's ``hypergeom.ppf``. Needs no scipy.stats (seconds to import) for the
    pages' sizes.
    """
    m, n, k = check_top(m, n, k)
    q = as_probability(q, "q")
    if k > EXACT_INTEGER_MAX_DRAWS:
        from scipy import stats

        return float(stats.hypergeom(m + n, m, k).ppf(q)) / k
    return _exact_ppf(m, n, k, q) / k


def _exact_ppf(m: int, n: int, k: int, q: float) -> int:
    """The hits of :func:`hypergeom_ppf` on checked arguments, counted in integers."""
    from fractions import Fraction

    from .fdr import fractions_of

    num, den, on_grid = (int(v) for v in fractions_of(q))
    level = Fraction(num, den) if on_grid else Fraction(q)
    lo, hi = max(0, k - n), min(k, m)
    total = math.comb(m + n, k)
    a, b = math.comb(m, lo), math.comb(n, k - lo)  # C(m, j), C(n, k - j) at j = lo
    reached = 0
    for j in range(lo, hi + 1):
        reached += a * b
        if reached * level.denominator >= level.numerator * total:
            return j
        if j < hi:
            a = a * (m - j) // (j + 1)
            b = b * (k - j) // (n - k + j + 1)
    return hi


def hit_counts(precision, k) -> np.ndarray:
    """Hits in the top k (integers) from Precision@K values."""
    return np.rint(np.asarray(precision, dtype=float) * int(k)).astype(np.int64)


def pmf_fit(precision, m, n, k, min_expected: float = 5.0) -> dict:
    """Compare a sample of Precision@K with the exact hypergeometric pmf.

    Chi-square goodness of fit: neighbouring hit counts are pooled (left to right, the remainder
    into the last cell) until every cell expects at least ``min_expected`` draws; statistic
    ``sum (O - E)^2 / E`` on ``cells - 1`` degrees of freedom. Total variation distance:
    ``(1/2) sum_j |share_j - P(j)|`` over the unpooled hit counts (sampling noise alone gives about
    ``sqrt(#values / (2 pi draws))``). A sample value outside the support makes the fit fail
    (p-value 0, total variation counts it).

    Returns
    -------
    dict
        ``chi2``, ``df``, ``p_value`` (NaN when fewer than two cells remain, e.g. a degenerate law),
        ``cells`` (after pooling), ``tv`` and ``draws``.
    """
    m, n, k = check_top(m, n, k)
    hits = hit_counts(precision, k)
    draws = hits.size
    if draws == 0:
        raise ValueError("precision must hold at least one draw")
    support, pmf = hypergeom_pmf(m, n, k)
    lo = support[0]
    inside = (hits >= lo) & (hits <= support[-1])
    observed = np.bincount(hits[inside] - lo, minlength=support.size).astype(float)
    outside = int(draws - inside.sum())
    tv = 0.5 * (np.abs(observed / draws - pmf).sum() + outside / draws)
    expected = pmf * draws
    cells_o, cells_e = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed, expected):
        acc_o += o
        acc_e += e
        if acc_e >= min_expected:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        if cells_e:
            cells_o[-1] += acc_o
            cells_e[-1] += acc_e
        else:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
    O, E = np.array(cells_o), np.array(cells_e)
    df = O.size - 1
    if outside:
        chi2, p = float("inf"), 0.0
    elif df < 1:
        chi2, p = 0.0, float("nan")
    else:
        from scipy import special  # chdtrc is scipy.stats.chi2.sf, without importing scipy.stats (seconds)

        chi2 = float(((O - E) ** 2 / E).sum())
        p = float(special.chdtrc(df, chi2))
    return {"chi2": chi2, "df": int(df), "p_value": p, "cells": int(O.size), "tv": float(tv), "draws": int(draws)}


# -- far tails in log space ---------------------------------------------------------------------------
def log_int(v: int) -> float:
    """Natural log of a positive Python int of any size (within a few units in the last place)."""
    shift = max(0, v.bit_length() - 1000)
    return math.log(v >> shift) + shift * math.log(2.0)


@lru_cache(maxsize=4096)
def log_comb(a: int, b: int) -> tuple[float, float]:
    """(ln C(a, b), a bound on its absolute error), for 0 <= b <= a of any size up to 10^6.

    As an exact integer (``math.comb``) while b log2(a) <= ``EXACT_COMB_MAX_BITS`` (error a few units
    in the last place); else ``sum_{i=1..b} ln(a - b + i) - ln(i)`` summed exactly (``math.fsum``) from
    logs each within 4 units in the last place of ln(a): error at most 8 b ulp(ln a) plus the final
    rounding, 7e-9 for b = 500,000 (a relative error of C itself). Unchecked.
    """
    b = min(b, a - b)
    if b < 0:
        return -math.inf, 0.0
    if b == 0:
        return 0.0, 0.0
    if b * math.log2(a) <= EXACT_COMB_MAX_BITS:
        v = log_int(math.comb(a, b))
        return v, 8 * math.ulp(max(v, 1.0))
    num = np.log(np.arange(a - b + 1, a + 1, dtype=float))
    den = np.log(np.arange(1, b + 1, dtype=float))
    v = math.fsum(num) - math.fsum(den)
    return v, 8 * b * math.ulp(math.log(a)) + 4 * math.ulp(max(abs(v), 1.0))


def _log_pmf(m: int, n: int, k: int, j: int) -> tuple[float, float]:
    """ln P(H = j) for H ~ Hypergeometric(m + n, m, k) and its error bound (j inside the support)."""
    parts = (log_comb(m, j), log_comb(n, k - j), log_comb(m + n, k))
    v = parts[0][0] + parts[1][0] - parts[2][0]
    return v, sum(e for _, e in parts) + 4 * math.ulp(max(abs(v), 1.0))


def log_tail(m: int, n: int, k: int, h: int) -> tuple[float, float]:
    """(ln P(H >= h), a bound on its absolute error) for the hits H in the top k: Hypergeometric(m + n,
    m, k), exact in log space however small the probability (1 / C(200,000, 100,000) = 10^-60203.25).

    Above the mode the tail is P(H = h) (:func:`log_comb`) times ``sum_{j>=h} prod_{i<j} r_i`` with
    the ratios ``r_j = (m - j)(k - j) / ((j + 1)(n - k + j + 1)) <= 1`` of consecutive terms (each
    rounded once, their products and sum in floats: relative error at most (3 L + 2) u for L terms);
    at or below the mode it is ``1 - P(H <= h - 1)``, the lower sum taken the same way from h - 1
    down. Unchecked: sizes as :func:`check_top`.
    """
    lo, hi = max(0, k - n), min(k, m)
    if h <= lo:
        return 0.0, 0.0
    if h > hi:
        return -math.inf, 0.0
    mode = (k + 1) * (m + 1) // (m + n + 2)
    if h > mode:
        j = np.arange(h, hi, dtype=float)
        ratios = (m - j) * (k - j) / ((j + 1) * (n - k + j + 1))
        terms = np.cumprod(ratios)
        total = 1.0 + math.fsum(terms)
        base, err = _log_pmf(m, n, k, h)
        v = base + math.log(total)
        return v, err + (3 * terms.size + 4) * _U * 1.01 + 2 * math.ulp(max(abs(v), 1.0))
    j = np.arange(h - 1, lo, -1, dtype=float)  # from h - 1 down: P(H = j - 1) / P(H = j)
    ratios = j * (n - k + j) / ((m - j + 1) * (k - j + 1))
    terms = np.cumprod(ratios)
    base, err = _log_pmf(m, n, k, h - 1)
    lower = math.exp(base) * (1.0 + math.fsum(terms))
    rel = math.expm1(err + (3 * terms.size + 6) * _U * 1.01)
    lower = min(lower, 1.0)
    if lower >= 1.0:  # rounding: no information (cannot happen below the mode of a proper law)
        return -math.inf, math.inf
    v = math.log1p(-lower)
    return v, lower * rel / (1.0 - lower * (1 + rel)) + 2 * math.ulp(max(abs(v), 1.0))


def tail_hits(m: int, n: int, k: int, log_alpha: float) -> tuple[int, int]:
    """The hits h with ``P(H > h) <= alpha`` (alpha = exp(log_alpha)): ``(low, high)``, the smallest h
    proved to satisfy it (high) and the largest proved not to, plus one (low): the smallest such h is
    in [low, high], and they are equal unless alpha lies within the rounding of a tail. Bisection over
    hits with :func:`log_tail`. Unchecked."""
    lo, hi = max(0, k - n), min(k, m)

    def proved(h, upper):  # P(H >= h + 1) <= alpha proved (upper) / P(H >= h + 1) > alpha proved
        v, e = log_tail(m, n, k, h + 1)
        return v + e <= log_alpha if upper else v - e > log_alpha

    def first(pred):  # smallest h in [lo, hi] with pred(h) (pred monotone, true at hi)
        a, b = lo, hi
        while a < b:
            mid = (a + b) // 2
            if pred(mid):
                b = mid
            else:
                a = mid + 1
        return a

    high = first(lambda h: proved(h, True))
    low = first(lambda h: not proved(h, False))
    return low, high
