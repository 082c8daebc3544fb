"""Null laws for per-query APs.

- Per-query p-value: P(AP >= ap) under the null law of the query's (m, n) (exact, grid or Monte Carlo
  by the library's auto rule), one law per (m, n), cached; where that law does not resolve the p-value
  (a far tail the grid trims or no Monte Carlo draw reaches) it is counted
  (:func:`apnull.tail.combine`), so a strong replicate gets its real p (1 / C(m+n, m) for AP = 1), not
  0 or a floor. A Monte Carlo law gets a seed derived from (seed, m, n), so p-values reproduce.

The approximate mAP nulls kept for comparison, "independent" (which convolves these laws) and
"copairs", are modules of their own (:mod:`.independent`, :mod:`.copairs`), registered in
:mod:`.registry`.
"""

from __future__ import annotations

import numpy as np

import apnull
from apnull.law import VALUE_TOL
from apnull.tail import closed_pvalue, combine, needs_counting
from apnull.tail import uncounted as uncounted_tail

from ...streams import stream_key
from ..engine.clock import tell_stage

__all__ = ["LawCache", "LAW_GRACE"]

#: Seconds past a run's deadline during which the per-query laws are still computed (their far tails
#: are not counted once the deadline has passed): a law is a grid scan of well under a second, and
#: without it a query's p-value could only be 1.
LAW_GRACE = 1.0


class LawCache:
    """Null laws for one run, keyed by (m, n)."""

    def __init__(self, seed: int, deadline=None):
        self.seed = int(seed)
        self.deadline = deadline  #: the run's clock (:class:`..engine.clock.Deadline`) or None
        self._laws: dict = {}

    def law(self, m: int, n: int):
        key = (int(m), int(n))
        if key not in self._laws:
            self._laws[key] = apnull.null_distribution(key[0], key[1], metric="ap", method="auto",
                                                       seed=stream_key(self.seed, "law", *key) % 2**32)
        return self._laws[key]

    def query_pvalues(self, ms, ns, aps) -> np.ndarray:
        """P(AP >= ap) under the null law of each query's (m, n), counted where the law cannot resolve it.

        The per-query p-value of the exact law (exact where the query's positives and negatives are
        exchangeable): the law's own p where it resolves it, else the upper end of the counted
        bounds of :func:`apnull.tail.combine` (never 0 for an AP that can occur). Vectorised per (m, n);
        counting runs only for the unresolved queries. NaN for a NaN AP. Within the run's deadline
        (the cache's ``deadline``): :meth:`counted_pvalues`, which also says which are bounds.
        """
        return self.counted_pvalues(ms, ns, aps)[0]

    def counted_pvalues(self, ms, ns, aps, progress=None) -> tuple:
        """(p, uncounted): :meth:`query_pvalues` within the run's deadline, telling ``progress``.

        Once the cache's ``deadline`` (:class:`..engine.clock.Deadline`) has passed, no far tail is
        counted: such a query's p is the law's guaranteed upper end (:func:`apnull.tail.uncounted`: a closed form
        where one holds, else the grid's range with its trimmed mass, or Monte Carlo's 95% upper
        end) and ``uncounted`` is True there (the p is an upper bound). Laws are still computed
        (each well under a second, and cached) until ``LAW_GRACE`` seconds past the deadline; a
        query whose law is not computed by then gets p = 1, uncounted. A tail count is at most
        :data:`apnull.tail.TAIL_WORK` states, so the stage ends at most about a second past the
        deadline plus the grace. AP = 1 has a closed form that needs no law (1 / C(m + n, m)), and
        the laws of m = 1 and n <= 1 are closed forms made at any time. ``progress(done, total)``
        counts the queries resolved, as stage "queries, exact laws and far tails"
        (:func:`..engine.clock.tell_stage`).
        """
        deadline = self.deadline
        ms, ns = np.asarray(ms, dtype=np.int64), np.asarray(ns, dtype=np.int64)
        aps = np.asarray(aps, dtype=float)
        out = np.full(aps.shape, np.nan)
        uncounted = np.zeros(aps.shape, dtype=bool)
        ok = np.flatnonzero(~np.isnan(aps))
        if not ok.size:
            return out, uncounted
        # the queries grouped by (m, n) with one sort of integer keys (no Python object per query)
        key = ms[ok] * (int(ns[ok].max()) + 1) + ns[ok]
        order = np.argsort(key, kind="stable")
        ok, key = ok[order], key[order]
        del order
        cuts = np.flatnonzero(np.diff(key)) + 1
        del key
        total, done = int(ok.size), 0
        tell_stage(progress, "queries, exact laws and far tails")
        later = []  # (law, rows to count)
        for rows in np.split(ok, cuts):
            m, n = int(ms[rows[0]]), int(ns[rows[0]])
            if deadline is not None and m > 1 and n > 1 and deadline.passed(-LAW_GRACE):
                # no law (m = 1 and n <= 1 have closed-form laws, always made): AP = 1 by its closed
                # form 1 / C(m + n, m), every other p = 1
                top = rows[aps[rows] >= 1.0 - VALUE_TOL]
                out[rows], uncounted[rows] = 1.0, True
                if top.size:
                    out[top], uncounted[top] = closed_pvalue(1.0, m, n).p, False
                done += top.size
            else:
                law = self.law(m, n)
                out[rows] = law.pvalue(aps[rows])
                far = rows[np.atleast_1d(needs_counting(law, aps[rows]))]
                if far.size:
                    later.append((law, far))
                done += rows.size - far.size
            if progress:
                progress(done, total)
        for law, far in later:
            for r in far.tolist():
                if deadline is not None and deadline.passed():  # a closed form still holds; else a bound
                    tp = uncounted_tail(law, float(aps[r]))
                    out[r], uncounted[r] = tp.p, tp.source != "tail count"
                else:
                    out[r] = combine(law, float(aps[r])).p
                done += int(not uncounted[r])
                if progress:
                    progress(done, total)
        if progress and done < total:
            progress(total, total)
        return out, uncounted

    def query_pvalue(self, m: int, n: int, ap: float) -> float:
        """:meth:`query_pvalues` of one query."""
        return float(self.query_pvalues([m], [n], [ap])[0])
