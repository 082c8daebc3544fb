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

import numpy as np

from .limits import as_int, as_probability, check_draws, check_seed, check_sizes

__all__ = ["check_top", "hypergeom_pmf", "hypergeom_ppf", "hypergeom_precision_at_k", "hit_counts", "pmf_fit",
           "EXACT_INTEGER_MAX_DRAWS"]

#: Laws with at most this many draws k (k = m for Precision@R) are computed from exact integers
#: (correctly rounded probabilities, a few milliseconds at the bound, no scipy.stats import, which
#: takes more than half a second); larger ones by scipy.stats.hypergeom.
EXACT_INTEGER_MAX_DRAWS = 2000


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
    """``qhyper(q, m, n, k) / k``: the smallest Precision@K value x with P(Precision@K <= x) >= q."""
    from scipy import stats

    m, n, k = check_top(m, n, k)
    q = as_probability(q, "q")
    return float(stats.hypergeom(m + n, m, k).ppf(q)) / k


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
        from scipy import stats

        chi2 = float(((O - E) ** 2 / E).sum())
        p = float(stats.chi2.sf(chi2, df))
    return {"chi2": chi2, "df": int(df), "p_value": p, "cells": int(O.size), "tv": float(tv), "draws": int(draws)}
