"""Compiled label-permutation kernels (numba): one perturbation's pool, its null mAPs, copairs rows.

Split from :mod:`._kernels` (similarities, tie-aware AP, one assignment's evaluation), which holds the
layout conventions. Deterministic scalar code: identical bits in any process.
"""

from __future__ import annotations

import numba
import numpy as np

from ._draws import draw_distinct, null_means
from ._kernels import Pool, evaluate
from ._tables import replicate_ranks, replicate_sims


#: A single-stratum pool keeps a rank table of its replicates' rows when draws * k (k - 1) >= this * n:
#: a replicate is one of the k queries of about k / n of the draws and then counts its k - 1 positives'
#: ranks over the n controls, while the table sorts k rows of n once (about this many comparisons a value).
RANK_TABLE_RATIO = 50


@numba.njit(cache=True)
def pool_layout(reps, controls, kind, draws):  # pragma: no cover - compiled
    """The :class:`Pool` of perturbation t: layout, replicate-to-pool similarities, sorted
    replicate-to-control rows and their ranks (``reps`` a ``Replicates``, ``controls`` a ``ControlRows``).

    ``draws``: about how many assignments will be evaluated on the pool. A pool over one stratum keeps
    no rank table when few are (``RANK_TABLE_RATIO``): a replicate query then counts its ranks when
    drawn (``_kernels.replicate_counts``, the same values)."""
    Xr, rep_str, t_strata = reps.X, reps.stratum, reps.strata
    Xc, cstart, csize = controls.X, controls.start, controls.size
    k = Xr.shape[0]
    J = t_strata.size
    s_n = np.empty(J, dtype=np.int64)
    s_lo = np.zeros(J, dtype=np.int64)
    s_hi = np.zeros(J, dtype=np.int64)
    poff = np.empty(J, dtype=np.int64)
    for s in range(J):
        s_n[s] = csize[t_strata[s]]
        s_lo[s] = k
    for r in range(k):
        s = rep_str[r]
        s_lo[s] = min(s_lo[s], r)
        s_hi[s] = max(s_hi[s], r + 1)
    P = 0
    for s in range(J):
        poff[s] = P
        P += (s_hi[s] - s_lo[s]) + s_n[s]
    g_str = np.empty(P, dtype=np.int64)
    g_rep = np.full(P, -1, dtype=np.int64)
    g_row = np.full(P, -1, dtype=np.int64)
    g_ctl = np.full(P, -1, dtype=np.int64)
    for s in range(J):
        g = poff[s]
        for r in range(s_lo[s], s_hi[s]):
            g_str[g] = s
            g_rep[g] = r
            g += 1
        for c in range(s_n[s]):
            g_str[g] = s
            g_row[g] = cstart[t_strata[s]] + c
            g_ctl[g] = c
            g += 1
    simRP = replicate_sims(Xr, Xc, controls.XT, g_rep, g_row, kind)
    nmax = 0
    for s in range(J):
        nmax = max(nmax, s_n[s])
    if J == 1 and draws * k * (k - 1) < RANK_TABLE_RATIO * s_n[0]:  # counts made when drawn instead
        sortedRC = np.empty((k, 0))
        gtR = np.zeros((k, 0), dtype=np.int64)
        eqR = np.zeros((k, 0), dtype=np.int64)
    else:
        sortedRC = np.empty((k, nmax))
        gtR = np.zeros((k, P), dtype=np.int64)
        eqR = np.zeros((k, P), dtype=np.int64)
        replicate_ranks(simRP, rep_str, poff, s_lo, s_hi, s_n, sortedRC, gtR, eqR)
    D0 = np.empty(k, dtype=np.int64)
    for r in range(k):
        s = rep_str[r]
        D0[r] = poff[s] + r - s_lo[s]
    return Pool(g_str, g_rep, g_row, g_ctl, s_n, t_strata, s_lo, s_hi, poff, simRP, sortedRC, gtR, eqR, D0)


@numba.njit(cache=True, nogil=True)
def perturbation_scores(reps, controls, kind, B, keys, draws):  # pragma: no cover - compiled
    """Observed per-query AP, Precision@R and mAP of t, and the mAP of each null assignment.

    Parameters
    ----------
    reps : Replicates
        t's replicate rows grouped by stratum, their stratum positions and t's strata in the component.
    controls : ControlRows
        The component's control rows, sorted similarity rows and their ranks.
    kind : int
        0 dot product, 1 minus squared Euclidean distance.
    B, keys : int, (J,) uint64
        If draws is empty, B random assignments; stratum s uses the SplitMix64 stream keys[s]
        (draw k_s distinct members of pool_s by rejection, uniforms taken in order).
    draws : (T, k) int64
        Explicit assignments (pool indices), e.g. all of them; used when T > 0.

    Returns
    -------
    ap, pr : (k,) observed per-query tie-aware AP and Precision@R
    map_obs : float, the observed mAP
    null : (B,) or (T,) null mAP values
    """
    k = reps.X.shape[0]
    pool = pool_layout(reps, controls, kind, max(B, draws.shape[0]))
    ap = np.empty(k)
    pr = np.empty(k)
    fwork = np.empty((1, k))  # workspaces reused by every assignment: no allocation per draw
    iwork = np.empty((4, k), dtype=np.int64)
    map_obs = evaluate(pool.observed, True, ap, pr, fwork, iwork, controls, pool, kind)
    T = draws.shape[0]
    if T > 0:
        null = np.empty(T)
        for b in range(T):
            null[b] = evaluate(draws[b], False, ap, pr, fwork, iwork, controls, pool, kind)
        return ap, pr, map_obs, null
    null = np.empty(B)
    null_means(pool, controls, kind, keys, np.zeros(reps.strata.size, dtype=np.uint64), null)
    return ap, pr, map_obs, null


@numba.njit(cache=True)
def random_ap_rows(m, n, B, key):  # pragma: no cover - compiled
    """B null APs of m positives placed uniformly among m + n ranks (the copairs-style null row)."""
    N = m + n
    out = np.empty(B)
    pos = np.empty(m, dtype=np.int64)
    counter = np.uint64(0)
    for b in range(B):
        counter = draw_distinct(key, counter, N, 0, pos, 0, m)
        srt = np.sort(pos)
        s = 0.0
        for i in range(m):
            s += (i + 1.0) / (srt[i] + 1.0)
        out[b] = s / m
    return out
