"""Closed forms of the null laws at their edges: the sizes and values where no scan is needed.

- n = 0: every placement puts all positives on top: AP = Precision@R = 1.
- m = 1: AP = 1 / R with R uniform on 1..N (N = m + n).
- n = 1: the negative at rank r gives AP = 1 - (H_{m+1} - H_r) / m.
- The top of any AP law: the second largest AP is 1 - 1 / (m (m + 1)) (one negative just above the
  last positive), so above it only AP = 1 remains, with probability 1 / C(N, m).

:mod:`apnull.exact` (the exact and grid laws), :mod:`apnull.tail` (counted tails and thresholds) read
them; each is checked against enumeration of all placements in the tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .hypergeom import log_comb

__all__ = ["closed_form_law", "grid_law_m1", "closed_tail", "closed_threshold", "second_largest_ap"]


def closed_form_law(m: int, n: int):
    """``(values, counts)`` of the exact AP law where a closed form gives it in O(m + n), else None.

    - n = 0: every placement has all positives on top, AP = 1 (one placement);
    - m = 1: AP = 1 / r for the positive's rank r = 1..N, one placement each;
    - n = 1: with the negative at rank r, positives i < r sit at rank i and positives i >= r at
      i + 1, so AP = 1 - (H_{m+1} - H_r) / m, one placement each (r = N gives 1). The harmonic tail
      ``sum_{i=r+1..N} 1/i`` is summed from the smallest term in extended precision (error well under
      1e-12 at N = 10^6).
    Values come sorted and distinct. Unchecked: m >= 1, n >= 0.
    """
    N = m + n
    if n == 0:
        return np.ones(1), np.ones(1, dtype=np.int64)
    if m == 1:
        return 1.0 / np.arange(N, 0, -1, dtype=float), np.ones(N, dtype=np.int64)
    if n == 1:
        tail = np.zeros(N, dtype=np.longdouble)  # tail[r - 1] = sum_{i=r+1..N} 1/i
        tail[:-1] = np.cumsum(1.0 / np.arange(N, 1, -1, dtype=np.longdouble))[::-1]
        values = (1.0 - tail / m).astype(float)
        values[-1] = 1.0
        return values, np.ones(N, dtype=np.int64)
    return None


def grid_law_m1(n: int, G: int) -> np.ndarray:
    """The grid law of AP for m = 1 on cells 0..G, as :func:`apnull.exact.grid_scan` makes it, in
    closed form: AP = 1/k with probability 1/N each, G/k cells split between cells floor(G/k) and
    the next in proportion (the mean exact), nothing trimmed. Read-only. Unchecked."""
    k = np.arange(1, n + 2, dtype=float)
    d = G / k
    s = d.astype(np.int64)
    frac = d - s
    probs = (np.bincount(s, (1.0 - frac) / (n + 1), minlength=G + 2)
             + np.bincount(s + 1, frac / (n + 1), minlength=G + 2))
    probs[G] += probs[G + 1:].sum()
    probs = probs[:G + 1]
    probs.setflags(write=False)
    return probs


def second_largest_ap(m: int) -> Fraction:
    """1 - 1 / (m (m + 1)): the largest AP below 1 (for n >= 1), one negative at rank m."""
    return 1 - Fraction(1, m * (m + 1))


def closed_tail(t: Fraction, m: int, n: int):
    """``(log_low, log_high, log_p)``, natural-log bounds on P(S >= t) for S = m AP, 0 < t <= m, where
    a closed form gives it, else None:

    - n = 0: P = 1;
    - m = 1: P(AP >= t) = min(N, floor(1 / t)) / N (its float and log within an ulp or two);
    - t above m times the second largest AP: P = P(AP = 1) = 1 / C(N, m)
      (:func:`apnull.hypergeom.log_comb`, with its error bound).
    """
    N = m + n
    if n == 0:
        return 0.0, 0.0, 0.0
    if m == 1:
        lp = math.log(min(N, math.floor(1 / t)) / N)
        slack = 2 * math.ulp(abs(lp))
        return lp - slack, min(0.0, lp + slack), lp
    if t > m * second_largest_ap(m):
        v, err = log_comb(N, m)
        return -v - err, -v + err, -v
    return None


def closed_threshold(alpha: float, m: int, n: int):
    """``(low, value)`` of the AP threshold at alpha where a closed form gives it, else None: the
    smallest support value t with P(AP > t) <= alpha is ``value`` (and lies in [low, value]).

    - n = 0: 1;
    - m = 1: t = 1 / r with r = min(N, floor(alpha N) + 1) (P(AP > 1/r) = (r - 1) / N);
    - alpha below P(AP = 1) = 1 / C(N, m) (proved by its bounds): 1; where alpha lies within the
      rounding of 1 / C(N, m), [second largest AP, 1].
    """
    N = m + n
    if n == 0:
        return 1.0, 1.0
    if m == 1:
        r = min(N, math.floor(Fraction(alpha) * N) + 1)
        return 1.0 / r, 1.0 / r
    v, err = log_comb(N, m)
    log_alpha = math.log(alpha) if alpha > 0 else -math.inf
    if -v - err > log_alpha:  # P(AP = 1) > alpha: only AP = 1 lies above the threshold's level
        return 1.0, 1.0
    if -v + err > log_alpha:
        return float(second_largest_ap(m)), 1.0
    return None
