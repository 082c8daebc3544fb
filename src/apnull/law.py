"""One object type for a null law, whichever method produced it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["NullDistribution", "VALUE_TOL", "count_reached", "permutation_pvalue", "counted_pvalue"]

#: Two metric values closer than this are treated as equal: the same AP computed in another order
#: differs only in the last bits (about 1e-16), while distinct values of a law differ by far more
#: (for m = 1, 1/r and 1/(r+1) are 1e-12 apart only at r = 10^6, the largest size allowed).
VALUE_TOL = 1e-12


@dataclass(eq=False)
class NullDistribution:
    """The null law of AP or Precision@R for m positives and n negatives.

    Attributes
    ----------
    metric : {"ap", "pr"}
        Average Precision or Precision@R.
    m, n : int
        Positives (>= 1) and negatives (>= 0) of the ranking.
    method : {"exact", "grid", "mc"}
        "exact": every placement counted; "grid": the AP grid law, within ``error_bound`` of exact;
        "mc": an empirical law of ``draws`` Monte Carlo draws.
    values, probs : ndarray
        Sorted support and its probabilities (for "mc", the distinct sampled values and their
        frequencies).
    error_bound : float or None
        Guaranteed distance (metric units) between any quantile of this law and the exact one
        (0 for exact laws; m/G for the grid law; None for Monte Carlo, whose error is statistical).
    draws : ndarray or None
        The raw Monte Carlo sample ("mc" only).
    seed : int or None
        The seed that reproduces a Monte Carlo law.
    grid_size : int or None
        G, the number of cells on [0, 1] of a grid law (``error_bound = m / G``); None otherwise.
    counts : ndarray of int or None
        Exact AP laws only: how many of the C(m + n, m) placements give each support value, so
        ``probs = counts / total`` (the lookup page shows them); None otherwise.
    total : int or None
        Exact AP laws only: C(m + n, m), the number of placements; None otherwise.
    dropped_mass : float
        Grid laws only: the probability dropped by trimming improbable window ends (of order 1e-14,
        see :func:`apnull.exact.ap_law_grid`); it widens the CDF bound by that much. 0 otherwise.

    Conventions (scipy's names and meanings)
    ------------------------------------------
    - ``cdf(x) = P(X <= x)``, ``sf(x) = P(X > x) = 1 - cdf(x)``;
    - ``pvalue(x) = P(X >= x)``, the p-value of an observed x; for Monte Carlo
      ``(1 + #{draws >= x}) / (1 + draws)``, never zero;
    - ``ppf(q)``: the inverse cdf, the smallest support value with ``cdf >= q``, for every method
      (R's ``qhyper``; for Monte Carlo the empirical inverse cdf of the draws);
    - ``tail_quantile(alpha)``: ``ppf(1 - alpha)`` read from the upper tail, for alpha too small for
      1 - alpha to hold (exact and grid laws);
    - ``sample_quantile(q)``: the type-7 quantile of the Monte Carlo draws (numpy's default
      linear interpolation); Monte Carlo laws only;
    - ``quantile(q)``: the threshold convention, ``ppf`` for exact and grid laws (a value of the
      support) and ``sample_quantile`` for Monte Carlo (as R's and numpy's defaults); this is what
      :func:`apnull.threshold` returns;
    - ``support()``: the bounds (a, b) of the support, as scipy's; the support points and their
      probabilities are the arrays ``values`` and ``probs``.

    Values are compared with a tolerance of ``VALUE_TOL`` so that an AP computed in another order
    still matches its support point. The arrays are read-only: laws are cached and shared.
    """

    metric: str
    m: int
    n: int
    method: str
    values: np.ndarray
    probs: np.ndarray
    error_bound: float | None = 0.0
    draws: np.ndarray | None = None
    seed: int | None = None
    grid_size: int | None = None
    counts: np.ndarray | None = None
    total: int | None = None
    dropped_mass: float = 0.0
    _cum: np.ndarray = field(init=False, repr=False)
    _tail: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.values = np.array(self.values, dtype=float)
        self.probs = np.array(self.probs, dtype=float)
        self._cum = np.cumsum(self.probs)
        # upper tails summed from the top, so that a tail of 1e-30 is not lost in 1 - (1 - 1e-30)
        # (from the integer counts of an exact law; else in extended precision)
        if self.counts is not None and self.total:
            self._tail = np.cumsum(np.asarray(self.counts)[::-1])[::-1] / float(self.total)
            self._mass = 1.0
        else:
            self._tail = np.cumsum(self.probs[::-1], dtype=np.longdouble)[::-1].astype(float)
            self._mass = float(self._tail[0]) if self._tail.size else 1.0
        if self._cum.size:
            # the last cumulative probability is 1 by construction; remove float drift
            self._cum /= self._cum[-1]
        if self.draws is not None:
            self.draws = np.array(self.draws, dtype=float)
        if self.counts is not None:
            self.counts = np.array(self.counts)
        for arr in (self.values, self.probs, self._cum, self._tail, self.draws, self.counts):
            if arr is not None:
                arr.setflags(write=False)

    @classmethod
    def from_draws(cls, metric: str, m: int, n: int, draws, seed: int | None = None) -> "NullDistribution":
        """Empirical law of a Monte Carlo sample."""
        draws = np.sort(np.asarray(draws, dtype=float))
        values, counts = np.unique(draws, return_counts=True)
        return cls(metric=metric, m=m, n=n, method="mc", values=values, probs=counts / draws.size,
                   error_bound=None, draws=draws, seed=seed)

    # -- moments ---------------------------------------------------------------------------
    @property
    def mean(self) -> float:
        """Mean of the law (sample mean for Monte Carlo)."""
        if self.draws is not None:
            return float(np.mean(self.draws))
        return float(np.dot(self.values, self.probs))

    @property
    def std(self) -> float:
        """Standard deviation (population SD of the law; sample SD with ddof=1 for Monte Carlo)."""
        if self.draws is not None:
            return float(np.std(self.draws, ddof=1)) if self.draws.size > 1 else 0.0
        mu = self.mean
        return float(np.sqrt(max(0.0, np.dot((self.values - mu) ** 2, self.probs))))

    @property
    def var(self) -> float:
        return self.std**2

    # -- distribution functions ------------------------------------------------------------
    def cdf(self, x):
        """P(X <= x); vectorised over x."""
        x = np.asarray(x, dtype=float)
        idx = np.searchsorted(self.values, x + VALUE_TOL, side="right")
        out = np.where(idx > 0, self._cum[np.maximum(idx - 1, 0)], 0.0)
        return out if out.ndim else float(out)

    def sf(self, x):
        """P(X > x) = 1 - cdf(x), as scipy's ``sf``; vectorised. For a p-value use :meth:`pvalue`."""
        out = np.clip(1.0 - np.asarray(self.cdf(x)), 0.0, 1.0)
        return out if out.ndim else float(out)

    def pvalue(self, x):
        """P(X >= x), the p-value of an observed x; for Monte Carlo (1 + #{draws >= x}) / (1 + draws)."""
        x = np.asarray(x, dtype=float)
        if self.draws is not None:
            below = np.searchsorted(self.draws, x - VALUE_TOL, side="left")
            out = (1.0 + (self.draws.size - below)) / (1.0 + self.draws.size)
        else:
            out = np.clip(self._upper(x) / self._mass, 0.0, 1.0)
        return out if np.ndim(out) else float(out)

    def _upper(self, x):
        """sum of ``probs`` over values >= x - VALUE_TOL, summed from the top (not normalised)."""
        idx = np.searchsorted(self.values, np.asarray(x, dtype=float) - VALUE_TOL, side="left")
        return np.where(idx < self.values.size, self._tail[np.minimum(idx, self.values.size - 1)], 0.0)

    def pvalue_bounds(self, x):
        """Bounds (low, high) on the exact P(X >= x).

        Guaranteed for a grid law: low is the grid's mass at values >= x + error_bound, high its mass
        at values >= x - error_bound plus ``dropped_mass`` (cells the grid trimmed could have landed
        anywhere), so a far tail the grid could not resolve gets a range like [0, 1e-14], never [0, 0]
        (:func:`apnull.tail.combine` resolves it by counting). A 95% Wilson interval for Monte Carlo;
        both equal :meth:`pvalue` for exact laws.
        """
        if self.method == "grid":
            eb = self.error_bound
            lo = self._upper(np.asarray(x) + eb) * (1 - 1e-12)
            hi = np.minimum(1.0, self._upper(np.asarray(x) - eb) * (1 + 1e-12) + self.dropped_mass)
            return (lo if np.ndim(lo) else float(lo)), (hi if np.ndim(hi) else float(hi))
        if self.method == "mc":
            k = self.draws.size * (1 - np.asarray(self.cdf(np.asarray(x) - VALUE_TOL * 2)))
            return _wilson(k, self.draws.size)
        p = self.pvalue(x)
        return p, p

    def ppf(self, q):
        """Inverse cdf: the smallest support value x with P(X <= x) >= q, for every method."""
        q_arr = _check_q(q)
        idx = np.searchsorted(self._cum, q_arr - 1e-12, side="left")
        out = self.values[np.minimum(idx, self.values.size - 1)]
        return out if out.ndim else float(out)

    def tail_quantile(self, alpha: float) -> float:
        """The smallest support value x with P(X > x) <= alpha, read from the upper tail summed from the
        top (with a relative slack of 1e-9 on alpha): ``ppf(1 - alpha)`` where 1 - alpha is too close
        to 1 for a float to hold alpha (alpha = 1e-20 is 1 - alpha = 1.0). Exact and grid laws."""
        thr = float(alpha) * (1 + 1e-9) * self._mass
        count = int(np.searchsorted(-self._tail, -thr, side="left"))  # tail entries above thr
        return float(self.values[max(0, count - 1)]) if count else float(self.values[0])

    def sample_quantile(self, q):
        """Type-7 quantile of the Monte Carlo draws (numpy's default interpolation, R's default)."""
        if self.draws is None:
            raise ValueError(f"sample_quantile needs Monte Carlo draws; this law is {self.method}: use ppf")
        out = np.quantile(self.draws, _check_q(q))
        return out if np.ndim(out) else float(out)

    def quantile(self, q):
        """The threshold convention: :meth:`ppf` for exact and grid laws, :meth:`sample_quantile` for
        Monte Carlo (what :func:`apnull.threshold` returns)."""
        return self.sample_quantile(q) if self.draws is not None else self.ppf(q)

    def support(self) -> tuple[float, float]:
        """Bounds (a, b) of the support, as scipy's ``support()``."""
        return float(self.values[0]), float(self.values[-1])

    def pmf(self, x):
        """P(X = x) within VALUE_TOL; vectorised."""
        return np.asarray(self.cdf(x)) - np.asarray(self.cdf(np.asarray(x, dtype=float) - 2 * VALUE_TOL))

    def describe(self) -> str:
        """One line naming the method and its accuracy, for tables and the CLI."""
        if self.method == "exact":
            return "exact (all placements)"
        if self.method == "grid":
            return f"grid law, G={self.grid_size}, quantiles within {self.error_bound:.1e}"
        return f"Monte Carlo, {self.draws.size:,} draws, seed {self.seed}"


def _check_q(q) -> np.ndarray:
    q_arr = np.asarray(q, dtype=float)
    if np.any(np.isnan(q_arr)) or np.any((q_arr < 0) | (q_arr > 1)):
        raise ValueError(f"q must lie in [0, 1], got {q}")
    return q_arr


def _wilson(k, n, z=1.959963984540054):
    k = np.asarray(k, dtype=float)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def count_reached(null, observed: float) -> int:
    """How many null values reach the observed one: ``#{null >= observed - VALUE_TOL}``.

    The tolerance lets a value computed in another order (the same mAP summed differently) count as
    reached. ``null`` is any array of draws, in any order.
    """
    return int(np.count_nonzero(np.asarray(null) >= observed - VALUE_TOL))


def permutation_pvalue(null, observed: float, exact: bool = False) -> float:
    """Permutation p-value of ``observed`` against the null values ``null`` (B of them).

    Random permutations (``exact`` False): ``p = (1 + #{null >= observed - tol}) / (1 + B)``, never
    zero and valid at any B (the observed labelling counts as one of the permutations). Every
    assignment enumerated (``exact`` True, the observed one among them): ``p = #{null >= observed -
    tol} / B``, the exact tail probability. ``tol`` is :data:`VALUE_TOL`; NaN when ``null`` is empty.
    """
    null = np.asarray(null)
    if null.size == 0:
        return np.nan
    return float(counted_pvalue(count_reached(null, observed), null.size, exact))


def counted_pvalue(reached, drawn, exact=False):
    """The one permutation p-value formula, from counts (vectorised): ``reached`` null values of
    ``drawn`` reached the observed one. ``exact`` False (random draws, the observed labelling counted
    as one of them): ``(1 + reached) / (1 + drawn)``, never 0; True (every assignment enumerated, or a
    Besag-Clifford stop at the h-th value reaching it, Besag & Clifford 1991): ``reached / drawn``
    (``drawn`` 0 counts as 1). ``exact`` may be an array (per value)."""
    g = np.asarray(reached, dtype=float)
    L = np.asarray(drawn, dtype=float)
    return np.where(exact, g / np.maximum(L, 1.0), (1.0 + g) / (1.0 + L))
