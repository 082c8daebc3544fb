"""The scoring kernels as they were before the chunked null (reference for tests/score/test_score_kernel.py).

A frozen copy of the per-draw implementation: pool built with one similarity at a time and a binary
search per member, each draw evaluated on its own. The current kernels must give the same bits.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from apnull.streams import uniform

_EULER = 0.5772156649015329


class ControlRows(NamedTuple):
    """The controls of one component of strata, as the kernels read them (built by
    ``_engine.prepare_component``). Stratum j of the component holds ``size[j]`` controls."""

    X: np.ndarray               #: (n_total, d) prepared control rows; stratum j at rows start[j] .. + size[j]
    start: np.ndarray           #: (J,) int64 first row of each stratum in ``X``
    size: np.ndarray            #: (J,) int64 number of controls of each stratum
    sorted_sims: np.ndarray     #: float64 buffer of sorted similarity rows (``sorted_control_rows``):
    # control c of stratum j has its n - 1 similarities to the others, ascending, at
    # sorted_offset[j] + c * (size[j] - 1)
    sorted_offset: np.ndarray   #: (J,) int64 start of stratum j in ``sorted_sims``
    greater: np.ndarray         #: int32 buffer of ranks: how many of control c's similarities exceed
    # sim(c, c2), at greater_offset[j] + c * size[j] + c2 (-1 on the diagonal)
    greater_offset: np.ndarray  #: (J,) int64 start of stratum j in ``greater``


class Replicates(NamedTuple):
    """The replicates of one perturbation t, grouped by stratum (``stratum`` non-decreasing)."""

    X: np.ndarray               #: (k, d) prepared replicate rows of t
    stratum: np.ndarray         #: (k,) int64 position s of each replicate's stratum among t's strata
    strata: np.ndarray          #: (J,) int64 t's strata as indices j into the component (``ControlRows``)


class Pool(NamedTuple):
    """The pool of one perturbation t (``_permute.pool_layout``): for each stratum s of t, in order,
    its k_s replicates then its n_s controls; g indexes the P pool members."""

    stratum: np.ndarray         #: (P,) position s of member g's stratum among t's strata
    replicate: np.ndarray       #: (P,) replicate index r of member g (row of the replicate arrays), -1 for a control
    row: np.ndarray             #: (P,) row of member g in ``ControlRows.X``, -1 for a replicate
    control: np.ndarray         #: (P,) index c of member g among its stratum's controls, -1 for a replicate
    n: np.ndarray               #: (J,) controls n_s of each stratum of t
    component_stratum: np.ndarray  #: (J,) index j of stratum s in the component (``ControlRows``)
    rep_lo: np.ndarray          #: (J,) replicates of stratum s are rep_lo[s] .. rep_hi[s] - 1
    rep_hi: np.ndarray
    offset: np.ndarray          #: (J,) first pool member of stratum s
    sim: np.ndarray             #: (k, P) similarity of replicate r to member g
    sorted_rc: np.ndarray       #: (k, max n_s) similarities of replicate r to its stratum's controls, ascending
    gt: np.ndarray              #: (k, P) controls of r's stratum more similar to r than member g (same stratum only)
    eq: np.ndarray              #: (k, P) controls of r's stratum as similar to r as member g (same stratum only)
    observed: np.ndarray        #: (k,) the observed assignment: pool index of each replicate of t


@numba.njit(cache=True, inline="always")
def sim(X, i, Y, j, kind):  # pragma: no cover - compiled
    """Similarity of row i of X and row j of Y: dot product (kind 0) or -squared distance (kind 1)."""
    s = 0.0
    if kind == 0:
        for t in range(X.shape[1]):
            s += X[i, t] * Y[j, t]
        return s
    for t in range(X.shape[1]):
        diff = X[i, t] - Y[j, t]
        s += diff * diff
    return -s


@numba.njit(cache=True)
def sorted_control_rows(Xc, kind):  # pragma: no cover - compiled
    """Sorted similarity rows of the controls and the rank of every control in every row.

    Returns (rows, greater): rows[a] = similarities of control a to the other n - 1 controls,
    ascending; greater[a, b] = how many of them exceed sim(a, b) (-1 on the diagonal), so that
    sim(a, b) = rows[a, n - 2 - greater[a, b]] and counts need no search.
    """
    n = Xc.shape[0]
    out = np.empty((n, max(n - 1, 0)))
    greater = np.full((n, n), -1, dtype=np.int32)
    for a in range(n):
        for b in range(a + 1, n):
            v = sim(Xc, a, Xc, b, kind)
            out[a, b - 1] = v
            out[b, a] = v
    for a in range(n):
        order = np.argsort(out[a, :], kind="mergesort")
        row = out[a, :][order]
        hi = n - 1
        while hi > 0:
            lo = hi - 1
            while lo > 0 and row[lo - 1] == row[hi - 1]:
                lo -= 1
            for t in range(lo, hi):
                col = order[t]
                greater[a, col if col < a else col + 1] = n - 1 - hi
            hi = lo
        out[a, :] = row
    return out, greater


def reference_controls(controls, kind) -> ControlRows:
    """The reference's :class:`ControlRows` of the strata of ``controls`` (any object with the fields
    ``X``, ``start`` and ``size``, e.g. the engine's): its own sorted rows and ranks of every stratum."""
    rows, greater = [], []
    for j in range(controls.size.size):
        a, n = int(controls.start[j]), int(controls.size[j])
        r, g = sorted_control_rows(np.ascontiguousarray(controls.X[a:a + n]), kind)
        rows.append(r.ravel())
        greater.append(g.ravel())
    lens = np.array([r.size for r in rows], dtype=np.int64)
    glens = np.array([g.size for g in greater], dtype=np.int64)
    return ControlRows(controls.X, controls.start, controls.size,
                       np.concatenate(rows) if rows else np.empty(0), np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64),
                       np.concatenate(greater) if greater else np.empty(0, np.int32),
                       np.concatenate([[0], np.cumsum(glens)[:-1]]).astype(np.int64))


@numba.njit(cache=True)
def harmonic(n):  # pragma: no cover - compiled
    """H_n = sum_{i<=n} 1/i: summed for n < 64, else the asymptotic series (error < 1e-17).

    The compiled counterpart of :func:`apnull.exact.harmonic` (the reference: correctly rounded
    ``math.fsum``, any power), which nopython code cannot call and which must not import numba; the
    two agree within a few ulp (``tests/score/test_score_ties.py``). Only ``block_sum`` uses it.
    """
    if n < 64:
        s = 0.0
        for i in range(1, n + 1):
            s += 1.0 / i
        return s
    x = float(n)
    x2 = 1.0 / (x * x)
    return math.log(x) + _EULER + 0.5 / x - x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 / 252))


@numba.njit(cache=True)
def block_sum(a, L, start, before):  # pragma: no cover - compiled
    """Expected sum of precisions at the a positives of a tied block of L items (a positives).

    The block occupies ranks start+1 .. start+L with ``before`` positives ranked above it. Slot p is
    positive with probability a/L, and then holds before + 1 + (p-1)(a-1)/(L-1) positives on
    average up to itself, so the block contributes
    sum_{p=1..L} (a/L) * (before + 1 + (p-1)(a-1)/(L-1)) / (start + p)
    = (a/L) * [(alpha - beta*(start+1)) * (H_{start+L} - H_start) + beta*L],
    alpha = before + 1, beta = (a-1)/(L-1). Summed directly for L <= 64 (exact without ties).
    """
    if L == 1:
        return (before + 1.0) / (start + 1.0)
    beta = (a - 1.0) / (L - 1.0)
    if L <= 64:
        s = 0.0
        for p in range(1, L + 1):
            s += (before + 1.0 + (p - 1) * beta) / (start + p)
        return s * a / L
    alpha = before + 1.0
    dh = harmonic(start + L) - harmonic(start)
    return (a / L) * ((alpha - beta * (start + 1.0)) * dh + beta * L)


@numba.njit(cache=True)
def tie_aware_from_sorted(scores, rel):  # pragma: no cover - compiled
    """Tie-aware AP and Precision@R of items already sorted by score, descending.

    Returns (ap, precision_at_r); ap is NaN when there is no relevant item.
    """
    N = scores.size
    m = 0
    for i in range(N):
        if rel[i]:
            m += 1
    if m == 0:
        return np.nan, np.nan
    i = 0
    before = 0
    total = 0.0
    hits = 0.0
    while i < N:
        j = i
        a = 0
        while j < N and scores[j] == scores[i]:
            if rel[j]:
                a += 1
            j += 1
        L = j - i
        if a > 0:
            total += block_sum(a, L, i, before)
            inside = min(L, max(0, m - i))
            hits += a * inside / L
        before += a
        i = j
    return total / m, hits / m


@numba.njit(cache=True)
def count_sorted(row, v):  # pragma: no cover - compiled
    """(#row > v, #row == v) in an ascending row, by binary search."""
    right = np.searchsorted(row, v, side="right")
    left = np.searchsorted(row, v, side="left")
    return row.size - right, right - left


@numba.njit(cache=True)
def _equal_below(row, pos, v):  # pragma: no cover - compiled
    """How many entries equal v end at index pos of an ascending row (ties are rare: a short scan)."""
    e = 0
    while pos >= 0 and row[pos] == v:
        e += 1
        pos -= 1
    return e


@numba.njit(cache=True)
def _query(vals, same, base_gt, base_eq, order, m, R):  # pragma: no cover - compiled
    """Tie-aware AP and Precision@R of one query from its m positive similarities ``vals``.

    base_gt/base_eq[i]: pool members of the query's stratum (query excluded) with similarity > and
    == vals[i]; the positives that lie in that pool (``same``) are taken back out, so what is left
    are the negatives. A block of a tied positives with value v starts after (#negatives > v) +
    (#positives > v) items and holds the a positives and the #negatives == v (see ``block_sum``).
    """
    for i in range(m):  # insertion sort by value, descending (m is small); no allocation
        order[i] = i
        j = i
        while j > 0 and vals[order[j - 1]] < vals[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
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
        for y in range(m):
            if same[y] != 0:
                if vals[y] > v:
                    gt -= 1
                elif vals[y] == v:
                    eq -= 1
        start = gt + before
        L = a + eq
        total += block_sum(a, L, start, before)
        hits += a * min(L, max(0, R - start)) / L
        before += a
        i += a
    return total / m, hits / m


@numba.njit(cache=True)
def evaluate(D, want, ap_out, pr_out, fwork, iwork, controls, pool, kind):  # pragma: no cover - compiled
    """Mean AP of assignment D (k pool indices); per-query AP and P@R into ap_out/pr_out if ``want``.

    Query u (stratum s) ranks the other members of D (positives, any stratum) and the members of
    pool_s outside D (negatives). Counts over pool_s: for a control query and a control positive of
    the same stratum, an O(1) lookup in the ranks of u's sorted row; for a replicate query, the
    ranks computed once per perturbation (gtR, eqR); across strata, a binary search in u's sorted
    row. The k_s replicates of t in pool_s are compared one by one.

    ``controls`` is a :class:`ControlRows`, ``pool`` a :class:`Pool`; ``fwork`` (1, k) and ``iwork``
    (4, k) are workspaces. Returns the mean AP over the k queries.
    """
    Xc, sorted_buf, soff, greater_buf, goff = (controls.X, controls.sorted_sims, controls.sorted_offset,
                                               controls.greater, controls.greater_offset)
    g_str, g_rep, g_row, g_ctl = pool.stratum, pool.replicate, pool.row, pool.control
    s_n, s_stratum, s_rep_lo, s_rep_hi = pool.n, pool.component_stratum, pool.rep_lo, pool.rep_hi
    simRP, sortedRC, gtR, eqR = pool.sim, pool.sorted_rc, pool.gt, pool.eq
    k = D.size
    m = k - 1
    vals = fwork[0]
    same = iwork[0]
    base_gt = iwork[1]
    base_eq = iwork[2]
    order = iwork[3]
    total = 0.0
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
                    gt = gtR[ru, y]
                    eq = eqR[ru, y]
                else:
                    gt, eq = count_sorted(sortedRC[ru, :n], v)
            elif g_rep[y] >= 0:
                v = simRP[g_rep[y], u]
                gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
            elif insame:
                gt = greater_buf[goff[j] + cu * n + g_ctl[y]]
                pos = rs + n - 2 - gt
                v = sorted_buf[pos]
                eq = _equal_below(sorted_buf[rs:rs + n - 1], n - 2 - gt, v)
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
            base_gt[cnt] = gt
            base_eq[cnt] = eq
            cnt += 1
        ap, pr = _query(vals, same, base_gt, base_eq, order, m, m)
        total += ap
        if want:
            ap_out[qi] = ap
            pr_out[qi] = pr
    return total / k
@numba.njit(cache=True)
def pool_layout(reps, controls, kind):  # pragma: no cover - compiled
    """The :class:`Pool` of perturbation t: layout, replicate-to-pool similarities, sorted
    replicate-to-control rows and their ranks (``reps`` a ``Replicates``, ``controls`` a ``ControlRows``)."""
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
    simRP = np.empty((k, P))
    for r in range(k):
        for g in range(P):
            if g_rep[g] >= 0:
                simRP[r, g] = sim(Xr, r, Xr, g_rep[g], kind)
            else:
                simRP[r, g] = sim(Xr, r, Xc, g_row[g], kind)
    nmax = 0
    for s in range(J):
        nmax = max(nmax, s_n[s])
    sortedRC = np.empty((k, nmax))
    for r in range(k):
        s = rep_str[r]
        lo = poff[s] + s_hi[s] - s_lo[s]
        sortedRC[r, :s_n[s]] = np.sort(simRP[r, lo:lo + s_n[s]])
    gtR = np.zeros((k, P), dtype=np.int64)
    eqR = np.zeros((k, P), dtype=np.int64)
    for r in range(k):
        s = rep_str[r]
        for g in range(poff[s], poff[s] + (s_hi[s] - s_lo[s]) + s_n[s]):
            gtR[r, g], eqR[r, g] = count_sorted(sortedRC[r, :s_n[s]], simRP[r, g])
    D0 = np.empty(k, dtype=np.int64)
    for r in range(k):
        s = rep_str[r]
        D0[r] = poff[s] + r - s_lo[s]
    return Pool(g_str, g_rep, g_row, g_ctl, s_n, t_strata, s_lo, s_hi, poff, simRP, sortedRC, gtR, eqR, D0)


@numba.njit(cache=True)
def _draw_distinct(key, counter, size, offset, out, first, count):  # pragma: no cover - compiled
    """Draw ``count`` distinct values of offset + [0, size) into out[first:first + count] by rejection.

    Uniforms are taken in order from the stream ``key`` starting at index ``counter``; returns the next
    unused index. (count is small against size here: a few replicates among a pool of controls.)
    """
    pos = first
    while pos < first + count:
        idx = np.int64(uniform(key, counter) * size)
        counter += np.uint64(1)
        if idx >= size:
            idx = size - 1
        g = offset + idx
        fresh = True
        for t in range(first, pos):
            if out[t] == g:
                fresh = False
                break
        if fresh:
            out[pos] = g
            pos += 1
    return counter


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
    pool = pool_layout(reps, controls, kind)
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
    J = reps.strata.size
    counters = np.zeros(J, dtype=np.uint64)
    D = np.empty(k, dtype=np.int64)
    for b in range(B):
        pos = 0
        for s in range(J):
            ks = pool.rep_hi[s] - pool.rep_lo[s]
            size = ks + pool.n[s]
            counters[s] = _draw_distinct(keys[s], counters[s], size, pool.offset[s], D, pos, ks)
            pos += ks
        null[b] = evaluate(D, False, ap, pr, fwork, iwork, controls, pool, kind)
    return ap, pr, map_obs, null
