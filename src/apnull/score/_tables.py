"""Compiled kernels (numba) building the tables the permutation kernels read.

Per stratum of controls: each control's similarities to the others, sorted, and the 8-byte record of
each unordered control pair (its similarity and the rank of each control in the other's row), in one
pass (``sorted_control_rows``). Per perturbation: its replicates' similarities to the pool
(``replicate_sims``) and their ranks of the pool (``replicate_ranks``: one stable sort per replicate instead of a binary search
per member). Similarities come in blocks of four rows (:mod:`._sims`), with the bits of ``sim``; rows
are sorted by :func:`._radix.stable_argsort`.
"""

from __future__ import annotations

import numba
import numpy as np

from ._kernels import count_sorted, pair_index, sim
from ._radix import sort_work, stable_argsort
from ._sims import sim_rows


@numba.njit(cache=True)
def sorted_control_rows(Xc, XT, kind, rows, pairs):  # pragma: no cover - compiled
    """Sorted similarity rows of the controls and the 8-byte record of every unordered control pair.

    Fills rows[a] (n - 1 entries) with the similarities of control a to the other n - 1 controls,
    ascending, and ``pairs`` (int64, n (n - 1) / 2 entries, every one written) with the records:
    pair a < b is record ``i = pair_index(a, b, n)``; as float32 (entry 2 i of its
    float32 view) sim(a, b) rounded to nearest; as int16 (entries 4 i + 2 and 4 i + 3 of its int16
    view) b's rank in a's row and a's rank in b's row, each stored as -1 - rank when the similarity
    ties another entry of that row. The rank of b in a's row is how many of a's similarities exceed
    sim(a, b), so that sim(a, b) = rows[a, n - 2 - rank]; the float32 value is that of the last entry
    of its tied block. ``XT`` is ``Xc`` transposed (contiguous).

    sim(a, b) and sim(b, a) have the same bits (products commute, and a difference only changes sign),
    so each is computed once: rows a0 .. a0 + 3 (four at a time) against the controls from a0 on; the
    values for each later row b are parked in rows[b] at the slots a0 .. a0 + 3 (the similarities to
    controls a < b sit at slot a), which row b reads back when its turn comes, before it is sorted
    into place. Each record is completed from both rows.
    """
    n = Xc.shape[0]
    m = max(n - 1, 0)
    S = np.empty((4, n))
    vals = np.empty(m)
    order = np.empty(m, dtype=np.int64)
    work = sort_work(m)
    sims = pairs.view(np.float32)
    ranks = pairs.view(np.int16)
    for a0 in range(0, n, 4):
        a1 = min(a0 + 4, n)
        w = a1 - a0
        sim_rows(Xc, a0, a1, Xc, XT, a0, n, kind, S, 0, 0)  # S[i, c - a0] = sim(a0 + i, c), c >= a0
        if w == 4:
            for b in range(a1, n):  # parked for row b: its similarities to a0 .. a0 + 3
                rb = rows[b]
                c = b - a0
                rb[a0] = S[0, c]
                rb[a0 + 1] = S[1, c]
                rb[a0 + 2] = S[2, c]
                rb[a0 + 3] = S[3, c]
        else:
            for b in range(a1, n):
                for i in range(w):
                    rows[b, a0 + i] = S[i, b - a0]
        for a in range(a0, a1):
            ra = rows[a]
            for b in range(a0):  # parked by the blocks before
                vals[b] = ra[b]
            for b in range(a0, a):  # rows of this block before a: sim(b, a)
                vals[b] = S[b - a0, a - a0]
            srow = S[a - a0]
            for b in range(a + 1, n):
                vals[b - 1] = srow[b - a0]
            stable_argsort(vals, order, work)  # = argsort(kind="mergesort")
            row = rows[a]
            for t in range(m):
                row[t] = vals[order[t]]
            hi = m
            while hi > 0:  # tied blocks, from the largest values down: rank = entries above the block
                lo = hi - 1
                while lo > 0 and row[lo - 1] == row[hi - 1]:
                    lo -= 1
                rank = m - hi
                if hi - lo > 1:
                    rank = -1 - rank
                v32 = np.float32(row[hi - 1])
                for t in range(lo, hi):
                    col = order[t]
                    if col >= a:  # b = col + 1 > a: the record's first rank and its similarity
                        i = pair_index(a, col + 1, n)
                        sims[2 * i] = v32
                        ranks[4 * i + 2] = rank
                    else:  # b = col < a
                        ranks[4 * pair_index(col, a, n) + 3] = rank
                hi = lo


@numba.njit(cache=True)
def replicate_sims(Xr, Xc, XT, g_rep, g_row, kind):  # pragma: no cover - compiled
    """(k, P) similarity of replicate r to pool member g: ``sim(Xr, r, ., .)`` of its row.

    Each run of consecutive control rows of the pool goes to :func:`._sims.sim_rows` (four replicates
    against ``XT``, the control rows transposed); replicates against replicates by ``sim``. The values
    are bit for bit those of ``sim``.
    """
    k = Xr.shape[0]
    P = g_rep.size
    out = np.empty((k, P))
    g = 0
    while g < P:
        if g_rep[g] >= 0:
            for r in range(k):
                out[r, g] = sim(Xr, r, Xr, g_rep[g], kind)
            g += 1
            continue
        e = g + 1
        while e < P and g_rep[e] < 0 and g_row[e] == g_row[e - 1] + 1:
            e += 1
        sim_rows(Xr, 0, k, Xc, XT, g_row[g], g_row[g] + e - g, kind, out, 0, g)
        g = e
    return out


@numba.njit(cache=True)
def rank_members(vals, sorted_out, gt_out, eq_out, order, work):  # pragma: no cover - compiled
    """Sort ``vals`` ascending into ``sorted_out``; gt_out[i] / eq_out[i] = #vals > / == vals[i].

    The counts are those of ``count_sorted(sorted_out, vals[i])``, from one stable sort
    (``stable_argsort``; ``order`` and ``work`` its buffers) and a walk over its tied blocks (values
    are finite).
    """
    n = vals.size
    stable_argsort(vals, order, work)
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

    One stable sort of each row's controls (``rank_members``, reading and writing the rows' own
    contiguous slices), and a binary search for each replicate of the stratum."""
    k = simRP.shape[0]
    nmax = sortedRC.shape[1]
    order = np.empty(nmax, dtype=np.int64)
    work = sort_work(nmax)
    for r in range(k):
        s = rep_str[r]
        n = s_n[s]
        lo = poff[s] + s_hi[s] - s_lo[s]
        srt = sortedRC[r, :n]
        rank_members(simRP[r, lo:lo + n], srt, gtR[r, lo:lo + n], eqR[r, lo:lo + n], order[:n], work)
        for g in range(poff[s], lo):
            gtR[r, g], eqR[r, g] = count_sorted(srt, simRP[r, g])


def pair_rows(Xc, kind) -> tuple:
    """(rows, pairs) of :func:`sorted_control_rows` for the controls ``Xc``, in new arrays.

    Pair (a, b) is record ``pairs[pair_index(a, b, n)]``. One record serves both directions of a pair,
    so a draw of k controls reads k (k - 1) / 2 records; ranks fit int16 below 32,768 controls a
    stratum (``limits.SCORE_MAX_STRATUM_CONTROLS`` is 10,000).
    """
    Xc = np.ascontiguousarray(Xc, dtype=np.float64)
    n = Xc.shape[0]
    rows = np.empty((n, max(n - 1, 0)))
    pairs = np.empty(n * max(n - 1, 0) // 2, dtype=np.int64)
    sorted_control_rows(Xc, np.ascontiguousarray(Xc.T), kind, rows, pairs)
    return rows, pairs
