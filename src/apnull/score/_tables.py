"""Compiled kernels (numba) building the tables the permutation kernels read.

Per stratum of controls: the 8-byte record of each unordered control pair (``pair_rows``), from the
sorted similarity rows and ranks of ``_kernels.sorted_control_rows``. Per perturbation: its replicates'
similarities to the pool (``replicate_sims``: each control's row read once for four replicates, every
sum in the order of ``sim``, so the bits of ``sim``) and their ranks of the pool (``replicate_ranks``:
one stable radix sort per replicate instead of a binary search per member).
"""

from __future__ import annotations

import numba
import numpy as np

from ._kernels import count_sorted, sim
from ._radix import radix_argsort, radix_work


@numba.njit(cache=True)
def replicate_sims(Xr, Xc, g_rep, g_row, kind):  # pragma: no cover - compiled
    """(k, P) similarity of replicate r to pool member g: ``sim(Xr, r, ., .)`` of its row.

    Four replicates (and for dot products two controls) share each pass over the rows, so that several
    independent sums proceed together; every sum runs over the features in order,
    as in :func:`._kernels.sim`, so the values are bit for bit those of ``sim``.
    """
    k, d = Xr.shape
    P = g_rep.size
    out = np.empty((k, P))
    done = np.zeros(P, dtype=np.bool_)
    if kind != 1:  # dot products: two controls by four replicates, eight independent sums
        g = 0
        while g + 1 < P:
            if g_rep[g] >= 0 or g_rep[g + 1] >= 0:
                g += 1
                continue
            ra = g_row[g]
            rb = g_row[g + 1]
            r = 0
            while r + 4 <= k:
                a0 = 0.0
                a1 = 0.0
                a2 = 0.0
                a3 = 0.0
                b0 = 0.0
                b1 = 0.0
                b2 = 0.0
                b3 = 0.0
                for t in range(d):
                    x = Xc[ra, t]
                    y = Xc[rb, t]
                    q0 = Xr[r, t]
                    q1 = Xr[r + 1, t]
                    q2 = Xr[r + 2, t]
                    q3 = Xr[r + 3, t]
                    a0 += q0 * x
                    a1 += q1 * x
                    a2 += q2 * x
                    a3 += q3 * x
                    b0 += q0 * y
                    b1 += q1 * y
                    b2 += q2 * y
                    b3 += q3 * y
                if kind == 2:  # absolute dot product, as in ``sim``
                    a0, a1, a2, a3 = abs(a0), abs(a1), abs(a2), abs(a3)
                    b0, b1, b2, b3 = abs(b0), abs(b1), abs(b2), abs(b3)
                out[r, g] = a0
                out[r + 1, g] = a1
                out[r + 2, g] = a2
                out[r + 3, g] = a3
                out[r, g + 1] = b0
                out[r + 1, g + 1] = b1
                out[r + 2, g + 1] = b2
                out[r + 3, g + 1] = b3
                r += 4
            while r < k:
                out[r, g] = sim(Xr, r, Xc, ra, kind)
                out[r, g + 1] = sim(Xr, r, Xc, rb, kind)
                r += 1
            done[g] = True
            done[g + 1] = True
            g += 2
    for g in range(P):
        if done[g]:
            continue
        if g_rep[g] >= 0:
            for r in range(k):
                out[r, g] = sim(Xr, r, Xr, g_rep[g], kind)
            continue
        row = g_row[g]
        r = 0
        while r + 4 <= k:
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            if kind != 1:
                for t in range(d):
                    x = Xc[row, t]
                    s0 += Xr[r, t] * x
                    s1 += Xr[r + 1, t] * x
                    s2 += Xr[r + 2, t] * x
                    s3 += Xr[r + 3, t] * x
                if kind == 2:
                    s0, s1, s2, s3 = abs(s0), abs(s1), abs(s2), abs(s3)
                out[r, g] = s0
                out[r + 1, g] = s1
                out[r + 2, g] = s2
                out[r + 3, g] = s3
            else:
                for t in range(d):
                    x = Xc[row, t]
                    e0 = Xr[r, t] - x
                    e1 = Xr[r + 1, t] - x
                    e2 = Xr[r + 2, t] - x
                    e3 = Xr[r + 3, t] - x
                    s0 += e0 * e0
                    s1 += e1 * e1
                    s2 += e2 * e2
                    s3 += e3 * e3
                out[r, g] = -s0
                out[r + 1, g] = -s1
                out[r + 2, g] = -s2
                out[r + 3, g] = -s3
            r += 4
        while r < k:
            out[r, g] = sim(Xr, r, Xc, row, kind)
            r += 1
    return out


@numba.njit(cache=True)
def rank_members(vals, sorted_out, gt_out, eq_out, order, work):  # pragma: no cover - compiled
    """Sort ``vals`` ascending into ``sorted_out``; gt_out[i] / eq_out[i] = #vals > / == vals[i].

    The counts are those of ``count_sorted(sorted_out, vals[i])``, from one stable sort
    (``radix_argsort``; ``order`` and ``work`` its buffers) and a walk over its tied blocks (values
    are finite).
    """
    n = vals.size
    radix_argsort(vals, order, work)
    for t in range(n):
        sorted_out[t] = vals[order[t]]
    hi = n
    while hi > 0:
        lo = hi - 1
        while lo > 0 and sorted_out[lo - 1] == sorted_out[hi - 1]:
            lo -= 1
        for t in range(lo, hi):
            gt_out[order[t]] = n - hi
            eq_out[order[t]] = hi - lo
        hi = lo


@numba.njit(cache=True)
def replicate_ranks(simRP, rep_str, poff, s_lo, s_hi, s_n, sortedRC, gtR, eqR):  # pragma: no cover - compiled
    """Fill sortedRC[r, :n_s] (r's similarities to its stratum's controls, ascending) and gtR / eqR[r, g]
    (members g of r's stratum pool more similar to r / as similar: ``count_sorted`` of that row).

    Works on contiguous copies of each row (one stable sort, ``rank_members``; a binary search for
    each replicate of the stratum)."""
    k = simRP.shape[0]
    nmax = sortedRC.shape[1]
    vals = np.empty(nmax)
    srt = np.empty(nmax)
    gt = np.empty(nmax, dtype=np.int64)
    eq = np.empty(nmax, dtype=np.int64)
    order = np.empty(nmax, dtype=np.int64)
    work = radix_work(nmax)
    for r in range(k):
        s = rep_str[r]
        n = s_n[s]
        lo = poff[s] + s_hi[s] - s_lo[s]
        for c in range(n):
            vals[c] = simRP[r, lo + c]
        rank_members(vals[:n], srt[:n], gt[:n], eq[:n], order[:n], work)
        for c in range(n):
            sortedRC[r, c] = srt[c]
            gtR[r, lo + c] = gt[c]
            eqR[r, lo + c] = eq[c]
        for g in range(poff[s], lo):
            gtR[r, g], eqR[r, g] = count_sorted(srt[:n], simRP[r, g])


@numba.njit(cache=True)
def pair_rows(rows, greater):  # pragma: no cover - compiled
    """The 8-byte records of a stratum's n controls, one per unordered pair a < b, from
    ``sorted_control_rows``'s (rows, greater): an int64 array of n (n - 1) / 2 entries.

    Pair (a, b) is record ``i = pair_index(a, b, n)``: as float32 (entry 2 i of its float32 view),
    sim(a, b) rounded to nearest; as int16 (entries 4 i + 2 and 4 i + 3 of its int16 view), b's rank
    in a's row (greater[a, b]) and a's rank in b's row (greater[b, a]), each stored as -1 - rank when
    the similarity ties another entry of that row. One record serves both directions of a pair, so a
    draw of k controls reads k (k - 1) / 2 records; ranks fit int16 below 32,768 controls a stratum
    (``limits.SCORE_MAX_STRATUM_CONTROLS`` is 10,000). The exact similarity is in the sorted row at
    the rank: rows[a, n - 2 - greater[a, b]].
    """
    n = greater.shape[0]
    out = np.zeros(n * (n - 1) // 2, dtype=np.int64)
    sims = out.view(np.float32)
    ranks = out.view(np.int16)
    for a in range(n):  # reads row by row; the record of (b, a), b < a, is completed from row a
        for b in range(n):
            if b == a:
                continue
            gab = greater[a, b]
            pa = n - 2 - gab
            v = rows[a, pa]
            rank = -1 - gab if pa > 0 and rows[a, pa - 1] == v else gab
            if a < b:
                i = pair_index(a, b, n)
                sims[2 * i] = np.float32(v)
                ranks[4 * i + 2] = rank
            else:
                ranks[4 * pair_index(b, a, n) + 3] = rank
    return out


@numba.njit(cache=True, inline="always")
def pair_index(a, b, n):  # pragma: no cover - compiled
    """Index of the unordered pair a < b among the n (n - 1) / 2 pairs of n items, row by row."""
    return a * (2 * n - a - 1) // 2 + (b - a - 1)
