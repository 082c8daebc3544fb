"""Far tails of the AP null law with a stated relative error, however small the probability.

A strong replicate's AP sits where the null law has almost no mass: P(AP = 1) = 1 / C(m+n, m) is
1.6e-40 for m = 30, n = 240. The grid law trims cells that small and Monte Carlo never sees them, so
the far tail is computed here by counting: S = m AP = sum_i i / r_i, and a scan over ranks carries
only the partial placements that can still end on either side of the threshold (see
:mod:`apnull._tail_kernel`), with partial sums floored to Q cells per unit of S. The result is a pair
of guaranteed bounds ``low <= P(AP >= x - VALUE_TOL) <= high``; a finer Q narrows them, and at the
finest Q they meet unless a value of the law lies within m / Q of the threshold. Logs are carried
throughout, so ``log10`` of the bounds is exact to about 1e-12 even below the smallest float.

The work grows with the number of partial placements that stay undecided, which is small in the far
tail and huge in the bulk, where the grid law or Monte Carlo is accurate anyway;
:func:`combine` takes the best of both.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .closed import closed_tail
from .hypergeom import log_int, log_tail
from .law import VALUE_TOL, NullDistribution

__all__ = ["TailPValue", "tail_bounds", "combine", "uncounted", "closed_pvalue", "needs_counting", "exact_tail",
           "pr_tail", "TAIL_WORK", "TAIL_TABLE_MAX", "RESOLVED_REL", "COUNT_BELOW", "NORMAL_MIN", "LOG10_NORMAL_MIN",
           "FLOAT_TAIL_MIN"]

#: States the counting scan may handle per call (at most about half a second); past it the coarser
#: bounds stand.
TAIL_WORK = 50_000_000
#: The scan's table of best completions has (n + 1) (m + 1) entries (8 bytes each, 64 MB at most, freed
#: after the call); larger sizes are not counted.
TAIL_TABLE_MAX = 8_000_000
#: A grid p whose range is narrower than this share of its upper end counts as resolved.
RESOLVED_REL = 0.05
#: A grid p is counted only below this (or where its range reaches 0): above it the grid's own
#: range is its documented accuracy, and counting the bulk of the law would cost far more.
COUNT_BELOW = 1e-4
#: How many times more states a 4 times finer cell size needs, at most, in the measured cases.
_GROWTH = 4
#: The share of the work given to the first, finest scan (1 / _FIRST).
_FIRST = 10
#: The smallest normal float (2.2e-308): below it a p-value is given by its log10 (its float has
#: lost precision, and 0 would be wrong); see :attr:`TailPValue.underflows`.
NORMAL_MIN = sys.float_info.min
LOG10_NORMAL_MIN = math.log10(NORMAL_MIN)
#: A law's float upper tail below this may have lost terms to underflow: Precision@R is counted in
#: log space there (:func:`pr_tail`).
FLOAT_TAIL_MIN = 1e-280
#: Floating rounding of the scan, per position, folded into its bounds (with 4 ulp per log-space addition).
_ROUNDING = 4e-16


class TailPValue(NamedTuple):
    """P(X >= x) with guaranteed bounds (95% for a Monte Carlo range that counting could not improve).

    p : the point value, inside [low, high] (0 only when x cannot occur).
    low, high : bounds on the exact p.
    log10_p, log10_low, log10_high : their base-10 logs, exact even where the floats underflow to 0.
    rel_error : (high - low) / high, computed from the logs; 0 when the p is exact.
    source : "exact" (all placements counted), "tail count" (the placements reaching x counted: the
        pruned scan, a closed form, or for Precision@R the hypergeometric tail in log space), "grid",
        "mc" (Monte Carlo draws) or "mc bound" (no draw reached x and counting was out of reach).
    Below the smallest normal float (:attr:`underflows`) ``p`` and ``high`` are a float at or above the
    exact p and ``low`` is 0: the logs carry the value.
    """

    p: float
    low: float
    high: float
    log10_p: float
    log10_low: float
    log10_high: float
    rel_error: float
    source: str

    @property
    def underflows(self) -> bool:
        """True when p is below the smallest normal float: print ``log10_p``, not the floats (which are
        then only bounds, ``[0, p]``)."""
        return self.log10_p < LOG10_NORMAL_MIN


def _make(log_low: float, log_high: float, source: str, log_p: float | None = None) -> TailPValue:
    """A TailPValue from natural-log bounds; the point is the upper bound unless given (a p-value that
    is never below the truth stays valid: P(p <= alpha) <= alpha).

    Below the smallest normal float (``NORMAL_MIN``) the floats are bounds only: ``p`` and ``high`` are
    rounded up to a float at or above the exact value (the smallest positive float 4.9e-324 at least,
    never 0 for a value that can occur) and ``low`` is 0; the logs keep the value."""
    if log_p is None:
        log_p = log_high
    rel = 0.0 if log_high == log_low else -math.expm1(log_low - log_high)
    ln10 = math.log(10.0)
    p, low, high = math.exp(log_p), math.exp(log_low), math.exp(log_high)
    if log_p > -math.inf and p < NORMAL_MIN:
        p = math.nextafter(p, math.inf)
        high = max(math.nextafter(high, math.inf), p)
        low = low if low >= NORMAL_MIN else 0.0
    return TailPValue(p, low, high, log_p / ln10, log_low / ln10, log_high / ln10, rel, source)


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _levels(m: int) -> list[int]:
    """Cells per unit of S, coarse to fine: Q = m 4^e / 4 (bands of m / Q = 4, 1, 1/4, ... units of
    S), down to the finest, which keeps i Q (i <= m) well inside int64."""
    finest = min(2**44, 2**61 // max(m, 1))
    return sorted({max(1, min(m * 4**e // 4, finest)) for e in range(0, 24)})


@lru_cache(maxsize=1024)
def tail_bounds(x: float, m: int, n: int, rtol: float = 1e-9, work: int = TAIL_WORK) -> TailPValue | None:
    """Guaranteed bounds on P(AP >= x - VALUE_TOL) for m positives and n negatives, by counting.

    Runs the pruned scan first at the finest cell size Q on a tenth of ``work`` (in the far tail that
    settles it, to about 1e-12), else at finer and finer Q from the coarsest until the bounds are
    within ``rtol`` of each other (relative) or the next level would not fit in ``work`` states, and
    returns the tightest bounds found.
    Each bound holds whatever Q: placements with ``floor``-summed cells >= ceil(Q T) reach
    T = m (x - VALUE_TOL), and every placement reaching T has cells >= floor(Q T) - m + 1.
    Closed forms come first (:func:`apnull.closed.closed_tail`: n = 0, m = 1, and values above the second largest
    AP, where only AP = 1 remains), at any size. Returns None when (n + 1)(m + 1) exceeds
    ``TAIL_TABLE_MAX`` or the coarsest scan already runs out of work. The last 1,024 answers are kept (a page asks again on every rerun). Unchecked: m >= 1,
    n >= 0.
    """
    t = m * (Fraction(float(x)) - Fraction(VALUE_TOL))
    if t <= 0:
        return _make(0.0, 0.0, "tail count")
    if t > m:
        return _make(-math.inf, -math.inf, "tail count")
    closed = closed_tail(t, m, n)
    if closed is not None:
        return _make(closed[0], closed[1], "tail count", closed[2])
    if (n + 1) * (m + 1) > TAIL_TABLE_MAX:
        return None
    levels = _levels(m)
    left = int(work)
    # the far tail first: at the finest cell size its few undecided placements are counted exactly
    found, used = _scan(t, m, n, levels[-1], left // _FIRST)
    left -= used
    if found is not None:
        return _make(found[0], found[1], "tail count")
    # else coarse to fine, each level narrowing the bounds, while the next is likely to fit the work
    best = None
    growth = 2.0
    before = 0
    for Q in levels[:-1]:
        found, used = _scan(t, m, n, Q, left)
        left -= used
        if found is None:
            break
        if best is None or found[1] - found[0] < best[1] - best[0]:
            best = found
        if found[1] == -math.inf or (found[0] > -math.inf and -math.expm1(found[0] - found[1]) <= rtol):
            break
        if before:  # the work a 4 times finer Q takes grows by a factor between 1 and about 4
            growth = min(_GROWTH, max(1.2, used / before))
        before = used
        if used * growth > left:
            break
    return None if best is None else _make(best[0], best[1], "tail count")


def pr_tail(x: float, m: int, n: int) -> TailPValue:
    """P(Precision@R >= x - VALUE_TOL) counted in log space: the hits H in the top m are
    Hypergeometric(m + n, m, m) and ``P(H >= ceil(m (x - VALUE_TOL)))`` is
    :func:`apnull.hypergeom.log_tail`, exact however small (1 / C(1200, 600) = 10^-359.598), its
    bounds those of the rounding. Unchecked: m >= 1, n >= 0."""
    h = math.ceil(m * (Fraction(float(x)) - Fraction(VALUE_TOL)))
    v, err = log_tail(m, n, m, h)
    if v == -math.inf or v == 0.0 and err == 0.0:
        return _make(v, v, "tail count")
    return _make(v - err, min(0.0, v + err), "tail count", v)


def _scan(t: Fraction, m: int, n: int, Q: int, work: int):
    """One pruned scan at Q cells per unit of S: ((log low, log high) or None if out of work, work used)."""
    from . import _tail_kernel  # numba: imported on first use (loading it takes most of a second)

    qt = Q * t
    A = math.ceil(qt)
    B = math.floor(qt) - m + 1
    b_tab, w_tab = _tail_kernel.completion_tables(m, n, Q)
    lo, hi, used, done, adds = _tail_kernel.tail_scan(m, n, Q, A, B, b_tab, w_tab, work)
    if not done:
        return None, used
    # each state's probability is a product of at most 2 N roundings; each log-space addition
    # (log, exp, log1p) rounds the log by a few of its units in the last place
    size = max(1.0, abs(lo) if lo > -math.inf else 1.0, abs(hi) if hi > -math.inf else 1.0)
    slack = _ROUNDING * (m + n) + 4 * math.ulp(size) * (adds + 1)
    lo = lo + math.log1p(-slack) if lo > -math.inf else lo
    hi = min(0.0, hi + math.log1p(slack)) if hi > -math.inf else hi
    return (lo, hi), used


def exact_tail(law: NullDistribution, x: float) -> TailPValue:
    """P(X >= x) of an exact law: from its integer counts when it has them (exact at any size)."""
    idx = int(np.searchsorted(law.values, x - VALUE_TOL, side="left"))
    if law.counts is not None and law.total is not None:
        count = int(sum(int(c) for c in law.counts[idx:]))
        if count == 0:
            return _make(-math.inf, -math.inf, "exact")
        lp = log_int(count) - log_int(int(law.total))
        p = count / int(law.total)  # correctly rounded
        return TailPValue(p, p, p, lp / math.log(10), lp / math.log(10), lp / math.log(10), 0.0, "exact")
    p = float(law.pvalue(x))
    return TailPValue(p, p, p, _log10(p), _log10(p), _log10(p), 0.0, "exact")


def _log10(p: float) -> float:
    return math.log10(p) if p > 0 else -math.inf


def combine(law: NullDistribution, x: float, rtol: float = 1e-9, work: int = TAIL_WORK) -> TailPValue:
    """The p-value P(X >= x) of ``law`` with bounds that hold, resolved by counting where needed.

    - exact laws: from the integer counts;
    - grid laws: the guaranteed range :meth:`NullDistribution.pvalue_bounds` (trimmed mass
      included); in the far tail (see :func:`needs_counting`), the counting bounds of
      :func:`tail_bounds`, intersected with it;
    - Monte Carlo (AP): the draws when at least 10 reached x (95% Wilson range); otherwise the
      counting bounds; when counting is out of reach the p stays (1 + hits) / (1 + draws) with
      range [0, 95% upper end] and source "mc bound";
    - Precision@R: the law's probabilities, exact (hypergeometric) where its float tail is at least
      ``FLOAT_TAIL_MIN``; below that, and for a Monte Carlo law where fewer than 10 draws reached x,
      the hypergeometric tail counted in log space (:func:`pr_tail`).
    """
    if not bool(needs_counting(law, x)):
        return _resolved(law, x)
    if law.metric == "pr":
        return pr_tail(float(x), int(law.m), int(law.n))
    return _counted(law, x, rtol, work)


def uncounted(law: NullDistribution, x: float) -> TailPValue:
    """What :func:`combine` gives without the counting scan (a run whose time budget has passed): the
    same where no counting is needed, else a closed form where one holds
    (:func:`apnull.closed.closed_tail`: n = 0, m = 1, above the second largest AP), else the law's
    own guaranteed range with ``p`` its upper end (the grid's range includes its trimmed mass; Monte
    Carlo's is the 95% upper end; 1 where the range is empty), so the p stays valid: never below
    the exact p, never 0. Precision@R is counted as in :func:`combine` (a closed sum)."""
    if not bool(needs_counting(law, x)) or law.metric == "pr":
        return combine(law, x)
    t = int(law.m) * (Fraction(float(x)) - Fraction(VALUE_TOL))
    if 0 < t <= int(law.m) and closed_tail(t, int(law.m), int(law.n)) is not None:
        return combine(law, x)  # counting stops at the closed form: no scan
    lo, hi = (float(v) for v in law.pvalue_bounds(x))
    if not hi > 0:
        lo, hi = 0.0, 1.0
    return _make(_log(lo), _log(hi), law.method if law.method == "grid" else "mc bound")


def closed_pvalue(x: float, m: int, n: int) -> TailPValue | None:
    """P(AP >= x - VALUE_TOL) where a closed form gives it without any law (x at or below 0, n = 0,
    m = 1, above the second largest AP: :func:`apnull.closed.closed_tail`), its point the upper end of
    the closed form's rounding bounds; else None. Unchecked: m >= 1, n >= 0."""
    t = m * (Fraction(float(x)) - Fraction(VALUE_TOL))
    if t <= 0:
        return _make(0.0, 0.0, "tail count")
    closed = closed_tail(t, m, n) if t <= m else None
    return None if closed is None else _make(closed[0], closed[1], "tail count")


def needs_counting(law: NullDistribution, x):
    """Where :func:`combine` counts: a grid range that reaches 0, or one wider than ``RESOLVED_REL`` of
    its upper end below ``COUNT_BELOW`` (the grid's far tail); a Monte Carlo law with fewer than 10
    draws at or above x; an exact Precision@R law whose float tail is below ``FLOAT_TAIL_MIN``;
    vectorised over x. Exact AP laws never count (their integer counts are exact)."""
    x = np.asarray(x, dtype=float)
    if law.method == "exact":
        out = np.asarray(law.pvalue(x)) < FLOAT_TAIL_MIN if law.metric == "pr" else np.zeros(x.shape, dtype=bool)
    elif law.method == "grid":
        lo, hi = law.pvalue_bounds(x)
        lo, hi = np.asarray(lo), np.asarray(hi)
        out = (lo <= 0) | ((hi - lo > RESOLVED_REL * hi) & (hi < COUNT_BELOW))
    else:
        out = law.draws.size - np.searchsorted(law.draws, x - VALUE_TOL, side="left") < 10
    return out if out.ndim else bool(out)


def _resolved(law: NullDistribution, x: float) -> TailPValue:
    """The law's own answer where it resolves the p-value."""
    if law.method == "exact":
        return exact_tail(law, x)
    p = float(law.pvalue(x))
    lo, hi = (float(v) for v in law.pvalue_bounds(x))
    return _make(_log(lo), _log(hi), law.method, _log(min(max(p, lo), hi) if law.method == "grid" else p))


def _counted(law: NullDistribution, x: float, rtol: float, work: int) -> TailPValue:
    """The counting bounds, with the law's range where counting is out of reach."""
    p = float(law.pvalue(x))
    lo, hi = (float(v) for v in law.pvalue_bounds(x))
    counted = tail_bounds(float(x), int(law.m), int(law.n), float(rtol), int(work))
    if counted is None:
        if law.method == "grid":
            return _make(_log(lo), _log(hi), "grid", _log(min(max(p, lo), hi)))
        return _make(-math.inf, _log(hi), "mc bound", _log(p))
    if law.method == "grid":  # both ranges hold: keep their intersection
        ln10 = math.log(10.0)
        c_lo = max(counted.log10_low * ln10, _log(lo))
        c_hi = min(counted.log10_high * ln10, _log(hi))
        if c_lo <= c_hi:  # the grid's own point where it lies inside, else the upper end
            return _make(c_lo, c_hi, "tail count", _log(p) if c_lo <= _log(p) <= c_hi else c_hi)
    return counted
