"""Compiled kernels (numba) for scoring a screen: similarities, tie-aware AP, one assignment.

Everything here is deterministic scalar code (no BLAS, no threads, no fastmath), so the same inputs
give the same bits in any process: in-process and dask runs agree exactly.

Similarity ``kind``: 0 = dot product of prepared rows (cosine and correlation rows are centred and/or
normalised beforehand), 1 = minus the squared Euclidean distance, 2 = absolute dot product (absolute
cosine of normalised rows). All are exactly symmetric.

Pool layout of one perturbation t (see ``perturbation_scores``): for each stratum s of t, in order,
the k_s replicates of t there followed by the n_s controls there. An "assignment" D lists, for each
stratum in the same order, the k_s pool members that carry t's label.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .. import exact

_EULER = 0.5772156649015329
#: H_0 .. H_63 from the one harmonic, :func:`apnull.exact.harmonic` (correctly rounded), frozen into
#: the compiled code: what ``harmonic`` returns below 64.
HARMONIC_TABLE = np.array([exact.harmonic(n) for n in range(64)])


class ControlRows(NamedTuple):
    """The controls of one component of strata, as the kernels read them (built by
    ``_engine.prepare_component``). Stratum j of the component holds ``size[j]`` controls."""

    X: np.ndarray               #: (n_total, d) prepared control rows; stratum j at rows start[j] .. + size[j]
    start: np.ndarray           #: (J,) int64 first row of each stratum in ``X``
    size: np.ndarray            #: (J,) int64 number of controls of each stratum
    sorted_sims: np.ndarray     #: float64 buffer of sorted similarity rows (``_tables.sorted_control_rows``):
    # control c of stratum j has its n - 1 similarities to the others, ascending, at
    # sorted_offset[j] + c * (size[j] - 1)
    sorted_offset: np.ndarray   #: (J,) int64 start of stratum j in ``sorted_sims``
    pairs: np.ndarray           #: int64 buffer of 8-byte pair records (``_tables.sorted_control_rows``):
    # for controls a < b of stratum j, record i = pair_index(a, b, n) at pairs_offset[j] + i holds
    # sim(a, b) as float32, then as int16 b's rank in a's row and a's rank in b's row (how many of the
    # row's similarities exceed it; -1 - rank when it ties another entry of the row)
    pairs_offset: np.ndarray    #: (J,) int64 start of stratum j in ``pairs``
    XT: np.ndarray              #: (d, n_total) ``X`` transposed, contiguous (blocks of similarities)


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
    #: (one stratum: ``sorted_rc``, ``gt`` and ``eq`` have no columns; :func:`replicate_counts` counts when asked)
    observed: np.ndarray        #: (k,) the observed assignment: pool index of each replicate of t


@numba.njit(cache=True, inline="always")
def sim(X, i, Y, j, kind):  # pragma: no cover - compiled
    """Similarity of row i of X and row j of Y: dot product (kind 0), -squared distance (kind 1) or
    absolute dot product (kind 2)."""
    s = 0.0
    if kind != 1:
        for t in range(X.shape[1]):
            s += X[i, t] * Y[j, t]
        return abs(s) if kind == 2 else s
    for t in range(X.shape[1]):
        diff = X[i, t] - Y[j, t]
        s += diff * diff
    return -s


@numba.njit(cache=True, inline="always")
def pair_index(a, b, n):  # pragma: no cover - compiled
    """Index of the unordered pair a < b among the n (n - 1) / 2 pairs of n items, row by row."""
    return a * (2 * n - a - 1) // 2 + (b - a - 1)


@numba.njit(cache=True, inline="always")
def pair_rank(ranks, base, cu, cy, n):  # pragma: no cover - compiled
    """How many of control cu's similarities (its sorted row) exceed sim(cu, cy), from the pair's record
    (``ranks`` the int16 view of ``ControlRows.pairs``, ``base`` the stratum's ``pairs_offset``)."""
    if cu < cy:
        r = np.int64(ranks[4 * (base + pair_index(cu, cy, n)) + 2])
    else:
        r = np.int64(ranks[4 * (base + pair_index(cy, cu, n)) + 3])
    return -1 - r if r < 0 else r


@numba.njit(cache=True)
def harmonic(n):  # pragma: no cover - compiled
    """H_n = sum_{i<=n} 1/i for nopython code: :func:`apnull.exact.harmonic` below 64 (``HARMONIC_TABLE``),
    the asymptotic series ln n + gamma + 1/(2n) - 1/(12n^2) + 1/(120n^4) - 1/(252n^6) above (error < 1e-17).

    ``exact.harmonic`` is the one definition (any power; numba cannot call it and it must not import
    numba); this reads its values and is held to it within a few ulp (``tests/score/test_score_ties.py``).
    Only ``block_sum`` uses it.
    """
    if n < 64:
        return HARMONIC_TABLE[n]
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


@numba.njit(cache=True, inline="always")
def replicate_counts(pool, ru, su, y, v):  # pragma: no cover - compiled
    """(gt, eq) of replicate ru (stratum s = su) against member y of its stratum's pool, similarity v:
    the controls of s more similar to ru than v / as similar. ``pool.gt[ru, y]`` / ``pool.eq[ru, y]``
    where the pool kept its rank table, else counted over the n_s controls (one stratum: a replicate
    is a query in few draws, so counting there costs less than sorting every replicate's row)."""
    if pool.gt.shape[1] > 0:
        return pool.gt[ru, y], pool.eq[ru, y]
    lo = pool.offset[su] + pool.rep_hi[su] - pool.rep_lo[su]
    row = pool.sim[ru]
    gt = 0
    eq = 0
    for g in range(lo, lo + pool.n[su]):
        w = row[g]
        gt += w > v
        eq += w == v
    return gt, eq


@numba.njit(cache=True)
def _equal_below(row, pos, v):  # pragma: no cover - compiled
    """How many entries equal v end at index pos of an ascending row (ties are rare: a short scan)."""
    e = 0
    while pos >= 0 and row[pos] == v:
        e += 1
        pos -= 1
    return e


@numba.njit(cache=True)
def query_counts(vals, same, base_gt, base_eq, order, m, R):  # pragma: no cover - compiled
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
    ranks of its row (``replicate_counts``); across strata, a binary search in u's sorted
    row. The k_s replicates of t in pool_s are compared one by one.

    ``controls`` is a :class:`ControlRows`, ``pool`` a :class:`Pool`; ``fwork`` (1, k) and ``iwork``
    (4, k) are workspaces. Returns the mean AP over the k queries.
    """
    Xc, sorted_buf, soff = controls.X, controls.sorted_sims, controls.sorted_offset
    ranks, poff = controls.pairs.view(np.int16), controls.pairs_offset
    g_str, g_rep, g_row, g_ctl = pool.stratum, pool.replicate, pool.row, pool.control
    s_n, s_stratum, s_rep_lo, s_rep_hi = pool.n, pool.component_stratum, pool.rep_lo, pool.rep_hi
    simRP, sortedRC = pool.sim, pool.sorted_rc
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
                    gt, eq = replicate_counts(pool, ru, su, y, v)
                else:
                    gt, eq = count_sorted(sortedRC[ru, :n], v)
            elif g_rep[y] >= 0:
                v = simRP[g_rep[y], u]
                gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
            elif insame:
                gt = pair_rank(ranks, poff[j], cu, g_ctl[y], n)
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
        ap, pr = query_counts(vals, same, base_gt, base_eq, order, m, m)
        total += ap
        if want:
            ap_out[qi] = ap
            pr_out[qi] = pr
    return total / k
