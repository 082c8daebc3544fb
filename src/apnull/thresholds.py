"""Null thresholds at any level: from the law where it resolves alpha, else from the counted far tail.

A threshold at level alpha = 1 - q is the smallest support value t with P(X > t) <= alpha: a score
above it has p <= alpha. A law answers down to its own floor (:func:`alpha_floor`: exact laws at any
alpha, the grid law while its trimmed mass is small beside alpha, Monte Carlo while 10 draws lie
above the threshold); below it the threshold comes from counted tails (:func:`counted_threshold`:
Precision@R's hypergeometric tail in log space, exact; AP's guaranteed bounds of
:func:`apnull.tail.tail_bounds`, searched, with the bracket of the exact threshold), or is refused
with the smallest alpha the law answers (:func:`resolved_threshold`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .closed import closed_threshold
from .hypergeom import tail_hits
from .law import NullDistribution
from .limits import as_probability
from .tail import TAIL_WORK, tail_bounds

__all__ = ["Threshold", "TailThreshold", "resolved_threshold", "counted_threshold", "alpha_floor", "level",
           "TAIL_QUANTILE_BELOW", "MAX_THRESHOLD_WIDTH", "THRESHOLD_RESOLUTION"]

#: AP thresholds from counted tails are searched to this width (AP units) where the bounds allow.
THRESHOLD_RESOLUTION = 1e-6
#: Below this alpha, exact and grid thresholds are read from the upper tail (``tail_quantile``), not
#: from 1 - alpha (whose float loses alpha's digits).
TAIL_QUANTILE_BELOW = 1e-6
#: A counted threshold is given only when it brackets the exact one within this width (AP units).
MAX_THRESHOLD_WIDTH = 0.05


class Threshold(NamedTuple):
    """A null threshold with where it came from.

    value : the threshold: a score above it has p <= alpha.
    q, alpha : the level (alpha = 1 - q, kept exactly when given as alpha).
    source : "exact", "grid", "mc" (the law's quantile) or "tail count" (the counted far tail).
    low, high : the exact threshold lies in [low, high]: equal to value for exact laws, value -+ the
        grid's error bound, the counted bracket [low, value]; NaN for Monte Carlo (statistical).
    law_floor : the smallest alpha the law itself resolves (:func:`alpha_floor`).
    """

    value: float
    q: float
    alpha: float
    source: str
    low: float
    high: float
    law_floor: float


def level(q, alpha) -> tuple[float, float]:
    if alpha is not None:
        alpha = as_probability(alpha, "alpha")
        return 1.0 - alpha, alpha
    q = as_probability(q, "q")
    return q, 1.0 - q


def alpha_floor(law: NullDistribution) -> float:
    """The smallest alpha whose threshold the law itself answers: 0 for exact laws (AP from its
    integer counts, Precision@R counted exactly below ``TAIL_QUANTILE_BELOW``), 1,000 times the
    grid's dropped mass (at least 1e-13) for the grid law, 10 / draws for Monte Carlo (10 draws
    above the threshold, as for its p-values)."""
    if law.method == "exact":
        return 0.0
    if law.method == "grid":
        return max(1e3 * law.dropped_mass, 1e-13)
    return 10.0 / law.draws.size


def resolved_threshold(law: NullDistribution, q=0.95, alpha=None, max_width: float = MAX_THRESHOLD_WIDTH,
                       work: int = TAIL_WORK) -> Threshold:
    """The threshold of ``law`` at level q (or alpha = 1 - q), from a law that resolves it.

    AP for m = 1 or n = 0 has a closed form (:func:`apnull.closed.closed_threshold`), used whatever the
    law. Elsewhere, where alpha >= :func:`alpha_floor`, the law's own ``quantile(q)`` (below ``TAIL_QUANTILE_BELOW``
    its ``tail_quantile(alpha)`` for exact and grid laws; Precision@R there counted exactly); below
    it the counted far tail (:func:`counted_threshold`), given when it brackets the
    exact threshold within ``max_width``.

    Raises
    ------
    ValueError
        When counting cannot bracket it, naming the smallest alpha the law answers.
    """
    q, alpha = level(q, alpha)
    floor = alpha_floor(law)
    eb = law.error_bound or 0.0
    if law.metric == "ap" and (law.m == 1 or law.n == 0):  # closed forms: exact whatever the law
        value = closed_threshold(alpha, law.m, law.n)[1]
        return Threshold(value, q, alpha, "exact", value, value, floor)
    if alpha >= floor and not (law.metric == "pr" and alpha < TAIL_QUANTILE_BELOW):
        if alpha >= TAIL_QUANTILE_BELOW or law.method == "mc":
            value = float(law.quantile(q))
        else:
            value = law.tail_quantile(alpha)
        lo, hi = (math.nan, math.nan) if law.method == "mc" else (value - eb, value + eb)
        return Threshold(value, q, alpha, law.method, lo, hi, floor)
    counted = counted_threshold(alpha, law.m, law.n, law.metric, work=work)
    if counted is not None and counted.value - counted.low <= max_width:
        return Threshold(counted.value, q, alpha, "tail count", counted.low, counted.value, floor)
    where = ("" if counted is None else
             f"; counting brackets it only within [{counted.low:.4g}, {counted.value:.4g}], wider than {max_width:g}")
    raise ValueError(
        f"alpha = {alpha:.3g} is below what the law ({law.describe()}) resolves (alpha >= {floor:.3g}), and the far "
        f"tail of m = {law.m}, n = {law.n} cannot be counted finely enough there{where}: use alpha >= {floor:.3g}, "
        f"or more draws or a finer law")


class TailThreshold(NamedTuple):
    """A null threshold at level alpha from counted tails.

    value : the threshold given: P(X > value) <= alpha is proved, so a score above it has p <= alpha
        (where the AP search gave it, ``low < value``, also P(X >= value) <= alpha: ``value`` is then
        the upper end of the bracket).
    low : the exact threshold, the smallest support value t with P(X > t) <= alpha, lies in
        [low, value]; ``low == value`` when it is known exactly.
    source : "tail count".
    """

    value: float
    low: float
    source: str = "tail count"


def counted_threshold(alpha: float, m: int, n: int, metric: str = "ap", resolution: float = THRESHOLD_RESOLUTION,
                      work: int = TAIL_WORK) -> TailThreshold | None:
    """The threshold at level alpha (0 <= alpha < 1) from counted tails, however small alpha is.

    Precision@R: the hits h with P(H > h) <= alpha by bisection over hits with the hypergeometric tail
    in log space (:func:`apnull.hypergeom.tail_hits`): exact. AP: the closed forms of
    :func:`apnull.closed.closed_threshold` (n = 0, m = 1, alpha below P(AP = 1)); else two searches
    over x in [0, 1] with the guaranteed bounds of :func:`tail_bounds`: ``value``, the smallest x
    (to ``resolution``) whose upper bound on P(AP >= x) is <= alpha, and ``low``, the largest x whose
    lower bound is > alpha (where counting runs out of work a point counts as unproved, so both ends
    stay valid and the bracket only widens). None when no lower bound above alpha could be proved
    (sizes too large to count, see :func:`tail_bounds`). Unchecked: m >= 1, n >= 0.
    """
    if metric == "pr":
        lo, hi = tail_hits(m, n, m, math.log(alpha) if alpha > 0 else -math.inf)
        return TailThreshold(hi / m, lo / m)
    closed = closed_threshold(alpha, m, n)
    if closed is not None:
        return TailThreshold(closed[1], closed[0])
    target = math.log10(alpha)
    seen: dict = {}

    def bounds(x):  # (log10 low, log10 high), None when unknown; 1% is plenty to place a threshold
        if x not in seen:
            tb = tail_bounds(float(x), m, n, 1e-2, work)
            seen[x] = None if tb is None else (tb.log10_low, tb.log10_high)
        return seen[x]

    def high(x):
        b = bounds(x)
        return None if b is None else b[1]

    def low(x):
        b = bounds(x)
        return None if b is None else b[0]

    value = _search(high, target, 0.0, 1.0, resolution, unknown_low=False)[1]
    # the lower end starts from what the first search saw: the largest x proved above alpha
    above = [x for x, b in seen.items() if b is not None and b[0] > target and x < value]
    start = max(above, default=0.0)
    later = [x for x, b in seen.items() if start < x <= value and (b is None or b[0] <= target)]
    low_end = _search(low, target, start, min(later, default=value), resolution, unknown_low=True)[0]
    return None if low_end <= 0.0 else TailThreshold(value, low_end)


def _search(f, target: float, lo: float, hi: float, resolution: float, unknown_low: bool,
            steps: int = 60) -> tuple[float, float]:
    """The bracket (lo, hi), narrower than ``resolution`` where the steps allow, of the first x with
    f(x) <= target, f nonincreasing, f(lo) > target and f(hi) <= target taken as given. f(x) None
    means unknown: counted as <= target when ``unknown_low``, else as above it. Regula falsi with the
    Illinois modification on finite values (each step moves an end by at least a quarter of the
    resolution); bisection where a value is unknown or infinite."""
    g_lo = g_hi = None  # f - target at the ends (Illinois halves the one kept twice)
    side = 0
    for _ in range(steps):
        if hi - lo <= resolution:
            break
        if g_lo is not None and g_hi is not None and math.isfinite(g_lo) and math.isfinite(g_hi) and g_lo > g_hi:
            x = lo + g_lo / (g_lo - g_hi) * (hi - lo)
        else:
            x = (lo + hi) / 2
        x = min(max(x, lo + resolution / 4), hi - resolution / 4)
        v = f(x)
        if (unknown_low if v is None else v <= target):
            hi, g_hi = x, (None if v is None else v - target)
            if side == -1 and g_lo is not None:
                g_lo /= 2
            side = -1
        else:
            lo, g_lo = x, (None if v is None else v - target)
            if side == 1 and g_hi is not None:
                g_hi /= 2
            side = 1
    return lo, hi
