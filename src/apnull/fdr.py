"""Benjamini-Hochberg, the package's one home: q-values, rejections and first levels, with ties decided
exactly.

Permutation p-values sit on grids, (1 + g) / (1 + B), g / T, H / L, so a p-value equal to a level, or
a ratio ``T * p / k`` equal to it, is common in a small screen (p = 0.01, 0.04, 0.05 at B = 99: the
third BH ratio is 3 * 0.05 / 3 = 0.05 exactly, which floats give as 0.05000000000000001). Here every
p-value (and the level) is read as the one fraction a / b with b <= :data:`GRID` whose float it is (it is
unique: two such fractions differ by at least 2^-40, more than a float's rounding interval below 1; it
is a convergent of the float's continued fraction, found exactly in integers by :func:`fractions_of`).
The BH ratios ``T * a / (b * k)`` are then fractions of integers below 2^53 and their floats are
correctly rounded (IEEE division of two exact integers), so a q-value prints as its exact value (0.05)
and ``q <= alpha`` is the exact decision (equal floats of two different fractions would need
numerator(alpha) * denominator(q) > 2^52, and the denominators here stay below :data:`EXACT_DEN`, so
every level with a numerator up to 4 (0.05, 0.1, 0.01, 0.15, 0.25, ...) is decided exactly).
A p-value on no such grid (an exact law's count over a huge number of placements, a Clopper-Pearson
bound) is used as its float, and so is a ratio whose fraction would outgrow :data:`EXACT_DEN`: ties of
those with a level are not a grid's coincidence.

- :func:`benjamini_hochberg`: q-values (``q <= alpha`` is BH at alpha);
- :func:`bh_reject`: BH's rejections at one level (the same decisions, without the q-values);
- :func:`first_levels`: each p-value's smallest rank k with ``T p / k <= alpha``; BH at alpha rejects
  exactly ``R = max{k : #{levels <= k} >= k}`` tests, which :func:`bh_count` counts in compiled code (a
  kernel that redraws which p-values it tests and counts BH again on each draw);
- :class:`Exact` and :func:`scaled_min`: p-values as fractions and the ratios built from them, for the
  two-stage procedure :func:`apnull.score.hierarchical_bh`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from . import compiled  # noqa: F401 - its cache locators, before the kernels below are made

__all__ = ["GRID", "EXACT_DEN", "Exact", "fractions_of", "benjamini_hochberg", "bh_reject", "first_levels",
           "bh_count", "scaled_min"]

#: The largest denominator a p-value is read back with (2^20 = 1,048,576: every p-value of up to
#: 1,000,000 permutations or draws, or of an enumeration of up to 2^20 assignments or flips, has one).
#: Below 2^26.5 a fraction within half a float's spacing of p is a convergent of its continued fraction
#: (Legendre's theorem), and there is at most one.
GRID = 1 << 20
#: Ratios are kept as fractions while numerator and denominator stay below this (2^50).
EXACT_DEN = 1 << 50
#: Float ratios this close to a level (relative) are checked with their fractions.
_NEAR = 1e-13


def fractions_of(p) -> tuple:
    """(num, den, on_grid) of float p-values in [0, 1]: the fraction num / den, den <= :data:`GRID`, whose
    float is p, where there is one (on_grid); num = den = 0 elsewhere.

    The continued fraction of p's exact binary value p = M 2^-E, in integers: the first partial quotient
    a1 = floor(1 / p) and the remainder 1 - a1 p, which is exactly representable (it is r 2^-E with
    r < M), from Dekker's split of p (every product exact); then Euclid on the integers (M, r) in int64.
    The first convergent h / k whose float is p is the fraction; the search stops once k would pass GRID.
    0 is 0 / 1 and 1 is 1 / 1.
    """
    p = np.asarray(p, dtype=float)
    shape = p.shape
    p = p.ravel()
    if p.size <= _FEW:  # the same steps on Python integers: no fixed cost per step
        num, den = np.array([_fraction_of(x) for x in p.tolist()], dtype=np.int64).reshape(-1, 2).T
        return num.reshape(shape), den.reshape(shape), (den > 0).reshape(shape)
    num = np.zeros(p.size, dtype=np.int64)
    den = np.zeros(p.size, dtype=np.int64)
    den[(p == 0) | (p == 1)] = 1
    num[p == 1] = 1
    idx = np.flatnonzero((p > 0) & (p < 1) & (p >= 1.0 / GRID))
    if idx.size:
        x = p[idx]
        a1 = np.floor(1.0 / x)
        rem = _one_minus(a1, x)
        for _ in range(2):  # 1 / x may round across an integer: step a1 until 0 <= rem < x
            low, high = rem < 0, rem >= x
            a1 = a1 - low + high
            rem = np.where(low | high, _one_minus(a1, x), rem)
        _, e = np.frexp(x)
        E = 53 - e.astype(np.int64)  # x = M 2^-E with M < 2^53
        xp = np.ldexp(x, E).astype(np.int64)       # M
        xc = np.ldexp(rem, E).astype(np.int64)     # r = 2^E mod M
        hm, km = np.zeros(idx.size, np.int64), np.ones(idx.size, np.int64)  # h_{n-2}, k_{n-2} (h_0 = 0, k_0 = 1)
        h, k = np.ones(idx.size, np.int64), a1.astype(np.int64)            # h_1 = 1, k_1 = a1
        live = np.arange(idx.size)
        while live.size:
            hit = (h / k == x[live]) & (k <= GRID)
            done = hit | (xc == 0)
            num[idx[live[hit]]] = h[hit]
            den[idx[live[hit]]] = k[hit]
            a = np.where(done, 0, xp / np.maximum(xc, 1)).astype(np.int64)  # xp // xc, or one off
            r = xp - a * xc
            a += (r >= xc).astype(np.int64) - (r < 0)
            keep = ~done & (a * k.astype(float) + km <= GRID)  # k_{n+1} = a k + k_{n-1} within the grid
            a = a[keep]
            xp, xc = xc[keep], xp[keep] - a * xc[keep]
            hm, h = h[keep], a * h[keep] + hm[keep]
            km, k = k[keep], a * k[keep] + km[keep]
            live = live[keep]
    return num.reshape(shape), den.reshape(shape), (den > 0).reshape(shape)


#: Up to this many p-values, :func:`fractions_of` reads each one in Python integers (:func:`_fraction_of`,
#: microseconds a value) instead of in array steps (tens of microseconds a step whatever the size).
_FEW = 64


def _fraction_of(x: float) -> tuple:
    """(num, den) of one float as :func:`fractions_of` finds it: (0, 1) and (1, 1) for 0 and 1, (0, 0) off
    the grid (NaN, outside [0, 1], below 1 / GRID). Inside, the same continued fraction in exact
    integers: x = M 2^-E, so a1 = floor(2^E / M) and the remainder r = 2^E - a1 M are what the array
    path reaches with Dekker's split (exact there); the Euclid steps and the tests (h / k == x, both
    correctly rounded divisions of integers below 2^53; k_{n+1} <= GRID) are the same, so the answer is
    the same pair."""
    if x == 0 or x == 1:
        return int(x), 1
    if not 1.0 / GRID <= x < 1:
        return 0, 0
    _, e = math.frexp(x)
    E = 53 - e
    M = int(math.ldexp(x, E))
    a1, r = divmod(1 << E, M)
    xp, xc = M, r
    hm, km, h, k = 0, 1, 1, a1
    while True:
        if h / k == x and k <= GRID:
            return h, k
        if xc == 0:
            return 0, 0
        a = xp // xc
        if a * k + km > GRID:
            return 0, 0
        xp, xc = xc, xp - a * xc
        hm, h = h, a * h + hm
        km, k = k, a * k + km


def _one_minus(a, x):
    """1 - a x exactly, for an integer a <= 2^26 with a x in (1 - x, 1] or so (Dekker's split of x:
    both products exact, 1 - a x_hi exact by Sterbenz, and the result representable)."""
    c = 134217729.0 * x
    hi = c - (c - x)
    lo = x - hi
    return (1.0 - a * hi) - a * lo


class Exact(NamedTuple):
    """Values as fractions num / den where ``exact``, else as floats; ``value`` holds each one's float
    (correctly rounded where exact)."""

    num: np.ndarray
    den: np.ndarray
    exact: np.ndarray
    value: np.ndarray

    @classmethod
    def of(cls, p) -> "Exact":
        """p-values read as their grid fractions (:func:`fractions_of`), computed once per distinct value."""
        p = np.asarray(p, dtype=float)
        uniq, back = np.unique(p, return_inverse=True)
        num, den, grid = fractions_of(uniq)
        return cls(num[back], den[back], grid[back], p.copy())

    def times(self, mul, div) -> "Exact":
        """``self * mul / div`` (mul, div positive integers, arrays or scalars): a fraction where it stays
        below :data:`EXACT_DEN`, else the float ``value * mul / div``."""
        mul = np.asarray(mul, dtype=np.int64)
        div = np.asarray(div, dtype=np.int64)
        fits = self.exact & (self.num * mul.astype(float) < EXACT_DEN) & (self.den * div.astype(float) < EXACT_DEN)
        n = np.where(fits, self.num * np.where(fits, mul, 0), 0)
        d = np.where(fits, self.den * np.where(fits, div, 0), 1)
        g = np.maximum(np.gcd(n, d), 1)
        n, d = n // g, d // g
        value = np.where(fits, n / d, self.value * mul / div)
        return Exact(n, d, fits, value)

    def take(self, idx) -> "Exact":
        return Exact(self.num[idx], self.den[idx], self.exact[idx], self.value[idx])


def _argmin_after(values: np.ndarray, mins: np.ndarray) -> np.ndarray:
    """Index of the minimum of ``values[i:]`` (within i's group) for each i, given those minima
    ``mins``: the first position at or after i where the value is its own running minimum (every group's
    last position is one, so the search never leaves i's group)."""
    n = values.size
    at = np.where(values == mins, np.arange(n), n)
    return np.minimum.accumulate(at[::-1])[::-1]


def scaled_min(x: Exact, mul, div, groups=None) -> Exact:
    """``min_{j >= i} x_j * mul_j / div_j`` for each i (within each run of equal ``groups``, in order),
    as fractions where they stay exact: the BH step-up minimum (``T p_(j) / j``, or ``k p_(j) / j``
    inside families). Floats of exact fractions are correctly rounded, so their minimum is the minimum's
    float."""
    r = x.times(mul, div)
    return r.take(_argmin_after(r.value, _min_after(r.value, groups)))


def _min_after(values: np.ndarray, groups=None) -> np.ndarray:
    """``min(values[i:])`` for each i, within i's run of equal ``groups`` when given (values not NaN).

    Within runs: each value's rank among the distinct values, plus its run's number times the count of
    distinct values, is a key whose running minimum from the end never reaches past the run (a later
    run's keys all lie above an earlier run's), so one accumulate gives every run's minima, in integers."""
    if groups is None or values.size == 0:
        return np.minimum.accumulate(values[::-1])[::-1]
    groups = np.asarray(groups)
    uniq, rank = np.unique(values, return_inverse=True)
    run = np.concatenate(([0], np.cumsum(groups[1:] != groups[:-1])))
    offset = run * np.int64(uniq.size)
    key = offset + rank.ravel()
    return uniq[np.minimum.accumulate(key[::-1])[::-1] - offset]


def _checked(pvalues) -> tuple:
    p = np.asarray(pvalues, dtype=float).ravel()
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError("p-values must lie between 0 and 1")
    return p, ok


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order.

    With the T finite p-values sorted ascending, p_(1) <= ... <= p_(T),
    ``q_(i) = min_{j >= i} min(1, T * p_(j) / j)``: monotone in p and capped at 1. Rejecting every
    hypothesis with q <= alpha controls the false discovery rate at alpha (independent or positively
    dependent tests). Computed in exact fractions for p-values on a grid (see the module): the q-value
    is the float of the exact one (3 * 0.05 / 3 gives 0.05), so ``q <= alpha`` decides ties exactly.
    NaN p-values stay NaN and do not count in T. An empty input gives an empty array.

    Raises
    ------
    ValueError
        If a p-value lies outside [0, 1].
    """
    p, ok = _checked(pvalues)
    q = np.full(p.shape, np.nan)
    if not ok.any():
        return q
    vals = p[ok]
    T = vals.size
    order = np.argsort(vals, kind="mergesort")
    ranked = scaled_min(Exact.of(vals[order]), T, np.arange(1, T + 1)).value
    out = np.empty(T)
    out[order] = np.minimum(ranked, 1.0)
    q[ok] = out
    return q


def _ratio_le(p: np.ndarray, mul, div, alpha: float) -> np.ndarray:
    """``fl(p * mul / div) <= alpha``, each ratio's float computed as :func:`benjamini_hochberg` computes
    it (a grid fraction's correctly rounded float, else the float product): floats first, the fractions
    only for the ratios within :data:`_NEAR` of alpha."""
    p = np.asarray(p, dtype=float)
    mul, div = np.broadcast_to(mul, p.shape), np.broadcast_to(div, p.shape)
    r = p * mul / div
    out = r <= alpha
    near = np.flatnonzero(np.abs(r - alpha) <= _NEAR * alpha)
    if near.size:
        out[near] = Exact.of(p[near]).times(mul[near], div[near]).value <= alpha
    return out


def bh_reject(pvalues, alpha: float) -> np.ndarray:
    """Benjamini-Hochberg's rejections at level ``alpha`` (boolean mask, input order; NaN never rejected):
    the R smallest p-values, R = max{k : T p_(k) / k <= alpha}, exactly the tests with
    ``benjamini_hochberg(p) <= alpha`` (the same fractions; only ratios near alpha are read as
    fractions, so a long vector costs one sort)."""
    p, ok = _checked(pvalues)
    out = np.zeros(p.size, dtype=bool)
    vals = p[ok]
    T = vals.size
    if not T:
        return out
    order = np.argsort(vals, kind="mergesort")
    passing = np.flatnonzero(_ratio_le(vals[order], T, np.arange(1, T + 1), float(alpha)))
    if passing.size:
        rows = np.flatnonzero(ok)
        out[rows[order[:passing[-1] + 1]]] = True
    return out


def first_levels(pvalues, alpha: float) -> np.ndarray:
    """(T,) int64: for each of T p-values the smallest k in 1..T with ``T p / k <= alpha`` (T + 1 when
    none, and for a NaN), decided as :func:`benjamini_hochberg` decides it. BH at alpha rejects exactly
    R = max{k : #{levels <= k} >= k} of them (:func:`bh_count`), those with q_value <= alpha."""
    p = np.asarray(pvalues, dtype=float)
    T = p.size
    k = np.clip(np.nan_to_num(np.ceil(p * T / alpha), nan=T + 1), 1, T + 1).astype(np.int64)  # NaN: never
    alpha = float(alpha)
    for _ in range(2):  # the float estimate is off by at most one step either way
        down = (k > 1) & _ratio_le(p, T, np.maximum(k - 1, 1), alpha)
        k[down] -= 1
        up = (k <= T) & ~_ratio_le(p, T, np.minimum(k, T), alpha)
        k[up] += 1
    return np.minimum(k, T + 1)


@numba.njit(cache=True, inline="always")
def bh_count(hist, T):  # pragma: no cover - compiled
    """Benjamini-Hochberg's number of rejections from first levels: max{k : #{c_j <= k} >= k} (0 if
    none), ``hist[k]`` the tests whose first level (:func:`first_levels`) is k, 1 <= k <= T + 1.
    Integer arithmetic, for compiled callers (inlined into them)."""
    N = np.int64(0)
    R = np.int64(0)
    for k in range(1, T + 1):
        N += hist[k]
        if N >= k:
            R = k
    return R

