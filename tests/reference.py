"""Brute-force reference implementations for the core-library tests.

Everything here is deliberately naive and exact: every placement of the m positives among m + n
ranks is enumerated with ``itertools.combinations`` and AP / Precision@R are kept as
``fractions.Fraction``. Nothing here imports apnull, so the reference cannot inherit its bugs.

Use from a test file with ``from reference import enumerate_ap`` (pytest puts ``tests/`` on
``sys.path``); ``tests/conftest.py`` also exposes the same helpers as fixtures.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache


#: Sizes small enough to enumerate every placement quickly (C(17, 5) = 6188 at most).
SMALL_SIZES = [(m, n) for m in range(1, 6) for n in range(0, 13)]


@dataclass(frozen=True, eq=False)
class Enumeration:
    """AP and Precision@R of every placement of m positives among m + n ranks.

    ``ap[i]`` and ``pr[i]`` belong to ``placements[i]`` (1-based ranks of the positives, increasing).
    """

    m: int
    n: int
    placements: tuple
    ap: tuple
    pr: tuple
    _ap_sorted: tuple = field(repr=False, default=())

    @property
    def total(self) -> int:
        return len(self.ap)

    # -- laws ------------------------------------------------------------------------------
    def ap_counts(self) -> list[tuple[Fraction, int]]:
        """Sorted (AP value, number of placements) pairs: the exact law of AP, as counts."""
        return sorted(Counter(self.ap).items())

    def pr_counts(self) -> list[tuple[Fraction, int]]:
        return sorted(Counter(self.pr).items())

    # -- moments ---------------------------------------------------------------------------
    def mean(self, metric: str = "ap") -> Fraction:
        vals = getattr(self, metric)
        return sum(vals, Fraction(0)) / len(vals)

    def var(self, metric: str = "ap") -> Fraction:
        vals = getattr(self, metric)
        mu = self.mean(metric)
        return sum(((v - mu) ** 2 for v in vals), Fraction(0)) / len(vals)

    # -- distribution functions (exact rationals) ------------------------------------------
    def cdf(self, x) -> Fraction:
        """P(AP <= x) exactly (x a Fraction, or a float taken at its exact binary value)."""
        x = Fraction(x)
        return Fraction(bisect_right(self._ap_sorted, x), self.total)

    def pvalue(self, x) -> Fraction:
        """P(AP >= x) exactly."""
        x = Fraction(x)
        return Fraction(self.total - bisect_left(self._ap_sorted, x), self.total)

    def quantile(self, q) -> Fraction:
        """Smallest AP value x with P(AP <= x) >= q (R's qhyper convention)."""
        q = Fraction(q)
        table = self.ap_cdf_table()
        # first index whose cumulative probability reaches q
        lo, hi = 0, len(table) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if table[mid][1] >= q:
                hi = mid
            else:
                lo = mid + 1
        return table[lo][0]

    def ap_cdf_table(self) -> list[tuple[Fraction, Fraction]]:
        """Sorted (value, P(AP <= value)) over the support (computed once per enumeration)."""
        return _cdf_table(self)


@lru_cache(maxsize=None)
def _cdf_table(enum: "Enumeration") -> list:
    out, acc = [], 0
    for value, count in enum.ap_counts():
        acc += count
        out.append((value, Fraction(acc, enum.total)))
    return out


def _lcm_upto(N: int) -> int:
    out = 1
    for k in range(2, N + 1):
        out = out * k // math.gcd(out, k)
    return out


def ap_fraction(ranks, m: int | None = None) -> Fraction:
    """AP = (1/m) sum_i i / r_i exactly, for 1-based increasing ranks of the m relevant items."""
    ranks = sorted(ranks)
    m = len(ranks) if m is None else m
    return sum((Fraction(i, r) for i, r in enumerate(ranks, start=1)), Fraction(0)) / m


@lru_cache(maxsize=None)
def enumerate_ap(m: int, n: int) -> Enumeration:
    """Enumerate all C(m+n, m) placements of m positives among N = m + n ranks.

    Returns an :class:`Enumeration` whose ``ap`` and ``pr`` hold the exact AP
    ``(1/m) sum_i i / r_i`` and Precision@R ``#{r_i <= m} / m`` of each placement as Fractions.
    """
    if m < 1 or n < 0:
        raise ValueError("need m >= 1 and n >= 0")
    N = m + n
    L = _lcm_upto(N)  # AP * m * L is an integer: exact and much faster than adding Fractions
    unit = [0] + [L // r for r in range(1, N + 1)]
    placements, aps, prs = [], [], []
    for comb in itertools.combinations(range(1, N + 1), m):
        s = 0
        hits = 0
        for i, r in enumerate(comb, start=1):
            s += i * unit[r]
            if r <= m:
                hits += 1
        placements.append(comb)
        aps.append(Fraction(s, m * L))
        prs.append(Fraction(hits, m))
    return Enumeration(m=m, n=n, placements=tuple(placements), ap=tuple(aps), pr=tuple(prs),
                       _ap_sorted=tuple(sorted(aps)))


def ranking_from_placement(placement, N: int) -> list[int]:
    """0/1 relevance vector (top first) with ones at the given 1-based ranks."""
    rel = [0] * N
    for r in placement:
        rel[r - 1] = 1
    return rel


def bestgen_expected_ap(m: int, n: int) -> Fraction:
    """Bestgen (2015)'s double sum, in exact rationals.

    ``sum_{x=1..m} sum_{k=x..n+x} dhyper(x; m, n, k) * (x/k)^2 / m`` with
    ``dhyper(x; m, n, k) = C(m, x) C(n, k - x) / C(m + n, k)``.
    """
    total = Fraction(0)
    for x in range(1, m + 1):
        for k in range(x, n + x + 1):
            dh = Fraction(math.comb(m, x) * math.comb(n, k - x), math.comb(m + n, k))
            total += dh * Fraction(x, k) ** 2
    return total / m


def ks_critical(draws: int, alpha: float) -> float:
    """Asymptotic one-sample KS critical value sqrt(-ln(alpha/2) / (2 n))."""
    return math.sqrt(-math.log(alpha / 2) / (2 * draws))
