"""Compiled kernel (numba): the exact conditional law of a crossed query, counted without drawing.

On the crossed layout (one replicate a plate) query u of perturbation t ranks its m = k - 1 positives,
one on each other plate s, among the n_u controls of its own plate. Under the conditional null
(:mod:`..nulls.conditional`) the positive of plate s is a member of that plate's pool (t's replicate
there and its n_s controls) chosen uniformly, independently across plates, and u's similarity to every
pool member is fixed. Without ties in u's row (:func:`.lookups.query_row`: no member as similar to u as
one of its plate-mates, no two members of different plates as similar to u as each other) a member y
enters the AP through its count G(y) of u's plate-mates more similar to u than y only:

    AP = (1/m) * sum_{b=0}^{m-1} (b + 1) / (G_(b) + b + 1),

G_(0) <= ... <= G_(m-1) the chosen members' counts sorted (:func:`.lookups.untied_ap`). Its law is
the law of a sum over sorted picks from independent uniform per-plate count sets, and the p-value of
the observed AP a is the share of the T = prod_s (n_s + 1) choices with AP >= a - tol, each choice as
likely as a draw of :func:`.crossed.crossed_conditional_batch` makes it.

:func:`law_count` counts that share exactly. Every choice is one increasing sequence of positions in
the members sorted by count (at most one a plate), so a depth-first walk picks the positives in count
order, adding the terms as :func:`.lookups.untied_ap` adds them (the same operations in the same
order: a choice's AP has the same bits as a draw of it). A partial choice (b picks, sum S, the next
pick at position p or later) is settled as a whole when bounds on its completions decide it: every
later pick of plate s lies between the first count of s at or after p and the largest count of s, and
since a term falls with its count, the sorted lower (upper) ends give the largest (smallest) completion:
all of its prod_s #{members of s at or after p} completions reach a - tol, or none does. A bound
decides only with a margin of :data:`MARGIN` (far above the rounding of the bounds' sums); undecided
partial choices are walked on, and a choice is counted by its own AP. The walk moves to larger counts
at each depth and stops at the first pick whose completions (all their counts at least its count) can
no longer reach the threshold, so it visits the choices near the threshold, not all T.

Edge cases: m = 1 (k = 2) is a single pick; a plate whose pool has no member left beyond p closes the
partial choice; T must stay below 2^53 (the caller checks); the walk gives up (count -1) after
``limit`` steps, so a caller bounds its cost by what the draws it replaces would cost.
"""

from __future__ import annotations

import numba
import numpy as np

from ...compiled import inner
from .sort import insertion_sort

__all__ = ["MARGIN", "law_count"]

#: Margin (in AP) by which a bound must clear the threshold to settle a partial choice as a whole.
MARGIN = 1e-10


@numba.njit(cache=True, inline="always")
def _sorted_terms(vals, r, b0):  # pragma: no cover - compiled
    """sum_{j<r} (b0 + j + 1) / (vals_(j) + b0 + j + 1) over the first r entries of ``vals`` sorted
    ascending (sorted in place)."""
    insertion_sort(vals, r)
    s = 0.0
    for j in range(r):
        s += (b0 + j + 1.0) / (vals[j] + b0 + j + 1.0)
    return s


@inner()  # not inlined: law_batch calls it once a query, and numba's copy of its IR cost seconds
def law_count(row, first, size, qi, observed, tol, limit):  # pragma: no cover - compiled
    """(count, steps): how many of the T = prod_{s != qi} size[s] choices of one member of each other
    plate's pool give the query an AP >= ``observed - tol`` (the module's formula), counted exactly;
    count -1 when the walk would take more than ``limit`` steps (a step: one candidate pick looked at).

    ``row``: each pool member's count G (plate s's members at ``first[s]`` .. ``first[s] + size[s]``,
    as :func:`.lookups.query_row` fills it, untied); ``qi`` the query's own plate (not picked)."""
    k = size.size
    m = k - 1
    N = np.int64(0)
    for s in range(k):
        if s != qi:
            N += size[s]
    G0 = np.empty(N, dtype=np.int64)
    c0 = np.empty(N, dtype=np.int64)
    n = 0
    c = 0
    for s in range(k):
        if s == qi:
            continue
        for y in range(first[s], first[s] + size[s]):
            G0[n] = row[y]
            c0[n] = c
            n += 1
        c += 1
    top = np.int64(0)
    for p in range(N):
        top = max(top, G0[p])
    at = np.zeros(top + 2, dtype=np.int64)  # a counting sort by G (counts are small: 0 .. n_u)
    for p in range(N):
        at[G0[p] + 1] += 1
    for v in range(top + 1):
        at[v + 1] += at[v]
    G = np.empty(N, dtype=np.int64)
    cs = np.empty(N, dtype=np.int64)
    for p in range(N):
        j = at[G0[p]]
        at[G0[p]] += 1
        G[j] = G0[p]
        cs[j] = c0[p]
    nxt = np.empty((N + 1, m), dtype=np.int64)  # first position >= p of plate c (N: none)
    cnt = np.empty((N + 1, m), dtype=np.int64)  # members of plate c at positions >= p
    gmax = np.zeros(m, dtype=np.int64)
    for c in range(m):
        nxt[N, c] = N
        cnt[N, c] = 0
    for p in range(N - 1, -1, -1):
        for c in range(m):
            nxt[p, c] = nxt[p + 1, c]
            cnt[p, c] = cnt[p + 1, c]
        nxt[p, cs[p]] = p
        cnt[p, cs[p]] += 1
        if G[p] > gmax[cs[p]]:
            gmax[cs[p]] = G[p]
    thr = observed - tol
    s_st = np.empty(m + 1)
    mask_st = np.empty(m + 1, dtype=np.int64)
    q_st = np.empty(m + 1, dtype=np.int64)
    lo = np.empty(m, dtype=np.int64)
    hi = np.empty(m, dtype=np.int64)
    s_st[0] = 0.0
    mask_st[0] = 0
    q_st[0] = 0
    d = 0
    total = np.int64(0)
    steps = np.int64(0)
    while d >= 0:
        q = q_st[d]
        S = s_st[d]
        mask = mask_st[d]
        pushed = False
        while q < N:
            steps += 1
            if steps > limit:
                return np.int64(-1), steps
            c = cs[q]
            if (mask >> c) & 1:
                q += 1
                continue
            S2 = S + (d + 1.0) / (G[q] + d + 1.0)  # untied_ap's term of the (d+1)-th pick
            if d + 1 == m:  # a whole choice: its own AP, as a draw computes it
                if S2 / m >= thr:
                    total += 1
                    q += 1
                    continue
                break  # a later pick has a count at least G[q]: a smaller AP
            ub = S2
            for b in range(d + 1, m):
                ub += (b + 1.0) / (G[q] + b + 1.0)
            if ub / m < thr - MARGIN:
                break  # no completion of this or a later pick reaches the threshold
            mask2 = mask | (np.int64(1) << c)
            r = 0
            ways = np.int64(1)
            for c2 in range(m):
                if not (mask2 >> c2) & 1:
                    p2 = nxt[q + 1, c2]
                    if p2 == N:
                        ways = 0
                        break
                    lo[r] = G[p2]
                    hi[r] = gmax[c2]
                    ways *= cnt[q + 1, c2]
                    r += 1
            if ways == 0:
                q += 1
                continue
            if (S2 + _sorted_terms(hi, r, d + 1)) / m >= thr + MARGIN:
                total += ways  # every completion reaches the threshold
                q += 1
                continue
            if (S2 + _sorted_terms(lo, r, d + 1)) / m < thr - MARGIN:
                q += 1
                continue
            q_st[d] = q + 1
            d += 1
            s_st[d] = S2
            mask_st[d] = mask2
            q_st[d] = q + 1
            pushed = True
            break
        if not pushed:
            d -= 1
    return total, steps
