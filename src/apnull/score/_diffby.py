"""Compiled kernels (numba) of the label permutations when positives must differ by some columns.

With ``positives_differ_by`` (copairs's ``pos_diffby``), every pool member g carries codes
``codes[g, c]`` (one per column c, the factorized value). For query u of an assignment D, a member
y of D \\ {u} sharing a code with u in any column is left out of u's ranking entirely: it is neither a
positive nor a negative. The kept members are u's positives (m_u of them), the members of u's stratum
pool outside D its negatives. A query keeping no positive has no AP and is left out of the mean; an
assignment in which no query keeps a positive has mAP 0.

The counts follow :func:`apnull.score._kernels.evaluate` (same :class:`Pool` and
:class:`ControlRows`), with the excluded members taken out of the negatives like the positives; the
random assignments are the same keyed draws as :func:`apnull.score._permute.perturbation_scores`.
"""

from __future__ import annotations

import numba
import numpy as np

from ._draws import draw_assignment
from ._kernels import block_sum, count_sorted, pair_rank, replicate_counts, sim
from ._permute import pool_layout

__all__ = ["perturbation_scores_excluding", "evaluate_excluding"]


@numba.njit(cache=True)
def shares_code(codes, u, y):  # pragma: no cover - compiled
    """True when members u and y have the same code in at least one column."""
    for c in range(codes.shape[1]):
        if codes[u, c] == codes[y, c]:
            return True
    return False


@numba.njit(cache=True)
def equal_below(row, pos, v):  # pragma: no cover - compiled
    """How many entries equal v end at index pos of an ascending row."""
    e = 0
    while pos >= 0 and row[pos] == v:
        e += 1
        pos -= 1
    return e


@numba.njit(cache=True)
def query_excluding(vals, same, kept, base_gt, base_eq, order, cnt):  # pragma: no cover - compiled
    """Tie-aware AP and Precision@R of one query from the values of the other members of D.

    ``kept[y]``: y is a positive (else left out); ``same[y]``: y lies in the query's stratum pool, so it
    is taken out of base_gt/base_eq (which count the whole pool but the query) whether kept or not.
    Returns (NaN, NaN) when no member is kept.
    """
    m = 0
    for i in range(cnt):  # insertion sort of the kept members by value, descending
        if kept[i] == 0:
            continue
        j = m
        while j > 0 and vals[order[j - 1]] < vals[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        m += 1
    if m == 0:
        return np.nan, np.nan
    before = 0
    total = 0.0
    hits = 0.0
    i = 0
    while i < m:
        first = order[i]
        v = vals[first]
        a = 1
        while i + a < m and vals[order[i + a]] == v:
            a += 1
        gt = base_gt[first]
        eq = base_eq[first]
        for y in range(cnt):
            if same[y] != 0:
                if vals[y] > v:
                    gt -= 1
                elif vals[y] == v:
                    eq -= 1
        start = gt + before
        L = a + eq
        total += block_sum(a, L, start, before)
        hits += a * min(L, max(0, m - start)) / L
        before += a
        i += a
    return total / m, hits / m


@numba.njit(cache=True)
def evaluate_excluding(D, want, ap_out, pr_out, fwork, iwork, controls, pool, kind, codes):  # pragma: no cover
    """Mean AP of assignment D over its queries that keep a positive (0 if none); per-query AP and
    P@R (NaN for a query without positive) into ap_out/pr_out if ``want``. ``iwork`` is (5, k)."""
    Xc, sorted_buf, soff = controls.X, controls.sorted_sims, controls.sorted_offset
    ranks, poff = controls.pairs.view(np.int16), controls.pairs_offset
    g_str, g_rep, g_row, g_ctl = pool.stratum, pool.replicate, pool.row, pool.control
    s_n, s_stratum, s_rep_lo, s_rep_hi = pool.n, pool.component_stratum, pool.rep_lo, pool.rep_hi
    simRP, sortedRC = pool.sim, pool.sorted_rc
    k = D.size
    vals = fwork[0]
    same, base_gt, base_eq, order, kept = iwork[0], iwork[1], iwork[2], iwork[3], iwork[4]
    total = 0.0
    scored = 0
    for qi in range(k):
        u = D[qi]
        su = g_str[u]
        ru = g_rep[u]
        n = s_n[su]
        j = s_stratum[su]
        cu = g_ctl[u]
        rs = soff[j] + cu * (n - 1)
        cnt = 0
        for yi in range(k):
            if yi == qi:
                continue
            y = D[yi]
            insame = g_str[y] == su
            if ru >= 0:
                v = simRP[ru, y]
                if insame:
                    gt, eq = replicate_counts(pool, ru, su, y, v)
                else:
                    gt, eq = count_sorted(sortedRC[ru, :n], v)
            elif g_rep[y] >= 0:
                v = simRP[g_rep[y], u]
                gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
            elif insame:
                gt = pair_rank(ranks, poff[j], cu, g_ctl[y], n)
                v = sorted_buf[rs + n - 2 - gt]
                eq = equal_below(sorted_buf[rs:rs + n - 1], n - 2 - gt, v)
            else:
                v = sim(Xc, g_row[u], Xc, g_row[y], kind)
                gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
            for r2 in range(s_rep_lo[su], s_rep_hi[su]):
                if r2 != ru:
                    w = simRP[r2, u]
                    if w > v:
                        gt += 1
                    elif w == v:
                        eq += 1
            vals[cnt] = v
            same[cnt] = 1 if insame else 0
            kept[cnt] = 0 if shares_code(codes, u, y) else 1
            base_gt[cnt] = gt
            base_eq[cnt] = eq
            cnt += 1
        ap, pr = query_excluding(vals, same, kept, base_gt, base_eq, order, cnt)
        if ap == ap:
            total += ap
            scored += 1
        if want:
            ap_out[qi] = ap
            pr_out[qi] = pr
    return total / scored if scored > 0 else 0.0


@numba.njit(cache=True, nogil=True)
def perturbation_scores_excluding(reps, controls, kind, B, keys, draws, codes):  # pragma: no cover - compiled
    """:func:`apnull.score._permute.perturbation_scores` with positives that must differ by ``codes``
    ((P, C) int64, one row per pool member in pool order). Same draws, same return values; a query
    without positive has NaN AP and Precision@R and the observed mAP is the mean of the others."""
    k = reps.X.shape[0]
    pool = pool_layout(reps, controls, kind, max(B, draws.shape[0]))
    ap = np.empty(k)
    pr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((5, k), dtype=np.int64)
    map_obs = evaluate_excluding(pool.observed, True, ap, pr, fwork, iwork, controls, pool, kind, codes)
    T = draws.shape[0]
    if T > 0:
        null = np.empty(T)
        for b in range(T):
            null[b] = evaluate_excluding(draws[b], False, ap, pr, fwork, iwork, controls, pool, kind, codes)
        return ap, pr, map_obs, null
    null = np.empty(B)
    J = reps.strata.size
    counters = np.zeros(J, dtype=np.uint64)
    D = np.empty(k, dtype=np.int64)
    for b in range(B):
        draw_assignment(pool, keys, counters, D)
        null[b] = evaluate_excluding(D, False, ap, pr, fwork, iwork, controls, pool, kind, codes)
    return ap, pr, map_obs, null
