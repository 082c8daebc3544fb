"""Compiled kernel (numba) of the conditional per-query null: the query kept, each positive swapped.

For query q (a replicate of perturbation t in stratum s_q), a null draw keeps q and, for every
other replicate of t (a positive, in stratum s), draws a member of pool_s (t's replicates and the
controls of s, q excluded), distinct members within a stratum; q then ranks the drawn members
(positives) and the rest of pool_{s_q} (negatives). Under exchangeability of t's replicates and the
controls within each stratum, given q, the observed positives are one such draw, so
``(1 + #{null AP >= AP - tol}) / (1 + L)`` is a valid p-value, whatever plate effect moves whole
strata. Deterministic scalar code, as :mod:`._kernels`.
"""

from __future__ import annotations

import numba
import numpy as np

from .._kernels import uniform
from ._kernels import evaluate
from ._permute import pool_layout


@numba.njit(cache=True)
def _draw_query(pool, rep_str, qi, key, counter, D):  # pragma: no cover - compiled
    """Fill D (k pool indices) for query qi: D[qi] its own member, D[j] a member of rep_str[j]'s pool.

    Members are distinct; uniforms come in order from stream ``key`` at index ``counter``; returns the
    next unused index.
    """
    k = D.size
    D[qi] = pool.observed[qi]
    for j in range(k):
        if j == qi:
            continue
        s = rep_str[j]
        size = (pool.rep_hi[s] - pool.rep_lo[s]) + pool.n[s]
        while True:
            idx = np.int64(uniform(key, counter) * size)
            counter += np.uint64(1)
            if idx >= size:
                idx = size - 1
            g = pool.offset[s] + idx
            fresh = g != D[qi]
            for t in range(j):
                if t != qi and D[t] == g:
                    fresh = False
                    break
            if fresh:
                D[j] = g
                break
    return counter


@numba.njit(cache=True, nogil=True)
def conditional_scores(reps, controls, kind, keys, counters, drawn, reached, active, target, h, tol):  # pragma: no cover
    """Continue the conditional null of each active query of t up to ``target`` draws.

    Query i uses the stream keys[i] from uniform index counters[i]; ``drawn[i]``, ``reached[i]``
    (draws so far, and how many had null AP >= AP_i - ``tol``) and ``counters`` are updated in place.
    A query with reached < h on entry stops at its h-th exceedance (Besag & Clifford).

    Returns
    -------
    ap, pr : (k,) observed tie-aware AP and Precision@R of every query
    stopped : (k,) bool, the queries that stopped at their h-th exceedance in this call
    """
    k = reps.X.shape[0]
    pool = pool_layout(reps, controls, kind, target)
    ap = np.empty(k)
    pr = np.empty(k)
    tap = np.empty(k)
    tpr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((4, k), dtype=np.int64)
    evaluate(pool.observed, True, ap, pr, fwork, iwork, controls, pool, kind)
    D = np.empty(k, dtype=np.int64)
    stopped = np.zeros(k, dtype=np.bool_)
    for i in range(k):
        if not active[i]:
            continue
        early = reached[i] < h
        while drawn[i] < target:
            counters[i] = _draw_query(pool, reps.stratum, i, keys[i], counters[i], D)
            evaluate(D, True, tap, tpr, fwork, iwork, controls, pool, kind)
            drawn[i] += 1
            if tap[i] >= ap[i] - tol:
                reached[i] += 1
                if early and reached[i] >= h:
                    stopped[i] = True
                    break
    return ap, pr, stopped
