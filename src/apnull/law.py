"""One object type for a null law, whichever method produced it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["NullDistribution", "VALUE_TOL"]

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
    m, n : int
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

    Conventions
    -----------
    ``cdf(x) = P(X <= x)``, ``sf(x) = P(X >= x)`` (the p-value), both with a tolerance of
    ``VALUE_TOL`` so that an AP computed in another order still matches its support point.
    ``quantile(q)`` is the smallest support value with ``cdf >= q`` (R's ``qhyper``) for exact and grid
    laws, and numpy's default linear interpolation (R's type 7) for Monte Carlo samples. The Monte
    Carlo p-value is ``(1 + #{draws >= x}) / (1 + draws)``, never zero.
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

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=float)
        self.probs = np.asarray(self.probs, dtype=float)
        self._cum = np.cumsum(self.probs)
        if self._cum.size:
            # the last cumulative probability is 1 by construction; remove float drift
            self._cum /= self._cum[-1]

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
        """P(X >= x), the p-value of an observed x; for Monte Carlo (1 + #{draws >= x}) / (1 + draws)."""
        x = np.asarray(x, dtype=float)
        if self.draws is not None:
            below = np.searchsorted(self.draws, x - VALUE_TOL, side="left")
            out = (1.0 + (self.draws.size - below)) / (1.0 + self.draws.size)
        else:
            idx = np.searchsorted(self.values, x - VALUE_TOL, side="left")
            below = np.where(idx > 0, self._cum[np.maximum(idx - 1, 0)], 0.0)
            out = np.clip(1.0 - below, 0.0, 1.0)
        return out if np.ndim(out) else float(out)

    def sf_bounds(self, x):
        """Guaranteed (low, high) bounds on the exact P(X >= x) for a grid law.

        For exact laws both equal ``sf(x)``; for Monte Carlo they are a 95% Wilson interval.
        """
        if self.method == "grid":
            eb = self.error_bound
            return self.sf(np.asarray(x) + eb), self.sf(np.asarray(x) - eb)
        if self.method == "mc":
            k = self.draws.size * (1 - np.asarray(self.cdf(np.asarray(x) - VALUE_TOL * 2)))
            return _wilson(k, self.draws.size)
        p = self.sf(x)
        return p, p

    def quantile(self, q):
        """Quantile: smallest support value with cdf >= q (exact/grid); type-7 interpolation (mc)."""
        q_arr = np.asarray(q, dtype=float)
        if np.any((q_arr < 0) | (q_arr > 1)) or np.any(np.isnan(q_arr)):
            raise ValueError(f"q must lie in [0, 1], got {q}")
        if self.draws is not None:
            out = np.quantile(self.draws, q_arr)
        else:
            idx = np.searchsorted(self._cum, q_arr - 1e-12, side="left")
            out = self.values[np.minimum(idx, self.values.size - 1)]
        return out if out.ndim else float(out)

    def support(self):
        """(values, probs) for plotting."""
        return self.values, self.probs

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


def _wilson(k, n, z=1.959963984540054):
    k = np.asarray(k, dtype=float)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
