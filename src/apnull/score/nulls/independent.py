"""The "independent" mAP null (approximate, kept for comparison): a perturbation's k query APs treated
as independent draws of their own (m_i, n_i) laws.

Each law (:class:`.laws.LawCache`) is put on the grid ``round(G * value)`` (G = :data:`INDEPENDENT_GRID`),
the k grids are convolved, and p = P(sum of grid indices >= the observed sum of grid indices). It
ignores that the k queries share positives, and over-rejects (about 2x at 0.05). It draws nothing:
the p-values count no permutations and none is a bound.
"""

from __future__ import annotations

import numpy as np


__all__ = ["INDEPENDENT_GRID", "IndependentGrids", "independent_pvalues"]

#: Grid points per unit of AP for the "independent" convolution.
INDEPENDENT_GRID = 2048


class IndependentGrids:
    """The grids of one run's laws and their convolutions, keyed by (m, n) and by the multiset of (m, n)."""

    def __init__(self, laws):
        self.laws = laws  #: the run's :class:`.laws.LawCache`
        self._grids: dict = {}
        self._convs: dict = {}

    def grid(self, m, n) -> np.ndarray:
        """The law of (m, n) on the grid: probability of each index round(G * AP), 0..G."""
        key = (int(m), int(n))
        if key not in self._grids:
            law = self.laws.law(*key)
            idx = np.rint(np.asarray(law.values) * INDEPENDENT_GRID).astype(np.int64)
            self._grids[key] = np.bincount(idx, weights=law.probs, minlength=INDEPENDENT_GRID + 1)
        return self._grids[key]

    def pvalue(self, ms, ns, aps) -> float:
        """P(sum_i X_i >= sum_i ap_i) for independent X_i ~ law(m_i, n_i), on the grid (0 past its top)."""
        key = tuple(sorted(zip((int(m) for m in ms), (int(n) for n in ns))))
        if key not in self._convs:
            from scipy.signal import fftconvolve

            conv = np.ones(1)
            for m, n in key:
                g = self.grid(m, n)
                conv = np.convolve(conv, g) if conv.size * g.size <= 4_000_000 else fftconvolve(conv, g)
            conv = np.clip(conv, 0.0, None)
            self._convs[key] = np.cumsum(conv[::-1])[::-1] / conv.sum()
        tail = self._convs[key]
        obs = int(np.sum(np.rint(np.asarray(aps) * INDEPENDENT_GRID)))
        return float(min(1.0, tail[obs])) if obs < tail.size else 0.0


def independent_pvalues(laws, queries, maps, permutations) -> tuple:
    """The registry's calculator (:class:`.registry.MapNull`): each perturbation's p from its kept
    queries' (ms, ns, aps); no draws, no bounds."""
    grids = IndependentGrids(laws)
    p = np.array([grids.pvalue(ms, ns, aps) for ms, ns, aps in queries], dtype=float)
    return p, np.zeros(p.size, dtype=np.int64), np.zeros(p.size, dtype=bool)

