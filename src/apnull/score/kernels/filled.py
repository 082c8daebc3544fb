"""Compiled kernels (numba) of the crossed layout's filled pools: what every pool of a component shares,
and the draws of a pool whose look-ups are all known.

- :class:`Shared` (:func:`shared_fill`): the pairs of two controls of different strata, their similarity
  and their counts among the first control's plate-mates, one block for each ordered pair of strata that
  some pool spans, computed once for every pool, round and null of a run
  (:func:`..nulls.pooltables.shared_table` chooses the blocks within a memory bound); a pool's pair of two
  controls in a held block is then three reads and a comparison with its plate's replicate
  (:func:`.lookups.know_all`, :func:`.lookups.fill_all`).
- :func:`filled_mean` / :func:`untied_mean`: a draw's mean AP from the counts of a filled table
  (:func:`.lookups.fill_all`), the precisions read from :func:`quotients`; every value bit for bit the
  tie-aware walk's (:func:`.lookups.query_ap`).
- :func:`untied_sum`: a lazy draw's (look-ups as needed, five strata) sum of untied queries' APs, the one
  copy both crossed entries call.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import inner
from .draws import replicates
from .lookups import know_all, mean_ap, query_ap, reset
from .pool import Pool, pool_layout, pool_members, pool_most
from .ranking import count_sorted
from .similarity import sim_rows

__all__ = ["Shared", "Kept", "crossed_pool", "keep_pool", "kept_pool", "shared_fill", "quotients", "rank_four", "untied_sum", "five_mean", "untied_mean", "filled_mean"]


class Shared(NamedTuple):
    """What every pool of a component's crossed perturbations shares (:func:`shared_fill`), by blocks of
    pairs of strata (plates): the block of strata (a, b), a != b, held when ``at[a, b]`` >= 0, is the
    size[a] x size[b] pairs of controls (a row-major block at ``at[a, b]`` in the flat arrays); for
    control i of a and control j of b (their positions in their strata, ``Pool.control``), at
    ``at[a, b] + i * size[b] + j``: v = sim(i, j), and gt / eq the controls of a (i excluded) more similar
    to i than v / as similar, the counts of i's sorted row. Blocks come in both orders (a, b) and (b, a).
    A pool's pair of two controls in a held block is then these three reads and a comparison with the
    replicate on i's plate (:func:`.lookups.know_all`); a pair of strata without a block is computed by the
    pool (:func:`.lookups.pair_counts`). An empty (0 x 0) ``at``: no block (every pair computed per pool)."""

    v: np.ndarray     #: (pairs,) float64
    gt: np.ndarray    #: (pairs,) int32
    eq: np.ndarray    #: (pairs,) int32
    at: np.ndarray    #: (S, S) int64 first pair of the block of strata (a, b), -1: not held


class Kept(NamedTuple):
    """What a crossed pool keeps from one round (or null) to the next, in a room of ``buf`` a pool:

    - filled pools' counts (:func:`.crossed.crossed_batch`, int16 ``buf``): a pool filled
      (:func:`.lookups.fill_all`) whose rows have no tie keeps its table's gt (P * P values, all its draws
      read) at ``buf[start[t]:]``; a later round draws from them without filling again
      (:func:`..nulls.pooltables.kept_fills` assigns the room);
    - pools' similarities (both crossed entries, float64 ``buf``): :func:`crossed_pool` keeps its
      replicates' rows ``Pool.sim`` and ``Pool.sorted_rc`` (:func:`keep_pool`), and a later round or null
      lays the pool out around them (:func:`kept_pool`) instead of computing them again
      (:func:`..nulls.pooltables.kept_pools` assigns the room).

    The same values, so the same draws and values."""

    buf: np.ndarray     #: room of the kept values (empty: none kept)
    start: np.ndarray   #: (perturbations of the batch,) int64 first value of its room, -1: none
    done: np.ndarray    #: (perturbations of the batch,) bool: its room holds its values (set by the kernel)


@inner()  # once a pool (a query row), not a draw: compiled once, not copied into each call site
def crossed_pool(part, j, controls, kind, tab, shared, pools, t, ap_out, pr_out, q):  # pragma: no cover - compiled
    """(pool, P, D, vals, iwork, m) of perturbation j (position t of its batch): its pool (P members) with its
    look-ups forgotten, then those of its observed assignment D (each replicate, a copy of
    ``pool.observed``) computed (:func:`.lookups.know_all`) and its mean AP m (:func:`.lookups.mean_ap`; each
    query's AP and P@R into ``ap_out[q:q + k]`` and ``pr_out[q:q + k]``); ``vals`` (k,) and ``iwork`` (5, k)
    the workspaces of :func:`.lookups.mean_ap`. ``pools``: a :class:`Kept` of pools' similarities; a pool kept
    there (``done[t]``) is laid out around them (:func:`kept_pool`), one with a room and none kept yet
    keeps them (:func:`keep_pool`)."""
    reps = replicates(part, j)
    at = pools.start[t]
    if at >= 0 and pools.done[t]:
        pool = kept_pool(reps, controls, pools.buf, at)
    else:
        pool = pool_layout(reps, controls, kind, np.int64(1) << 40)  # every stratum ranked: J >= 2
        if at >= 0:
            keep_pool(pool, pools.buf, at)
            pools.done[t] = True
    P = pool.stratum.size
    reset(tab, P)
    D = pool.observed.copy()
    know_all(D, P, tab.v, tab.gt, tab.eq, pool.stratum, pool.n, pool.replicate, pool.sim, pool.row, controls.X, kind,
             pool.sorted_rc, controls.sorted_offset, controls.sorted_sims, pool.component_stratum, pool.control,
             pool.rep_lo, pool.rep_hi, shared.v, shared.gt, shared.eq, shared.at)
    k = D.size
    vals, iwork = np.empty(k), np.empty((5, k), dtype=np.int64)
    m = mean_ap(D, P, tab.v, tab.gt, tab.eq, vals, iwork, ap_out[q:q + k], pr_out[q:q + k], True)
    return pool, P, D, vals, iwork, m


@inner()
def keep_pool(pool, buf, at):  # pragma: no cover - compiled
    """Copy a crossed pool's ``sim`` (k x P) then ``sorted_rc`` (k x max n_s) to ``buf[at:]``, row-major."""
    k, P = pool.sim.shape
    w = pool.sorted_rc.shape[1]
    for r in range(k):
        for g in range(P):
            buf[at + r * P + g] = pool.sim[r, g]
        for c in range(w):
            buf[at + k * P + r * w + c] = pool.sorted_rc[r, c]


@inner()
def kept_pool(reps, controls, buf, at):  # pragma: no cover - compiled
    """The :class:`.pool.Pool` of a crossed perturbation whose similarities :func:`keep_pool` put at
    ``buf[at:]``: its members laid out again (:func:`.pool.pool_members`, as :func:`.pool.pool_layout` lays
    them out), ``sim`` and ``sorted_rc`` views of the kept values, no rank tables ``gt`` / ``eq`` (no
    crossed kernel reads them)."""
    g_str, g_rep, g_row, g_ctl, s_n, s_lo, s_hi, poff, D0 = pool_members(reps, controls)
    k, P = D0.size, g_str.size
    w = pool_most(s_n)
    sim = buf[at:at + k * P].reshape((k, P))
    srt = buf[at + k * P:at + k * (P + w)].reshape((k, w))
    none = np.zeros((k, 0), dtype=np.int64)
    return Pool(g_str, g_rep, g_row, g_ctl, s_n, reps.strata, s_lo, s_hi, poff, sim, srt, none, none, D0, s_hi - s_lo)


@inner()
def shared_fill(controls, kind, shared, first):  # pragma: no cover - compiled
    """Fill the blocks of a :class:`Shared` that start at pair ``first`` or later (those before it are
    filled already): the similarities of a block of strata (a, b), a < b, by :func:`.similarity.sim_rows`
    (the bits of ``sim``), its block (b, a) the same values transposed (``sim`` is exactly symmetric); the
    counts of each block by a binary search in each control's sorted row (:func:`.ranking.count_sorted`),
    as :func:`.lookups.pair_counts` counts."""
    at, v = shared.at, shared.v
    S = at.shape[0]
    zero = np.int64(0)  # not a literal 0: a literal argument would compile sim_rows once more
    for a in range(S):
        na, a0 = controls.size[a], controls.start[a]
        for b in range(a + 1, S):
            o = at[a, b]
            if o < first:
                continue
            nb, b0 = controls.size[b], controls.start[b]
            block = v[o:o + na * nb].reshape((na, nb))
            sim_rows(controls.X, a0, a0 + na, controls.X, controls.XT, b0, b0 + nb, kind, block, zero, zero)
            ob = at[b, a]
            for i in range(na):
                for j in range(nb):
                    v[ob + j * na + i] = block[i, j]
    for a in range(S):
        na = controls.size[a]
        for b in range(S):
            o = at[a, b]
            if b == a or o < first:
                continue
            nb = controls.size[b]
            for i in range(na):
                rs = controls.sorted_offset[a] + i * (na - 1)
                row = controls.sorted_sims[rs:rs + na - 1]
                for j in range(nb):
                    g, e = count_sorted(row, v[o + i * nb + j])
                    shared.gt[o + i * nb + j] = g
                    shared.eq[o + i * nb + j] = e


@inner()  # once a pool (a query row), not a draw: compiled once, not copied into each call site
def quotients(m, most):  # pragma: no cover - compiled
    """(m, most + 1) table of (b + 1) / (g + b + 1): :func:`.lookups.untied_ap`'s precision of the positive of
    rank b (from 0) with g plate-mates above it, each computed as it does, so the same bits."""
    out = np.empty((m, most + 1))
    for b in range(m):
        for g in range(most + 1):
            out[b, g] = (b + 1.0) / (g + b + 1.0)
    return out


@numba.njit(cache=True, inline="always")
def rank_four(x0, x1, x2, x3, quot):  # pragma: no cover - compiled
    """Sum of precisions of four untied positives of counts x0 .. x3: ranked by a sorting network of
    min / max (no branch to guess wrong), the precisions read from ``quot`` (:func:`quotients`) and
    added in rank order, as :func:`.lookups.untied_ap` adds them. The counts index as unsigned (they are
    >= 0): a signed index takes numba's test for a negative one, three instructions a read."""
    l1, h1 = min(x0, x1), max(x0, x1)
    l2, h2 = min(x2, x3), max(x2, x3)
    m1, m2 = max(l1, l2), min(h1, h2)
    a = 0.0
    a += quot[0, np.uint64(min(l1, l2))]
    a += quot[1, np.uint64(min(m1, m2))]
    a += quot[2, np.uint64(max(m1, m2))]
    a += quot[3, np.uint64(max(h1, h2))]
    return a


@inner()  # the lazy draws' (both crossed entries): compiled once, not copied into each draw loop
def untied_sum(D, P, tv, tg, te, quot, only):  # pragma: no cover - compiled
    """Sum over the queries qi of assignment D (five members, one a stratum; every qi, or qi = ``only``
    alone when ``only`` >= 0) of AP(qi) = :func:`rank_four` of its four positives' counts gt / 4, added in
    query order; -1.0 when a query's row is tied: a positive as similar as a plate-mate (eq != 0) or as
    another positive (equal v). The table's (``tv``, ``tg``, ``te``, P x P) pairs of the queries must be
    known. The same operations as :func:`five_mean`'s sum (the sorting network ranks its counts in any
    order), so the same bits: the mAP null divides the sum of the five by 5, a query's conditional null
    takes its own. ``only`` is a variable in both callers (a literal argument would compile a second copy)."""
    lo, hi = (only, only + 1) if only >= 0 else (0, 5)
    total = 0.0
    for qi in range(lo, hi):
        b = D[qi] * P
        for yi in range(5):
            if yi != qi:
                if te[b + D[yi]] != 0:
                    return -1.0
                for zi in range(yi + 1, 5):
                    if zi != qi and tv[b + D[zi]] == tv[b + D[yi]]:
                        return -1.0
        total += rank_four(tg[b + D[(qi + 1) % 5]], tg[b + D[(qi + 2) % 5]], tg[b + D[(qi + 3) % 5]],
                           tg[b + D[(qi + 4) % 5]], quot) / 4
    return total


@numba.njit(cache=True, inline="always")
def five_mean(d0, d1, d2, d3, d4, P, counts, quot):  # pragma: no cover - compiled
    """:func:`untied_mean` of five members d0 .. d4 (four positives a query): each query's counts read
    into scalars, ranked by :func:`rank_four`, the APs added in query order and divided as
    :func:`.lookups.mean_ap` does. Straight-line code on scalars: a draw loop calling it takes no
    reference count of its arrays (a helper with loops, inlined, takes and drops one per array every
    draw: two atomic operations each, which cost more than the draw). The members index as unsigned
    (no test for a negative index: about a fifth of a draw's instructions)."""
    m = 4
    e0, e1, e2, e3, e4 = np.uint64(d0), np.uint64(d1), np.uint64(d2), np.uint64(d3), np.uint64(d4)
    w = np.uint64(P)
    total = 0.0
    b = e0 * w
    total += rank_four(counts[b + e1], counts[b + e2], counts[b + e3], counts[b + e4], quot) / m
    b = e1 * w
    total += rank_four(counts[b + e0], counts[b + e2], counts[b + e3], counts[b + e4], quot) / m
    b = e2 * w
    total += rank_four(counts[b + e0], counts[b + e1], counts[b + e3], counts[b + e4], quot) / m
    b = e3 * w
    total += rank_four(counts[b + e0], counts[b + e1], counts[b + e2], counts[b + e4], quot) / m
    b = e4 * w
    total += rank_four(counts[b + e0], counts[b + e1], counts[b + e2], counts[b + e3], quot) / m
    return total / 5


@numba.njit(cache=True, inline="always")
def untied_mean(D, P, counts, quot, G, S):  # pragma: no cover - compiled
    """:func:`filled_mean` of an assignment D every member of which has an untied row: the same
    operations on the same counts, so the same bits, without the tie-aware walk that the other rows
    need. Kept apart so the draw loop of a pool without ties holds no call of that walk: its mere
    presence in the loop made each draw about twice as slow. Five strata (four positives a query) draw by
    :func:`five_mean` instead, in a loop of their own (:func:`.crossed.crossed_batch`)."""
    k = D.size
    m = k - 1
    total = 0.0
    for qi in range(k):
        base = D[qi] * P
        c = np.int64(0)
        for yi in range(k):
            if yi != qi:
                G[c] = counts[base + D[yi]]
                c += 1
        for c in range(m):  # the rank b of each count (equal counts ranked by position: the same sum)
            b = np.int64(0)
            for x in range(m):
                b += (G[x] < G[c]) | ((G[x] == G[c]) & (x < c))
            S[b] = quot[b, G[c]]
        a = 0.0
        for b in range(m):
            a += S[b]
        total += a / m
    return total / k


@numba.njit(cache=True, inline="always")
def filled_mean(D, P, counts, tv, tg, te, untied, quot, G, S, vals, iwork):  # pragma: no cover - compiled
    """Mean AP of assignment D of a pool whose look-ups are all known (:func:`.lookups.fill_all`): a query with
    an untied row (``untied``, as :func:`fill_all` finds them) from its positives' counts gt (``counts``:
    the table's gt as int16, small enough to stay in the fastest cache), ranked and the precisions
    read from ``quot`` (:func:`quotients`), added in rank order as :func:`.lookups.untied_ap` adds them; the
    others by :func:`.lookups.query_ap`. The APs added in query order and divided as :func:`.lookups.mean_ap` does, so
    the same bits. Four positives are ranked by a sorting network of min / max (no branch to guess
    wrong), more or fewer by counting each one's rank (``G``, ``S``: workspaces of k)."""
    k = D.size
    m = k - 1
    total = 0.0
    for qi in range(k):
        u = D[qi]
        if not untied[u]:
            ap, _ = query_ap(D, qi, P, tv, tg, te, vals, iwork)
            total += ap  # finite: m >= 1 positive
            continue
        base = u * P
        c = np.int64(0)
        for yi in range(k):
            if yi != qi:
                G[c] = counts[base + D[yi]]
                c += 1
        a = 0.0
        if m == 4:
            a = rank_four(G[0], G[1], G[2], G[3], quot)
        else:
            for c in range(m):  # the rank b of each count (equal counts ranked by position: the same sum)
                b = np.int64(0)
                for x in range(m):
                    b += (G[x] < G[c]) | ((G[x] == G[c]) & (x < c))
                S[b] = quot[b, G[c]]
            for b in range(m):
                a += S[b]
        total += a / m
    return total / k
