"""Compiled kernels (numba) for the null of one perturbation: many draws at once.

The permutation null of a perturbation t draws, B times, k_s members of each stratum pool (layout in
:mod:`._kernels`) and takes the mean AP of the drawn set. Each draw gives the same bits as
:func:`._kernels.evaluate` (the same counts and values reach the same ``query_counts``); only the order of
the work changes:

- Draws come in chunks of ``CHUNK``, the streams read in the same order as one draw at a time. For a
  single-stratum pool the next chunk is drawn and the positions of its look-ups (one 8-byte record of
  ``ControlRows.pairs`` per pair of drawn controls: the similarity as float32 and each one's rank in the
  other's row as int16) are computed and prefetched before the current chunk is evaluated, so the
  memory system serves many reads at once while the processor computes. A control query's positives
  take their ranks from the records and add the replicates above them, compared in float32: rounding to
  nearest never reverses an order, so a strict float32 inequality is the float64 one; any float32
  equality, or a tie flagged in a record, takes the exact similarity from the query's sorted row (the
  counts of ``evaluate``). A draw of four controls is counted in registers (``_four``); a query none of
  whose positives ties anything is summed from its counts alone.
- Pools over several strata are evaluated one draw at a time by :func:`._kernels.evaluate`.

The tables read here are built in :mod:`._tables`.
"""

from __future__ import annotations

import numba
import numpy as np

from .._kernels import uniform
from ._kernels import count_sorted, evaluate, pair_index, query_counts, replicate_counts
from ._prefetch import prefetch

#: Draws evaluated together (the gathered look-ups of a chunk fit in the first-level cache).
CHUNK = 128


@numba.njit(cache=True)
def draw_distinct(key, counter, size, offset, out, first, count):  # pragma: no cover - compiled
    """Draw ``count`` distinct values of offset + [0, size) into out[first:first + count] by rejection.

    Uniforms are taken in order from the stream ``key`` starting at index ``counter``; returns the next
    unused index (the rule of the permutation null: the same draws as ``_permute``'s).
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
def draw_assignment(pool, keys, counters, D):  # pragma: no cover - compiled
    """One random assignment into D (k pool indices), continuing each stratum's stream at counters[s].

    The draws of ``_permute.perturbation_scores``, one at a time: stratum s takes k_s distinct members of
    pool_s from the SplitMix64 stream keys[s], starting at uniform index counters[s] (updated in place).
    """
    pos = 0
    for s in range(keys.size):
        ks = pool.rep_hi[s] - pool.rep_lo[s]
        counters[s] = draw_distinct(keys[s], counters[s], ks + pool.n[s], pool.offset[s], D, pos, ks)
        pos += ks


@numba.njit(cache=True)
def record_positions(D, nb, k, n, base, pairs, idx):  # pragma: no cover - compiled
    """For draws D[:nb] of a single-stratum pool (replicates 0..k-1, controls k..), the position in
    ``pairs`` of the record of each pair of drawn members qi < yi (``_tables.pair_rows``) into
    idx[b * k (k - 1) / 2 + pair_index(qi, yi, k)] (-1 for a pair with a replicate: no record),
    each record prefetched: the reads do not depend on each other, and they
    proceed while the previous chunk is computed."""
    q = 0
    for b in range(nb):
        for qi in range(k):
            u = D[b, qi] - k
            for yi in range(qi + 1, k):
                y = D[b, yi] - k
                at = -1
                if u >= 0 and y >= 0:
                    at = base + pair_index(min(u, y), max(u, y), n)
                    prefetch(pairs, at)
                idx[q] = at
                q += 1


@numba.njit(cache=True)
def single_stratum_means(D, nb, out, first, controls, pool, simPR, simPR32, idx, R, left,
                    vals, same, bgt, beq, order):  # pragma: no cover - compiled
    """out[first + b] = mAP of draw D[b] of a single-stratum pool: the counts of ``evaluate``
    (``idx``: the draws' record positions, from :func:`record_positions`).

    A control query whose positives are controls takes each positive's rank from the pair's record
    and adds the replicates above it, compared in float32 (``simPR32`` against the record's rounded
    similarity): rounding to nearest keeps order, so a strict float32 inequality is the float64 one.
    Any equality there, a tie flagged in the record, or a replicate among the query or its positives
    sends the query to :func:`_exact_query`, which counts from the exact similarities.
    """
    k = D.shape[1]
    m = k - 1
    npairs = k * m // 2
    n = pool.n[0]
    j = pool.component_stratum[0]
    sorted_buf = controls.sorted_sims
    rbase = controls.sorted_offset[j]
    pairs = controls.pairs
    for i in range(nb * npairs):
        at = idx[i]
        R[i] = pairs[at] if at >= 0 else 0
    Rf = R.view(np.float32)
    Ri = R.view(np.int16)
    done = 0
    if k == 4:  # four controls decided in float32 first, in a tight loop; the rest after
        for b in range(nb):
            if not _four(D, b, Rf, Ri, b * 6, simPR32, out, first):
                left[done] = b
                done += 1
    else:
        for b in range(nb):
            left[b] = b
        done = nb
    for t in range(done):
        b = left[t]
        total = 0.0
        rb = b * npairs
        for qi in range(k):
            u = D[b, qi]
            ok = u >= k
            cnt = 0
            if ok:
                for yi in range(k):
                    if yi == qi:
                        continue
                    y = D[b, yi]
                    if y < k:
                        ok = False
                        break
                    slot = rb + pair_index(min(qi, yi), max(qi, yi), k)
                    rank = Ri[4 * slot + 2] if u < y else Ri[4 * slot + 3]
                    v32 = Rf[2 * slot]
                    gt = np.int64(rank)
                    amb = rank < 0
                    for r2 in range(k):  # branch-free: these comparisons are unpredictable
                        w = simPR32[u, r2]
                        gt += w > v32
                        amb |= w == v32
                    if amb:
                        ok = False
                        break
                    bgt[cnt] = gt
                    cnt += 1
            if ok:
                total += _untied_ap(bgt, m)
            else:
                total += _exact_query(D, b, qi, R, rb, n, sorted_buf, rbase, simPR, pool,
                                      vals, same, bgt, beq, order)
        out[first + b] = total / k


@numba.njit(cache=True, inline="always")
def _ranked(u, y, slot, Rf, Ri, simPR32):  # pragma: no cover - compiled
    """Pool members above control y in control u's ranking (4 replicates), or -1 where it takes the
    exact similarities (a tie in the record, or a float32 equality)."""
    rank = np.int64(Ri[4 * slot + 2] if u < y else Ri[4 * slot + 3])
    v = Rf[2 * slot]
    w0 = simPR32[u, 0]
    w1 = simPR32[u, 1]
    w2 = simPR32[u, 2]
    w3 = simPR32[u, 3]
    amb = (rank < 0) | (w0 == v) | (w1 == v) | (w2 == v) | (w3 == v)
    g = rank + np.int64(w0 > v) + np.int64(w1 > v) + np.int64(w2 > v) + np.int64(w3 > v)
    return -1 if amb else g


@numba.njit(cache=True, inline="always")
def _ap3(u, ya, sa, yb, sb, yc, sc, Rf, Ri, simPR32):  # pragma: no cover - compiled
    """AP of control query u with control positives ya, yb, yc (records at slots sa, sb, sc), the
    additions and divisions of ``_untied_ap``; -1.0 where it takes the exact similarities."""
    a = _ranked(u, ya, sa, Rf, Ri, simPR32)
    b = _ranked(u, yb, sb, Rf, Ri, simPR32)
    c = _ranked(u, yc, sc, Rf, Ri, simPR32)
    if a < 0 or b < 0 or c < 0:
        return -1.0
    lo = min(a, b)
    hi = max(a, b)
    mid = max(lo, c)
    total = 0.0
    total += 1.0 / (min(lo, c) + 1.0)
    total += 2.0 / (min(mid, hi) + 1.0)
    total += 3.0 / (max(mid, hi) + 1.0)
    return total / 3


@numba.njit(cache=True, inline="always")
def _four(D, b, Rf, Ri, rb, simPR32, out, first):  # pragma: no cover - compiled
    """out[first + b] = mAP of draw b of four controls when every count is decided in float32 (the
    value of the general path, bit for bit); False, nothing written, otherwise."""
    d0 = D[b, 0]
    d1 = D[b, 1]
    d2 = D[b, 2]
    d3 = D[b, 3]
    if min(min(d0, d1), min(d2, d3)) < 4:
        return False
    a0 = _ap3(d0, d1, rb, d2, rb + 1, d3, rb + 2, Rf, Ri, simPR32)
    a1 = _ap3(d1, d0, rb, d2, rb + 3, d3, rb + 4, Rf, Ri, simPR32)
    a2 = _ap3(d2, d0, rb + 1, d1, rb + 3, d3, rb + 5, Rf, Ri, simPR32)
    a3 = _ap3(d3, d0, rb + 2, d1, rb + 4, d2, rb + 5, Rf, Ri, simPR32)
    if a0 < 0.0 or a1 < 0.0 or a2 < 0.0 or a3 < 0.0:
        return False
    total = 0.0
    total += a0
    total += a1
    total += a2
    total += a3
    out[first + b] = total / 4
    return True


@numba.njit(cache=True)
def _exact_query(D, b, qi, R, rb, n, sorted_buf, rbase, simPR, pool,
                 vals, same, bgt, beq, order):  # pragma: no cover - compiled
    """AP of query D[b, qi] of a single-stratum pool from exact similarities: the counts of
    ``evaluate`` (two controls: the rank from the pair's record, the similarity and its ties from
    the query's sorted row)."""
    k = D.shape[1]
    m = k - 1
    Ri = R.view(np.int16)
    simRP = pool.sim
    u = D[b, qi]
    rs = rbase + (u - k) * (n - 1)
    cnt = 0
    plain = True
    for yi in range(k):
        if yi == qi:
            continue
        y = D[b, yi]
        if u < k:  # a replicate query: the controls above it in its row
            v = simRP[u, y]
            gt, eq = replicate_counts(pool, u, 0, y, v)
        elif y < k:  # a control query, a replicate positive: search u's sorted row
            v = simRP[y, u]
            gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
        else:
            slot = rb + pair_index(min(qi, yi), max(qi, yi), k)
            gt = np.int64(Ri[4 * slot + 2] if u < y else Ri[4 * slot + 3])
            if gt < 0:  # v ties other controls in u's row
                gt = -1 - gt
            pos = n - 2 - gt
            v = sorted_buf[rs + pos]
            eq = 1
            pos -= 1
            while pos >= 0 and sorted_buf[rs + pos] == v:
                eq += 1
                pos -= 1
        for r2 in range(k):
            w = simPR[u, r2]
            other = r2 != u
            gt += other & (w > v)
            eq += other & (w == v)
        if eq != 1:
            plain = False
        vals[cnt] = v
        same[cnt] = 1
        bgt[cnt] = gt
        beq[cnt] = eq
        cnt += 1
    if plain:
        return _untied_ap(bgt, m)
    ap, _ = query_counts(vals, same, bgt, beq, order, m, m)
    return ap


@numba.njit(cache=True, inline="always")
def _untied_ap(gt, m):  # pragma: no cover - compiled
    """AP of a query whose m positives (all in its stratum) tie with no pool member: the positive with
    the i-th smallest count gt of members above it (i = 0, 1, ...) has precision (i + 1) / (gt + 1).

    The additions run in the order of ``query_counts`` (most similar first), with the values it
    computes there: each block has one positive, start = gt and before = i, so the bits are the same.
    """
    if m == 3:  # a sorting network of min/max: no unpredictable branch
        a = gt[0]
        b = gt[1]
        c = gt[2]
        lo = min(a, b)
        hi = max(a, b)
        mid = max(lo, c)
        gt[0] = min(lo, c)
        gt[1] = min(mid, hi)
        gt[2] = max(mid, hi)
    else:
        for i in range(1, m):  # insertion sort, ascending (m is small); counts are distinct
            x = gt[i]
            j = i
            while j > 0 and gt[j - 1] > x:
                gt[j] = gt[j - 1]
                j -= 1
            gt[j] = x
    total = 0.0
    for i in range(m):
        total += (i + 1.0) / (gt[i] + 1.0)
    return total / m


@numba.njit(cache=True)
def member_sims(pool):  # pragma: no cover - compiled
    """(simPR, simPR32): ``pool.sim`` transposed, (P, k) member by replicate, as float64 and rounded to
    float32 (what :func:`single_stratum_means` reads)."""
    k, P = pool.sim.shape
    simPR = np.empty((P, k))
    simPR32 = np.empty((P, k), dtype=np.float32)
    for r in range(k):
        for g in range(P):
            simPR[g, r] = pool.sim[r, g]
            simPR32[g, r] = np.float32(pool.sim[r, g])
    return simPR, simPR32


@numba.njit(cache=True, nogil=True)
def null_means(pool, controls, kind, keys, counters, out):  # pragma: no cover - compiled
    """out[b] = mAP of the b-th random assignment of ``pool`` (a :class:`._kernels.Pool`).

    Stratum s draws its k_s members from the SplitMix64 stream keys[s], uniforms taken in order from
    index counters[s]; ``counters`` is advanced past the uniforms used, so a later call continues the
    same streams (B draws in one call = the same draws in several calls). The values are bit for bit
    those of :func:`._kernels.evaluate` on each draw.
    """
    k = pool.sim.shape[0]
    B = out.size
    J = pool.n.size
    C = CHUNK
    D = np.empty((2, C, k), dtype=np.int64)  # two chunks: one drawn and prefetched while the other is computed
    m = max(k - 1, 1)
    npairs = C * k * m // 2
    idx = np.empty((2, npairs), dtype=np.int64)
    left = np.empty(C, dtype=np.int64)
    R = np.empty(npairs, dtype=np.int64)
    simPR, simPR32 = member_sims(pool)
    ap = np.empty(k)
    pr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((4, k), dtype=np.int64)
    single = J == 1 and k >= 2
    n0 = pool.n[0]
    base = controls.pairs_offset[pool.component_stratum[0]]
    cur = 0
    for b0 in range(0, B, C):
        if b0 == 0:  # the first chunk; each later one was drawn with the chunk before it
            _draw_chunk(pool, keys, counters, D[0], min(C, B))
            if single:
                record_positions(D[0], min(C, B), k, n0, base, controls.pairs, idx[0])
        nb = min(C, B - b0)
        if b0 + C < B:  # the next chunk's draws (the streams in the same order) and its records
            _draw_chunk(pool, keys, counters, D[1 - cur], min(C, B - b0 - C))
            if single:
                record_positions(D[1 - cur], min(C, B - b0 - C), k, n0, base, controls.pairs, idx[1 - cur])
        if single:
            single_stratum_means(D[cur], nb, out, b0, controls, pool, simPR, simPR32, idx[cur], R, left,
                            fwork[0], iwork[0], iwork[1], iwork[2], iwork[3])
        else:
            for b in range(nb):
                out[b0 + b] = evaluate(D[cur, b], False, ap, pr, fwork, iwork, controls, pool, kind)
        cur = 1 - cur


@numba.njit(cache=True)
def _draw_chunk(pool, keys, counters, D, nb):  # pragma: no cover - compiled
    """The next nb assignments into D[:nb]: stratum s takes its k_s members from stream keys[s] at
    counters[s] (advanced)."""
    for b in range(nb):
        pos = 0
        for s in range(keys.size):
            ks = pool.rep_hi[s] - pool.rep_lo[s]
            counters[s] = draw_distinct(keys[s], counters[s], ks + pool.n[s], pool.offset[s], D[b], pos, ks)
            pos += ks
