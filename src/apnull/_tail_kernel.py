"""Compiled kernel of :mod:`apnull.tail`: bounds on P(S >= T) for S = sum_i i / r_i by a pruned scan.

The scan runs over positions r = 1..N carrying, for every number j of positives placed so far, the
sorted distinct values ``c`` of ``sum_{i<=j} floor(i Q / r_i)`` (integers, Q cells per unit of S) and
their probabilities. ``c <= Q S < c + m`` for a finished placement, so ``c >= A`` (A >= Q T) proves
S >= T and ``c < B`` (B = floor(Q T) - m + 1) proves S < T. A state is dropped as soon as even its
best completion (the remaining positives at the next ranks) cannot reach B, and its probability is
banked as soon as even its worst completion (the remaining positives at the last ranks) reaches A:
only states that can still go either way are carried, and in the far tail they are few.

Probabilities are kept relative to a running scale (its natural log carried separately) so that
nothing underflows: P(AP = 1) = 1 / C(m+n, m) is below the smallest float for m = 500, n = 5000.
States whose stored probability falls below ``FLUSH`` are dropped and their probability added to
the upper bound, never lost.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

from . import compiled  # noqa: F401 - its cache locators, before the kernels below are made

#: Stored probabilities below this are dropped into the upper bound's slack (the largest is near 1).
FLUSH = 1e-250


@njit(cache=True)
def completion_tables(m, n, Q):
    """``best[d, j]`` and ``worst[j]`` in cells: the most and least ``sum_{i>j} floor(i Q / r_i)`` can add.

    With j positives placed among the first k = j + d positions, the most is reached with the
    remaining positives at ranks k + 1, k + 2, ... (``r_i = i + d``), the least with them at the last
    ranks (``r_i = n + i``): each term is largest (smallest) at its smallest (largest) possible rank.
    """
    best = np.zeros((n + 1, m + 1), dtype=np.int64)
    for d in range(n + 1):
        acc = 0
        for i in range(m, 0, -1):
            best[d, i] = acc
            acc += (i * Q) // (i + d)
        best[d, 0] = acc
    worst = np.zeros(m + 1, dtype=np.int64)
    acc = 0
    for i in range(m, 0, -1):
        worst[i] = acc
        acc += (i * Q) // (n + i)
    worst[0] = acc
    return best, worst


@njit(cache=True)
def _logadd(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    hi, lo = max(a, b), min(a, b)
    return hi + np.log1p(np.exp(lo - hi))


@njit(cache=True)
def tail_scan(m, n, Q, A, B, best, worst, budget):
    """Log bounds on P(S >= T): returns ``(log_low, log_high, work, finished, adds)``.

    ``log_low`` is the log probability of the placements proved to reach T (c >= A), ``log_high``
    adds the ones not proved to miss it (c >= B) and every flushed probability. ``work`` counts the
    states handled; the scan gives up (``finished`` False) once it passes ``budget``. ``adds`` counts
    the additions in log space (each may round by a few units in the last place), for the caller's
    rounding slack.
    """
    N = m + n
    cells = List()
    mass = List()
    for j in range(m + 1):
        cells.append(np.zeros(0, dtype=np.int64))
        mass.append(np.zeros(0, dtype=np.float64))
    cells[0] = np.zeros(1, dtype=np.int64)
    mass[0] = np.ones(1, dtype=np.float64)
    log_scale = 0.0
    banked = -np.inf  # log P(proved to reach)
    open_ = -np.inf   # log P(finished, neither proved nor refuted) + flushed
    work = 0
    adds = 0
    if 0 + worst[0] >= A:
        return 0.0, 0.0, 0, True, 0
    for k in range(N):  # k positions scanned; now rank r = k + 1
        r = k + 1
        denom = float(N - k)
        top = min(k, m - 1)
        work += top + 1
        for j in range(top, -1, -1):
            # new row j+1 = old row j+1 (rank r negative) merged with old row j shifted (rank r positive)
            a_c, a_p = cells[j + 1], mass[j + 1]
            b_c, b_p = cells[j], mass[j]
            if a_c.size == 0 and b_c.size == 0:
                continue
            stay = (N - k - (m - j - 1)) / denom
            move = (m - j) / denom
            inc = ((j + 1) * Q) // r
            na, nb = a_c.size, b_c.size
            out_c = np.empty(na + nb, dtype=np.int64)
            out_p = np.empty(na + nb, dtype=np.float64)
            ia = 0
            ib = 0
            t = 0
            d_next = r - (j + 1)  # negatives among the first r positions for row j+1
            feasible = d_next <= n
            lim_dead = B - best[d_next, j + 1] if feasible else np.iinfo(np.int64).max
            lim_sure = A - worst[j + 1]
            sure = 0.0
            flushed = 0.0
            while ia < na or ib < nb:
                if ib >= nb or (ia < na and a_c[ia] < b_c[ib] + inc):
                    c = a_c[ia]
                    p = a_p[ia] * stay
                    ia += 1
                elif ia >= na or b_c[ib] + inc < a_c[ia]:
                    c = b_c[ib] + inc
                    p = b_p[ib] * move
                    ib += 1
                else:
                    c = a_c[ia]
                    p = a_p[ia] * stay + b_p[ib] * move
                    ia += 1
                    ib += 1
                if p <= 0.0 or c < lim_dead:
                    continue
                if c >= lim_sure:
                    sure += p
                    continue
                if p < FLUSH:
                    flushed += p
                    continue
                out_c[t] = c
                out_p[t] = p
                t += 1
            work += na + nb
            if j + 1 == m and t > 0:  # finished placements: c in [B, A) proves nothing either way
                s = 0.0
                for i in range(t):
                    s += out_p[i]
                open_ = _logadd(open_, np.log(s) + log_scale)
                adds += 1
                t = 0
            if sure > 0.0:
                banked = _logadd(banked, np.log(sure) + log_scale)
                adds += 1
            if flushed > 0.0:
                open_ = _logadd(open_, np.log(flushed) + log_scale)
                adds += 1
            cells[j + 1] = out_c[:t]
            mass[j + 1] = out_p[:t]
        # row 0: rank r is negative
        if cells[0].size:
            d0 = r
            if d0 <= n and best[d0, 0] >= B:
                mass[0][0] *= (N - k - m) / denom
                if mass[0][0] <= 0.0:
                    cells[0] = np.zeros(0, dtype=np.int64)
                    mass[0] = np.zeros(0, dtype=np.float64)
            else:
                cells[0] = np.zeros(0, dtype=np.int64)
                mass[0] = np.zeros(0, dtype=np.float64)
        # rescale so that the largest stored probability stays near 1
        big = 0.0
        live = 0
        for j in range(m + 1):
            if mass[j].size:
                live += mass[j].size
                big = max(big, mass[j].max())
        if live == 0:
            return banked, _logadd(banked, open_), work, True, adds + 1
        if big < 1e-50 or big > 1e50:
            for j in range(m + 1):
                if mass[j].size:
                    mass[j] = mass[j] / big
            log_scale += np.log(big)
        if work > budget:
            return banked, 0.0, work, False, adds
    return banked, _logadd(banked, open_), work, True, adds + 1
