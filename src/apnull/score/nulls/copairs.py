"""The "copairs" mAP null (approximate, kept for comparison): copairs's construction.

One null row of B random-placement APs per (m, n), shared by every query with that (m, n); a
perturbation's null mAP b is the mean of its queries' rows at b; p = (1 + #{null >= mAP - tol}) /
(1 + B) (:func:`apnull.law.permutation_pvalue`; copairs uses a strict ``>``). Rows are the same for
every query with the same (m, n), so the mean is as wide as one AP: too conservative with equal
control counts, too liberal when counts differ. B is the run's ``permutations``, 999 for "auto"; a
row of (m, n) has the stream key (seed, "copairs", m, n).
"""

from __future__ import annotations

import numpy as np

from apnull.law import permutation_pvalue

from ...streams import stream_key
from ..kernels.draws import random_ap_rows

__all__ = ["COPAIRS_AUTO", "CopairsRows", "copairs_pvalues"]

#: B for ``permutations="auto"`` (copairs's usual null size).
COPAIRS_AUTO = 999


class CopairsRows:
    """One run's copairs rows, keyed by (m, n, B)."""

    def __init__(self, seed: int):
        self.seed = int(seed)
        self._rows: dict = {}

    def row(self, m: int, n: int, B: int) -> np.ndarray:
        """B APs of m positives placed at random among m + n items (:func:`..kernels.draws.random_ap_rows`)."""
        key = (int(m), int(n), int(B))
        if key not in self._rows:
            self._rows[key] = random_ap_rows(key[0], key[1], key[2], np.uint64(stream_key(self.seed, "copairs", m, n)))
        return self._rows[key]

    def null(self, ms, ns, B: int) -> np.ndarray:
        """Null mAP draws: the mean over queries of their (m, n) rows, column by column."""
        return np.mean([self.row(m, n, B) for m, n in zip(ms, ns)], axis=0)

    def pvalue(self, ms, ns, map_obs: float, B: int) -> float:
        """(1 + #{null >= mAP - tol}) / (1 + B) over the copairs null (:func:`apnull.law.permutation_pvalue`)."""
        return permutation_pvalue(self.null(ms, ns, B), map_obs)


def copairs_pvalues(laws, queries, maps, permutations) -> tuple:
    """The registry's calculator (:class:`.registry.MapNull`): each perturbation's p from its kept
    queries' (ms, ns) and its mAP; B draws each, a bound where p is the floor 1 / (1 + B)."""
    B = permutations if isinstance(permutations, int) else COPAIRS_AUTO
    rows = CopairsRows(laws.seed)
    p = np.array([rows.pvalue(ms, ns, m, B) for (ms, ns, _), m in zip(queries, maps)], dtype=float)
    return p, np.full(p.size, B, dtype=np.int64), p <= 1.0 / (1 + B) * (1 + 1e-9)

