"""Closed forms and exact null laws of Average Precision and Precision@R.

The null: m positives and n negatives, N = m + n, every one of the C(N, m) placements of the
positives equally likely.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from .closed import closed_form_law, grid_law_m1
from .law import NullDistribution
from .limits import EXACT_MAX_PLACEMENTS, GRID_MAX_WORK, as_int, check_sizes

__all__ = [
    "harmonic",
    "expected_ap",
    "expected_ap_fraction",
    "ap_variance",
    "ap_variance_fraction",
    "pr_law",
    "ap_law_exact",
    "ap_law_grid",
    "grid_size_for",
    "exact_scan",
    "grid_scan",
]

#: Probability mass per window trim below which the grid law drops improbable end cells.
TRIM_MASS = 1e-16


def harmonic(N: int, power: int = 1) -> float:
    """H_N^(power) = sum_{k=1..N} 1/k^power, as a float (exact summation for N <= 10^6)."""
    if N <= 0:
        return 0.0
    if N <= 1_000_000:
        k = np.arange(1, N + 1, dtype=float)
        return math.fsum(1.0 / k**power)
    from scipy import special  # imported here: scipy is slow to import and rarely needed

    if power == 1:
        return float(special.digamma(N + 1) + np.euler_gamma)
    return float(special.zeta(power) - special.zeta(power, N + 1))


def _harmonic_fraction(N: int, power: int = 1) -> Fraction:
    return sum((Fraction(1, k**power) for k in range(1, N + 1)), Fraction(0))


def expected_ap(m, n) -> float:
    """Exact null mean of AP.

    ``E[AP] = p + (1 - p) * (H_N - 1) / (N - 1)`` with ``N = m + n``, ``p = m / N`` and ``H_N`` the
    N-th harmonic number; N = 1 (a single positive, no negative) gives 1. This equals the double sum
    of Bestgen (2015). It is not ``m / N``: for m = 4, n = 30 it is 0.201, not 0.118.

    Raises
    ------
    ValueError
        If m < 1 or n < 0 or either is not a whole number.
    """
    m, n = check_sizes(m, n)
    N = m + n
    if N == 1:
        return 1.0
    p = m / N
    return p + (1 - p) * (harmonic(N) - 1) / (N - 1)


def expected_ap_fraction(m, n) -> Fraction:
    """E[AP] as an exact rational (same formula as :func:`expected_ap`); meant for N up to a few thousand."""
    m, n = check_sizes(m, n)
    N = m + n
    if N == 1:
        return Fraction(1)
    p = Fraction(m, N)
    return p + (1 - p) * (_harmonic_fraction(N) - 1) / (N - 1)


def _variance_terms(m: int, N: int, H, H2, one):
    """E[W] and E[W^2] for W = m * AP; works for floats and Fractions (``one`` sets the type)."""
    c = [one]
    for r in range(1, 5):
        c.append(c[-1] * (m - r + 1) / (N - r + 1) if r <= m else 0 * one)
    ew = c[1] * H + c[2] * (N - H)
    ew2 = (
        c[1] * H2
        + c[2] * (2 * H * H + 3 * H - 5 * H2)
        + c[3] * (2 * N * H + 5 * N - 5 * H * H - 9 * H + 7 * H2)
        + c[4] * (N * N - 2 * N * H - 5 * N + 3 * H * H + 6 * H - 3 * H2)
    )
    return ew, ew2


def ap_variance(m, n) -> float:
    """Exact null variance of AP.

    With ``W = m * AP``, ``c_r = C(m, r) / C(N, r)``, ``H = H_N`` and ``H2 = sum_{k<=N} 1/k^2``::

        E[W]   = c1*H + c2*(N - H)
        E[W^2] = c1*H2 + c2*(2H^2 + 3H - 5H2) + c3*(2NH + 5N - 5H^2 - 9H + 7H2)
                 + c4*(N^2 - 2NH - 5N + 3H^2 + 6H - 3H2)
        Var[AP] = (E[W^2] - E[W]^2) / m^2

    ``c_r`` is 0 for r > m. For N <= 2000 the sum is done in exact rationals and rounded once; beyond
    that in floating point, where the subtraction cancels: the absolute error stays near 1e-16, which
    is a relative error well under 1e-9 unless m >> n makes the variance itself tiny (e.g. 1e-8
    relative at m = 10000, n = 1). m + n = 1 or n = 0 gives 0.
    """
    m, n = check_sizes(m, n)
    N = m + n
    if n == 0:
        return 0.0
    if N <= 2000:
        return float(ap_variance_fraction(m, n))
    H, H2 = harmonic(N), harmonic(N, 2)
    ew, ew2 = _variance_terms(m, N, H, H2, 1.0)
    return max(0.0, (ew2 - ew * ew) / (m * m))


def ap_variance_fraction(m, n) -> Fraction:
    """Var[AP] as an exact rational (see :func:`ap_variance`)."""
    m, n = check_sizes(m, n)
    N = m + n
    H, H2 = _harmonic_fraction(N), _harmonic_fraction(N, 2)
    ew, ew2 = _variance_terms(m, N, H, H2, Fraction(1))
    return (ew2 - ew * ew) / (m * m)


def pr_law(m, n) -> NullDistribution:
    """Exact null law of Precision@R.

    The number of positives in the top m is Hypergeometric(population N = m + n, successes m,
    draws m) (:func:`apnull.hypergeom.hypergeom_pmf` with k = m: correctly rounded exact fractions for
    m up to 2,000); Precision@R = hits / m. Support: 0, 1/m, ..., 1 (values with zero probability are
    dropped, e.g. hits < m - n).
    """
    from .hypergeom import hypergeom_pmf

    m, n = check_sizes(m, n)
    hits, pmf = hypergeom_pmf(m, n, m)
    keep = pmf > 0
    return NullDistribution(
        metric="pr", m=m, n=n, method="exact", values=hits[keep] / m, probs=pmf[keep], error_bound=0.0
    )


def _lcm_upto(N: int) -> int:
    out = 1
    for k in range(2, N + 1):
        out = out * k // math.gcd(out, k)
    return out


def ap_law_exact(m, n, max_placements: int = EXACT_MAX_PLACEMENTS) -> NullDistribution:
    """Exact null law of AP by dynamic programming over all placements.

    Scans positions k = 1..N keeping, for each number j of positives placed so far, the distinct
    partial sums ``S = sum_{i<=j} i / r_i`` and how many placements reach each. A positive landing at
    rank k as the (j+1)-th adds (j+1)/k. Counts are integers, so probabilities are exact ratios
    count / C(N, m). When m * lcm(1..N) fits in 62 bits the sums are kept as exact integers in units
    of 1/lcm(1..N); otherwise as floats, where sums closer than 1e-12 are merged (they differ only by
    rounding). n = 0, m = 1 and n = 1 take their closed forms instead (:func:`closed_form_law`, O(m + n)).

    Raises
    ------
    ValueError
        If C(N, m) exceeds ``max_placements`` (use :func:`ap_law_grid` instead).
    """
    m, n = check_sizes(m, n)
    N = m + n
    total = math.comb(N, m)
    if total > max_placements:
        raise ValueError(
            f"exact AP law for m={m}, n={n} has {total:,} placements, more than {max_placements:,}; "
            "use method='grid' or 'mc'"
        )
    closed = closed_form_law(m, n)
    if closed is not None:
        values, counts = closed
    else:
        values, counts = _exact_sums(m, n)
        order = np.argsort(values, kind="stable")
        values, counts = values[order], counts[order]
    return NullDistribution(
        metric="ap", m=m, n=n, method="exact", values=values,
        probs=counts.astype(float) / float(total), error_bound=0.0, counts=counts, total=total,
    )


@lru_cache(maxsize=32)
def _exact_sums(m: int, n: int):
    for _, values, counts in exact_scan(m, n):
        pass
    return values, counts


def exact_scan(m: int, n_max: int):
    """Yield ``(n, values, counts)`` for n = 0..n_max: the exact AP law of (m, n), from ONE scan.

    Scans positions k = 1..m+n_max keeping, for each number j of positives among the first k, the
    distinct partial sums ``S = sum_{i<=j} i / r_i`` and how many placements reach each. A positive
    landing at rank k as the (j+1)-th adds (j+1)/k. After position k the row j = m holds every
    placement of m positives among k positions, i.e. the law of AP for (m, k - m): the laws of all n
    come out of one scan (the "Binning n" page uses that). Counts are integers, so probabilities are
    exact ratios count / C(m+n, m). When m * lcm(1..m+n_max) fits in 62 bits the sums are exact
    integers in units of 1/lcm; otherwise floats, where sums closer than 1e-12 (relative) are merged
    (they differ only by rounding). Values come out sorted. Unchecked: m >= 1, n_max >= 0.
    """
    K = m + n_max
    L = _lcm_upto(K)
    integer = m * L < 2**62
    dtype = np.int64 if integer else float
    # states[j] = (sums, counts) for j positives among the first k positions
    states = [(np.zeros(1, dtype=dtype), np.ones(1, dtype=np.int64))] + [None] * m
    for k in range(1, K + 1):
        for j in range(min(k - 1, m - 1), -1, -1):
            if states[j] is None:
                continue
            step = (j + 1) * (L // k) if integer else (j + 1) / k
            moved = (states[j][0] + step, states[j][1])
            states[j + 1] = moved if states[j + 1] is None else _merge(states[j + 1], moved, integer)
        # a row that can no longer reach m positives by position K is dead
        for j in range(0, m):
            if states[j] is not None and m - j > K - k:
                states[j] = None
        if k >= m:
            sums, counts = states[m]
            yield k - m, (sums.astype(float) / (m * L) if integer else sums / m), counts


def _merge(a, b, integer: bool):
    s = np.concatenate([a[0], b[0]])
    c = np.concatenate([a[1], b[1]])
    if integer:
        uniq, inv = np.unique(s, return_inverse=True)
    else:
        order = np.argsort(s, kind="stable")
        s, c = s[order], c[order]
        new_group = np.empty(s.size, dtype=bool)
        new_group[0] = True
        new_group[1:] = np.diff(s) > 1e-12 * np.maximum(1.0, np.abs(s[1:]))
        inv = np.cumsum(new_group) - 1
        uniq = s[new_group]
    out = np.zeros(uniq.size, dtype=np.int64)
    np.add.at(out, inv, c)
    return uniq, out


def grid_size_for(m: int, tol: float) -> int:
    """Smallest G (at least 64) with m / G <= tol: the grid law's guaranteed accuracy in AP units."""
    return max(64, math.ceil(m / tol - 1e-9))


def ap_law_grid(m, n, grid_size: int | None = None, tol: float = 1e-3) -> NullDistribution:
    """Null law of AP on a grid of step 1/G, with a guaranteed error bound.

    Scans positions k = 1..N keeping ``P[j, g]``: the probability that j positives lie in the first
    k positions and their running AP ``(1/m) sum i/r_i`` falls in grid cell g. Position k holds a
    positive with probability (m - j) / (N - k + 1); the (j+1)-th positive at rank k raises AP by
    d = (j+1) / (m k), which is split between the two neighbouring cells in proportion to keep the
    mean exact. Every split moves mass by less than one cell, so after m positives the grid law's CDF
    satisfies ``F(t - m/G) <= F_grid(t) <= F(t + m/G)``: any quantile is within ``error_bound = m/G``
    of the exact one. The mean is exact but for fragments that rounding carried past AP = 1, which
    are folded back onto 1 (a change far below the error bound).

    Parameters
    ----------
    m, n : int
        Positives (>= 1) and negatives (>= 0).
    grid_size : int, optional
        G, the number of cells on [0, 1]. Default: the smallest G with m / G <= tol.
    tol : float
        Wanted accuracy of quantiles in AP units when ``grid_size`` is not given.

    Notes
    -----
    Cost at most O(N * m * G / 2) additions, memory O(m * G) floats. To save work, cells at the ends
    of each row's window whose probability is below ``TRIM_MASS / G`` are dropped every 8 positions;
    the total dropped probability is reported as ``dropped_mass`` (of order 1e-14) and widens the CDF
    bound above by that much (the sum of every trimmed cell, tracked as it is dropped, plus rounding).
    Raises ValueError when N * m * G exceeds ``GRID_MAX_WORK``. For m = 1 the scan is done in closed
    form (AP = 1/k with probability 1/N each, split between the same two cells, nothing trimmed).
    """
    m, n = check_sizes(m, n)
    N = m + n
    G = as_int(grid_size, "grid_size", minimum=16) if grid_size is not None else grid_size_for(m, tol)
    if N * m * G > GRID_MAX_WORK:
        raise ValueError(
            f"grid AP law for m={m}, n={n} at G={G} needs {N * m * G:.2e} cell updates, "
            f"more than {GRID_MAX_WORK:.0e}; use method='mc' or a coarser grid"
        )
    probs, dropped = _grid_dp(m, n, G)
    cells = np.flatnonzero(probs > 0)
    return NullDistribution(
        metric="ap", m=m, n=n, method="grid", values=cells / G, probs=probs[cells],
        error_bound=m / G, grid_size=G, dropped_mass=dropped,
    )


@lru_cache(maxsize=16)
def _grid_dp(m: int, n: int, G: int):
    if m == 1:  # the scan in closed form
        return grid_law_m1(n, G), 0.0
    trimmed = [0.0]
    for _, probs in grid_scan(m, n, G, trimmed):
        pass
    probs.setflags(write=False)
    return probs, trimmed[0] * (1 + 1e-9)


def grid_scan(m: int, n_max: int, G: int, trimmed: list | None = None):
    """Yield ``(n, probs)`` for n = 0..n_max: the grid law of AP for (m, n) on cells 0..G, from ONE scan.

    Row j of ``P`` is the law of the running AP ``(1/m) sum_{i<=j} i / r_i`` given that exactly j
    positives lie among the first k positions. Position k holds the (j+1)-th positive with
    probability w = (j+1)/k given j+1 positives among k, so ``row[j+1] <- (1 - w) row[j+1] +
    w shift(row[j], d)`` with d = (j+1) G / (m k) cells, split between the two neighbouring cells so
    that the mean stays exact. After position k, row m is the grid law of AP for (m, k - m).

    To save work each row is kept as ``f[j] * P[j]`` (the (1 - w) branch only scales f), only its
    nonzero window is updated, rows that can no longer reach m positives by position m + n_max are
    left behind, and every 8 positions cells below ``TRIM_MASS / width`` are trimmed off the ends of
    each window (the lost mass, of order 1e-14, is added to ``trimmed[0]`` when a list is given:
    each row is a probability law, so a row's lost mass lowers the final law by at most as much). Fragments that
    rounding carried past AP = 1 are folded back onto 1. Unchecked: m >= 1, n_max >= 0, G >= 1.
    """
    K = m + n_max
    width = G + m + 2  # rounding can carry a fragment of mass up to one cell per positive past 1
    P = np.zeros((m + 1, width))
    P[0, 0] = 1.0
    f = np.ones(m + 1)
    lo = np.zeros(m + 1, dtype=np.int64)  # nonzero window [lo, hi) of each row
    hi = np.zeros(m + 1, dtype=np.int64)
    hi[0] = 1
    buf = np.empty(width)
    cut = TRIM_MASS / width
    for k in range(1, K + 1):
        j_low = max(0, m - (K - k) - 1)  # rows below this cannot reach m positives any more
        for j in range(min(k - 1, m - 1), j_low - 1, -1):
            w = (j + 1) / k
            live = hi[j + 1] > lo[j + 1]
            if live and w < 1.0:
                f[j + 1] *= 1.0 - w
            elif live:  # w = 1: all of the first k positions are positives; the old row is impossible
                P[j + 1, lo[j + 1]:hi[j + 1]] = 0.0
                live = False
            if not live:
                f[j + 1] = 1.0
            a, b = lo[j], hi[j]
            if b <= a:
                continue
            d = (j + 1) * G / (m * k)
            s = int(d)
            frac = d - s
            src = P[j, a:b]
            t = buf[: b - a]
            scale = w * f[j] / f[j + 1]
            np.multiply(src, scale * (1.0 - frac), out=t)
            P[j + 1, a + s:b + s] += t
            new_hi = b + s
            if frac > 0.0:
                np.multiply(src, scale * frac, out=t)
                P[j + 1, a + s + 1:b + s + 1] += t
                new_hi += 1
            if live:
                lo[j + 1] = min(lo[j + 1], a + s)
                hi[j + 1] = max(hi[j + 1], new_hi)
            else:
                lo[j + 1], hi[j + 1] = a + s, new_hi
            if f[j + 1] < 1e-150:  # fold a tiny row factor in before it underflows
                P[j + 1, lo[j + 1]:hi[j + 1]] *= f[j + 1]
                f[j + 1] = 1.0
        if k % 8 == 0:  # trim cells below `cut` off the ends of each window
            for j in range(max(j_low, 1), min(k, m) + 1):
                a, b = lo[j], hi[j]
                if b - a < 64:
                    continue
                big = np.flatnonzero(P[j, a:b] > cut / f[j])
                if trimmed is not None:
                    edge = (a + big[0], a + big[-1] + 1) if big.size else (b, b)
                    trimmed[0] += (P[j, a:edge[0]].sum() + P[j, edge[1]:b].sum()) * f[j]
                if big.size == 0:
                    P[j, a:b] = 0.0
                    hi[j] = lo[j]
                    continue
                na, nb = a + big[0], a + big[-1] + 1
                P[j, a:na] = 0.0
                P[j, nb:b] = 0.0
                lo[j], hi[j] = na, nb
        if k >= m:
            out = P[m, : G + 1] * f[m]
            out[G] += P[m, G + 1:].sum() * f[m]
            yield k - m, out
