"""Compiled kernels (numba): the mAP null of a single-stratum pool without pair rule, in chunks.

The common case of a screen (a perturbation's replicates on one plate): :func:`continue_single`
continues the pool's stream (the draws of :func:`.pool.draw_assignment`) a chunk of draws at a time.
While one chunk is evaluated, the next is already drawn and the positions of its look-ups (one 8-byte
record of ``ControlRows.pairs`` per pair of drawn controls: the similarity as float32 and each one's
rank in the other's row as int16) computed and prefetched (:func:`record_positions`), so the memory
system serves many reads at once while the processor computes. :func:`single_stratum_means`
evaluates a chunk: a control query's positives take their ranks from the records and add the
replicates above them, compared in float32 (rounding to nearest never reverses an order, so a strict
float32 inequality is the float64 one); any float32 equality, or a tie flagged in a record, takes the
exact similarity from the query's sorted row (the counts of :func:`.pool.evaluate`). A draw of four
controls is counted in registers (``_four``). Every value is bit for bit ``evaluate``'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import inner
from .controls import pair_index
from .pool import draw_assignment, replicate_counts
from .ranking import count_sorted, walk_counts
from .similarity import prefetch
from .sort import insertion_sort

__all__ = ["CHUNK", "FIRST_CHUNK", "ChunkWork", "chunk_work", "record_positions", "single_stratum_means",
           "continue_single", "count_draw", "record_draw"]

#: Draws evaluated together (the gathered look-ups of a chunk fit in the first-level cache).
CHUNK = 128
#: Draws of the first chunk of a call that may stop early (then doubling up to ``CHUNK``).
FIRST_CHUNK = 16


@numba.njit(cache=True, inline="always")
def count_draw(v, observed, tol, reached, early, h):  # pragma: no cover - compiled
    """(reached, stop): one more draw of value v counted; stop at the h-th exceedance if ``early``."""
    if v >= observed - tol:
        reached += 1
        return reached, early and reached >= h
    return reached, False


@numba.njit(cache=True, inline="always")
def record_draw(values, drawn, v, observed, tol, reached, early, h):  # pragma: no cover - compiled
    """(drawn, reached, stop) after the draw number ``drawn`` of value v: kept in ``values`` (1-D) while it
    has room, counted (:func:`count_draw`)."""
    if drawn < values.size:
        values[drawn] = v
    reached, stop = count_draw(v, observed, tol, reached, early, h)
    return drawn + 1, reached, stop


class ChunkWork(NamedTuple):
    """What :func:`single_stratum_means` reads and writes for one pool (:func:`chunk_work`)."""

    simPR: np.ndarray        #: (P, k) the pool's similarities, member by replicate
    simPR32: np.ndarray      #: (P, k) the same rounded to float32
    R: np.ndarray            #: (CHUNK k (k - 1) / 2,) int64 the gathered pair records of a chunk
    left: np.ndarray         #: (CHUNK,) int64 draws the four-control path left to the general one
    vals: np.ndarray         #: (k,) float64 workspace
    iwork: np.ndarray        #: (5, k) int64 workspace (same, gt, eq, order, kept)
    out: np.ndarray          #: (CHUNK,) the chunk's mAPs


@numba.njit(cache=True, inline="always")
def chunk_work(pool):  # pragma: no cover - compiled
    """The :class:`ChunkWork` of a single-stratum ``pool`` (a :class:`.pool.Pool`)."""
    k, P = pool.sim.shape
    simPR = np.empty((P, k))
    simPR32 = np.empty((P, k), dtype=np.float32)
    for r in range(k):
        for g in range(P):
            simPR[g, r] = pool.sim[r, g]
            simPR32[g, r] = np.float32(pool.sim[r, g])
    npairs = CHUNK * k * max(k - 1, 1) // 2
    return ChunkWork(simPR, simPR32, np.empty(npairs, dtype=np.int64), np.empty(CHUNK, dtype=np.int64),
                     np.empty(k), np.empty((5, k), dtype=np.int64), np.empty(CHUNK))


@numba.njit(cache=True, inline="always")
def record_positions(D, nb, k, n, base, pairs, idx):  # pragma: no cover - compiled
    """For draws D[:nb] of a single-stratum pool (replicates 0..k-1, controls k..), the position in
    ``pairs`` of the record of each pair of drawn members qi < yi (``_tables.pair_rows``) into
    idx[b * k (k - 1) / 2 + pair_index(qi, yi, k)] (-1 for a pair with a replicate: no record),
    each record prefetched: the reads do not depend on each other, and they
    proceed while the previous chunk is computed."""
    q = np.int64(0)
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


@inner()
def single_stratum_means(D, nb, idx, controls, pool, work):  # pragma: no cover - compiled
    """work.out[b] = mAP of draw D[b] (b < nb) of a single-stratum pool: the counts of ``evaluate``
    (``idx``: the draws' record positions, from :func:`record_positions`; ``work`` a :class:`ChunkWork`).

    A control query whose positives are controls takes each positive's rank from the pair's record
    and adds the replicates above it, compared in float32 (``simPR32`` against the record's rounded
    similarity): rounding to nearest keeps order, so a strict float32 inequality is the float64 one.
    Any equality there, a tie flagged in the record, or a replicate among the query or its positives
    sends the query to :func:`_exact_query`, which counts from the exact similarities.
    """
    k = D.shape[1]
    m = k - 1
    npairs = k * m // 2
    R, left, out, simPR32 = work.R, work.left, work.out, work.simPR32
    pairs = controls.pairs
    for i in range(nb * npairs):
        at = idx[i]
        R[i] = pairs[at] if at >= 0 else 0
    Rf = R.view(np.float32)
    Ri = R.view(np.int16)
    bgt = work.iwork[1]
    done = np.int64(0)
    if k == 4:  # four controls decided in float32 first, in a tight loop; the rest after
        for b in range(nb):
            if not _four(D, b, Rf, Ri, b * 6, simPR32, out):
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
            cnt = np.int64(0)
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
                total += _exact_query(D, b, qi, rb, controls, pool, work)
        out[b] = total / k


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
def _four(D, b, Rf, Ri, rb, simPR32, out):  # pragma: no cover - compiled
    """out[b] = mAP of draw b of four controls when every count is decided in float32 (the
    value of the general path, bit for bit); False, nothing written, otherwise.

    Query qi's positives are the other three in increasing order, each with its pair's record at
    slot ``rb + pair_index(min, max, 4)``; the four APs are added in query order, as the general
    path adds them (one loop, so the compiled code holds one copy of ``_ap3``).
    """
    if min(min(D[b, 0], D[b, 1]), min(D[b, 2], D[b, 3])) < 4:
        return False
    total = 0.0
    for qi in range(4):
        ja = 1 if qi == 0 else 0
        jb = 2 if qi <= 1 else 1
        jc = 3 if qi <= 2 else 2
        a = _ap3(D[b, qi], D[b, ja], rb + pair_index(min(qi, ja), max(qi, ja), 4),
                 D[b, jb], rb + pair_index(min(qi, jb), max(qi, jb), 4),
                 D[b, jc], rb + pair_index(min(qi, jc), max(qi, jc), 4), Rf, Ri, simPR32)
        if a < 0.0:
            return False
        total += a
    out[b] = total / 4
    return True


@inner()
def _exact_query(D, b, qi, rb, controls, pool, work):  # pragma: no cover - compiled
    """AP of query D[b, qi] of a single-stratum pool from exact similarities: the counts of
    ``evaluate`` (two controls: the rank from the pair's record, the similarity and its ties from
    the query's sorted row)."""
    k = D.shape[1]
    m = k - 1
    n = pool.n[0]
    sorted_buf = controls.sorted_sims
    rbase = controls.sorted_offset[pool.component_stratum[0]]
    simPR, vals = work.simPR, work.vals
    same, bgt, beq, order, kept = work.iwork[0], work.iwork[1], work.iwork[2], work.iwork[3], work.iwork[4]
    Ri = work.R.view(np.int16)
    simRP = pool.sim
    first_stratum = np.int64(0)
    u = D[b, qi]
    rs = rbase + (u - k) * (n - 1)
    cnt = np.int64(0)
    plain = True
    for yi in range(k):
        if yi == qi:
            continue
        y = D[b, yi]
        if u < k:  # a replicate query: the controls above it in its row
            v = simRP[u, y]
            gt, eq = replicate_counts(pool, u, first_stratum, y, v)
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
            eq = np.int64(1)
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
        kept[cnt] = 1
        bgt[cnt] = gt
        beq[cnt] = eq
        cnt += 1
    if plain:
        return _untied_ap(bgt, m)
    ap, _ = walk_counts(vals, same, kept, bgt, beq, order, m)
    return ap


@numba.njit(cache=True, inline="always")
def _untied_ap(gt, m):  # pragma: no cover - compiled
    """AP of a query whose m positives (all in its stratum) tie with no pool member: the positive with
    the i-th smallest count gt of members above it (i = 0, 1, ...) has precision (i + 1) / (gt + 1).

    The additions run in the order of ``walk_counts`` (most similar first), with the values it
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
        insertion_sort(gt, m)  # ascending (m is small); counts are distinct
    total = 0.0
    for i in range(m):
        total += (i + 1.0) / (gt[i] + 1.0)
    return total / m


@numba.njit(cache=True, inline="always")
def continue_single(pool, controls, keys, counters, drawn, reached, target, h, tol, observed, first_chunk,
                    values):  # pragma: no cover - compiled
    """Continue the mAP null of a single-stratum pool without pair rule to ``target`` draws (see the
    module). Returns (drawn, reached, stopped); ``counters[0]`` is left right after the last draw
    counted (after the stopping draw on a stop, as one draw at a time leaves it). Draw i's value goes to
    ``values[i]`` when ``values`` has that entry.

    Chunks start at ``first_chunk`` draws and double up to :data:`CHUNK` (a unit that stops early
    draws few more than it uses). When no early stop can come (the unit entered with ``reached >= h``,
    or a fixed number of draws), the next chunk is drawn and its records prefetched while the current one
    is evaluated; otherwise after it, so a stop wastes no draws.
    """
    k = pool.sim.shape[0]
    m = k - 1
    C = CHUNK
    D = np.empty((2, C, k), dtype=np.int64)
    after = np.empty((2, C), dtype=np.uint64)
    idx = np.empty((2, C * k * m // 2), dtype=np.int64)
    work = chunk_work(pool)
    out = work.out
    n0 = pool.n[0]
    base = controls.pairs_offset[pool.component_stratum[0]]
    early = reached < h
    size = min(first_chunk, C)
    cur = np.int64(0)
    nb = min(size, target - drawn)
    _draw_chunk(pool, keys, counters, D[cur], after[cur], nb)
    record_positions(D[cur], nb, k, n0, base, controls.pairs, idx[cur])
    while nb > 0:
        size = min(2 * size, C)
        nxt = min(size, target - drawn - nb)
        if nxt > 0 and not early:  # the next chunk's draws (the stream in the same order) and its records
            _draw_chunk(pool, keys, counters, D[1 - cur], after[1 - cur], nxt)
            record_positions(D[1 - cur], nxt, k, n0, base, controls.pairs, idx[1 - cur])
        single_stratum_means(D[cur], nb, idx[cur], controls, pool, work)
        for b in range(nb):
            if drawn < values.size:
                values[drawn] = out[b]
            drawn += 1
            reached, stop = count_draw(out[b], observed, tol, reached, early, h)
            if stop:
                counters[0] = after[cur, b]
                return drawn, reached, True
        if nxt > 0 and early:  # no stop in this chunk: the next one now
            _draw_chunk(pool, keys, counters, D[1 - cur], after[1 - cur], nxt)
            record_positions(D[1 - cur], nxt, k, n0, base, controls.pairs, idx[1 - cur])
        cur = 1 - cur
        nb = nxt
    return drawn, reached, False


@numba.njit(cache=True, inline="always")
def _draw_chunk(pool, keys, counters, D, after, nb):  # pragma: no cover - compiled
    """The next nb assignments of a single-stratum pool into D[:nb], the stream's counter after each
    in ``after``."""
    for b in range(nb):
        draw_assignment(pool, keys, counters, D[b])
        after[b] = counters[0]


