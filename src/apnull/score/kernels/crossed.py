"""Compiled kernels (numba) of the crossed layout: one replicate a stratum, draws as table look-ups.

In the crossed layout (JUMP's) each replicate of perturbation t sits on its own plate beside that
plate's controls: t's pool (:func:`.pool.pool_layout`) is, for each stratum s, its one replicate and
the n_s controls there, and a draw takes one member of each stratum's pool. Query u (stratum s) then
ranks k - 1 positives, every one on another plate, among the n_s other members of its own pool. What a
draw needs of a pair (u, y) of members of different strata is fixed for the perturbation: the
similarity v = sim(u, y) and the counts (gt, eq) of u's plate-mates more similar to u than v / as
similar. :func:`fill` computes them the first time a draw asks (v from the pool's replicate rows, or
``sim`` of two controls, each unordered control pair once; the counts by a binary search in u's sorted
plate-mates and a comparison with its plate's replicate) and keeps them in a table of the pool's
member pairs (:class:`Lookups`), so a later draw of the pair is three reads. A query's AP is then
:func:`.ranking.walk_counts` over its k - 1 look-ups (:func:`walk_positives`, its steps for positives
that are all kept and all on other plates): the values, counts and arithmetic of
:func:`.pool.evaluate`, so every value (observed AP, null mAP, conditional null AP) is bit for bit the
general path's, drawn from the same streams with the same draws as :func:`.pool.draw_assignment` and
:func:`.draws.draw_query` (written out here for one member a stratum).

- :func:`crossed_batch`: the mAP null (each stratum's pool gives one member the label; the mean of the
  k APs), continued to ``target`` draws as :func:`.draws.continue_general` does.
- :func:`crossed_conditional_batch`: the conditional null of each query (the query kept, each positive's
  label moved within its own plate's pool), only the query's own AP computed: k - 1 look-ups a draw.
  A query with many draws to go reads its whole row first (:func:`query_row`); without a tie in it, a
  draw is k - 1 uniforms, k - 1 counts read, sorted and summed (:func:`untied_ap`).

A perturbation takes this path when each of its strata holds one replicate (at least two strata),
without pair rule, with the control design, and its pool's table fits :data:`MAX_TABLE`
(:func:`crossed_pools`); the others take the general kernels of :mod:`.draws`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import entry, inner
from .chunks import count_draw
from ...streams import draw_distinct, uniform
from .draws import replicates
from .pool import pool_layout
from .ranking import close_block, count_sorted
from .similarity import sim

__all__ = ["MAX_TABLE", "Lookups", "lookups", "crossed_pools", "fill", "walk_positives", "query_ap", "query_row", "untied_ap", "ROW_DRAWS", "crossed_batch",
           "crossed_conditional_batch"]

#: Most member pairs of one pool's look-up table (P * P for P pool members: 16 bytes each, 32 MB).
MAX_TABLE = 1 << 21


class Lookups(NamedTuple):
    """Member-pair look-ups of one pool (P members; pair (u, y) at u * P + y): the similarity (NaN until
    known), and u's plate-mates more similar than it / as similar (-1 until known)."""

    v: np.ndarray     #: (>= P * P,) float64
    gt: np.ndarray    #: (>= P * P,) int32
    eq: np.ndarray    #: (>= P * P,) int32


@numba.njit(cache=True, inline="always")
def lookups(size):  # pragma: no cover - compiled
    """An empty :class:`Lookups` of ``size`` pairs."""
    return Lookups(np.empty(size), np.empty(size, dtype=np.int32), np.empty(size, dtype=np.int32))


@numba.njit(cache=True, inline="always")
def reset(tab, P):  # pragma: no cover - compiled
    """Forget every pair of a pool of P members."""
    for i in range(P * P):
        tab.v[i] = np.nan
        tab.gt[i] = -1


def crossed_pools(arrays, controls_of, pos) -> np.ndarray:
    """(len(pos),) bool: perturbations ``pos`` of a part's :class:`.draws.PartRows` that take the crossed
    kernels: one replicate in each of their (at least two) strata, no pair rule, the control design,
    and a look-up table within :data:`MAX_TABLE` (``controls_of(j)``: the :class:`.controls.ControlRows`
    of perturbation j's component)."""
    pos = np.asarray(pos, dtype=np.int64)
    if arrays.rep_codes.shape[1] or arrays.members.size or not pos.size:
        return np.zeros(pos.size, dtype=bool)
    first, last = arrays.soff[pos], arrays.soff[pos + 1]
    J = last - first  # every perturbation has a stratum
    segs = np.repeat(first - np.concatenate([[0], np.cumsum(J)[:-1]]), J) + np.arange(int(J.sum()))
    longest = np.maximum.reduceat(arrays.seg_len[segs], np.concatenate([[0], np.cumsum(J)[:-1]]))
    out = (J >= 2) & (longest == 1)
    for t in np.flatnonzero(out).tolist():  # only the crossed candidates: their table's size
        a, b = int(first[t]), int(last[t])
        P = int(controls_of(int(pos[t])).size[arrays.seg_comp[a:b]].sum()) + (b - a)
        out[t] = P * P <= MAX_TABLE
    return out


@inner()
def fill(pool, controls, kind, tab, P, u, y):  # pragma: no cover - compiled
    """Compute the look-up (u, y) into ``tab`` (read by :func:`query_ap`); an unordered pair of controls' similarity
    is computed once, for both directions (``sim`` is exactly symmetric)."""
    i = u * P + y
    v = tab.v[i]
    su = pool.stratum[u]
    n = pool.n[su]
    ru = pool.replicate[u]
    if v != v:
        if ru >= 0:
            v = pool.sim[ru, y]
        elif pool.replicate[y] >= 0:
            v = pool.sim[pool.replicate[y], u]
        else:
            v = sim(controls.X, pool.row[u], controls.X, pool.row[y], kind)
            tab.v[y * P + u] = v  # the pair's other direction
        tab.v[i] = v
    if ru >= 0:
        g, e = count_sorted(pool.sorted_rc[ru, :n], v)
    else:
        rs = controls.sorted_offset[pool.component_stratum[su]] + pool.control[u] * (n - 1)
        g, e = count_sorted(controls.sorted_sims[rs:rs + n - 1], v)
        for r2 in range(pool.rep_lo[su], pool.rep_hi[su]):
            w = pool.sim[r2, u]
            if w > v:
                g += 1
            elif w == v:
                e += 1
    tab.gt[i] = g
    tab.eq[i] = e


@numba.njit(cache=True, inline="always")
def walk_positives(vals, base_gt, base_eq, order, m):  # pragma: no cover - compiled
    """:func:`.ranking.walk_counts` of m positives, every one kept and none in the query's stratum (its
    ``same`` all 0, ``kept`` all 1): the same operations in the same order, so the same bits, without
    the two masks' loops."""
    for i in range(m):
        j = i
        while j > 0 and vals[order[j - 1]] < vals[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    before = np.int64(0)
    total = 0.0
    hits = 0.0
    i = np.int64(0)
    while i < m:
        first = order[i]
        v = vals[first]
        a = np.int64(1)
        while i + a < m and vals[order[i + a]] == v:
            a += 1
        s, h = close_block(a, a + base_eq[first], base_gt[first] + before, before, m)
        total += s
        hits += h
        before += a
        i += a
    return total / m, hits / m


@numba.njit(cache=True, inline="always")
def query_ap(D, qi, P, tv, tg, te, vals, iwork):  # pragma: no cover - compiled
    """(AP, Precision@R) of query D[qi] of the assignment D: its k - 1 positives' look-ups (``tv``, ``tg``,
    ``te``: a :class:`Lookups`' arrays, every pair of D known) walked (:func:`walk_positives`);
    ``vals`` (k,) and ``iwork`` (5, k) are workspaces.

    The draw loops hand plain arrays only to what they call on every draw: a tuple of arrays (a pool)
    handed on costs a reference count per array, more than the look-ups themselves."""
    base_gt, base_eq, order = iwork[0], iwork[1], iwork[2]
    u = D[qi]
    cnt = np.int64(0)
    for yi in range(D.size):
        if yi == qi:
            continue
        i = u * P + D[yi]
        vals[cnt] = tv[i]
        base_gt[cnt] = tg[i]
        base_eq[cnt] = te[i]
        cnt += 1
    return walk_positives(vals, base_gt, base_eq, order, cnt)


@numba.njit(cache=True, inline="always")
def mean_ap(D, P, tv, tg, te, vals, iwork, ap_out, pr_out, want):  # pragma: no cover - compiled
    """Mean AP of assignment D (each query's AP and P@R into ap_out / pr_out if ``want``), as
    :func:`.pool.evaluate` adds them (every pair of D known)."""
    total = 0.0
    scored = np.int64(0)
    for qi in range(D.size):
        ap, pr = query_ap(D, qi, P, tv, tg, te, vals, iwork)
        if ap == ap:
            total += ap
            scored += 1
        if want:
            ap_out[qi] = ap
            pr_out[qi] = pr
    return total / scored if scored > 0 else 0.0


@numba.njit(cache=True, inline="always")
def batch_lookups(part, controls, pos):  # pragma: no cover - compiled
    """A :class:`Lookups` for the largest pool of the perturbations ``pos``."""
    most = np.int64(0)
    for t in range(pos.size):
        j = pos[t]
        P = np.int64(0)
        for g in range(part.soff[j], part.soff[j + 1]):
            P += controls.size[part.seg_comp[g]] + part.seg_len[g]
        most = max(most, P * P)
    return lookups(most)


@numba.njit(cache=True, inline="always")
def crossed_pool(part, j, controls, kind, tab):  # pragma: no cover - compiled
    """(pool, P) of perturbation j with its look-ups forgotten."""
    reps = replicates(part, j)
    pool = pool_layout(reps, controls, kind, np.int64(1) << 40)  # every stratum ranked: J >= 2
    P = pool.stratum.size
    reset(tab, P)
    return pool, P


#: A query whose round has at least this many draws left reads its whole row first (:func:`query_row`).
ROW_DRAWS = 256


@numba.njit(cache=True, inline="always")
def query_row(pool, controls, kind, tab, P, qi, u, size, first, row):  # pragma: no cover - compiled
    """Fill ``row`` with the count gt (plate-mates of query member u more similar to it) of every member
    of every other stratum's pool, stratum by stratum (stratum s at ``first[s]``, ``size[s]`` members,
    as the pool lays them out); returns True when the row has no tie: every eq is 0 and no two members
    of different strata are as similar to u. A draw's AP then depends on its positives' gt only
    (:func:`untied_ap`)."""
    k = size.size
    n = np.int64(0)
    for s in range(k):
        if s == qi:
            continue
        for y in range(first[s], first[s] + size[s]):
            if tab.gt[u * P + y] < 0:
                fill(pool, controls, kind, tab, P, u, y)
            row[y] = tab.gt[u * P + y]
            if tab.eq[u * P + y] != 0:
                return False
            n += 1
    vals = np.empty(n)
    n = 0
    for s in range(k):
        if s != qi:
            for y in range(first[s], first[s] + size[s]):
                vals[n] = tab.v[u * P + y]
                n += 1
    vals.sort()
    for t in range(1, n):
        if vals[t] == vals[t - 1]:
            return False
    return True


@numba.njit(cache=True, inline="always")
def untied_ap(G, m):  # pragma: no cover - compiled
    """AP of m positives without ties from their counts G (sorted here, ascending): the sum over the
    sorted counts of (b + 1) / (G[b] + b + 1), over m; :func:`walk_positives`'s operations for blocks of
    one positive, in its order (the value order is the count order), so the same bits."""
    for i in range(1, m):
        x = G[i]
        j = i
        while j > 0 and G[j - 1] > x:
            G[j] = G[j - 1]
            j -= 1
        G[j] = x
    total = 0.0
    for b in range(m):
        total += (b + 1.0) / (G[b] + b + 1.0)
    return total / m


@entry(nogil=True)
def crossed_batch(part, controls, kind, pos, counts, target, h, tol, observed, values):  # pragma: no cover - compiled
    """The mAP null of the crossed perturbations ``pos`` of ``part`` (:func:`.draws.mean_batch`'s
    arguments, without pair rule or enumeration): the same draws and values, by look-ups."""
    tab = batch_lookups(part, controls, pos)
    tv, tg, te = tab.v, tab.gt, tab.eq
    q = np.int64(0)
    one = np.int64(1)
    none = np.int64(-1)
    for t in range(pos.size):
        j = pos[t]
        pool, P = crossed_pool(part, j, controls, kind, tab)
        k = pool.observed.size
        vals = np.empty(k)
        iwork = np.empty((5, k), dtype=np.int64)
        D = pool.observed.copy()
        for qi in range(k):
            for yi in range(k):
                if yi != qi and tg[D[qi] * P + D[yi]] < 0:
                    fill(pool, controls, kind, tab, P, D[qi], D[yi])
        m = mean_ap(D, P, tv, tg, te, vals, iwork, observed.ap[q:q + k], observed.pr[q:q + k], True)
        observed.maps[t] = m
        sg = part.soff[j]
        keys = part.keys[sg:sg + k]
        counters = counts.counters[q:q + k]  # one segment a replicate
        drawn = counts.drawn[t]
        reached = counts.reached[t]
        early = reached < h
        stopped = False
        size, first = pool.n + 1, pool.offset  # one replicate and n_s controls a stratum
        while drawn < target:
            for s in range(k):  # draw_assignment's draws, one member a stratum
                counters[s] = draw_distinct(keys[s], counters[s], size[s], first[s], D, s, one, none)
            for qi in range(k):
                for yi in range(k):
                    if yi != qi and tg[D[qi] * P + D[yi]] < 0:
                        fill(pool, controls, kind, tab, P, D[qi], D[yi])
            v = mean_ap(D, P, tv, tg, te, vals, iwork, vals, vals, False)
            if drawn < values.shape[1]:
                values[t, drawn] = v
            drawn += 1
            reached, stop = count_draw(v, m, tol, reached, early, h)
            if stop:
                stopped = True
                break
        counts.drawn[t], counts.reached[t], counts.stopped[t] = drawn, reached, stopped
        q += k


@entry(nogil=True)
def crossed_conditional_batch(part, controls, kind, pos, keys, counts, active, target, h, tol,
                              ap):  # pragma: no cover - compiled
    """The conditional null of the queries of the crossed perturbations ``pos`` of ``part``
    (:func:`.draws.conditional_batch`'s arguments): the same draws and values, by look-ups of the
    query's own row only."""
    tab = batch_lookups(part, controls, pos)
    tv, tg, te = tab.v, tab.gt, tab.eq
    q = np.int64(0)
    one = np.int64(1)
    for t in range(pos.size):
        j = pos[t]
        pool, P = crossed_pool(part, j, controls, kind, tab)
        k = pool.observed.size
        vals = np.empty(k)
        iwork = np.empty((5, k), dtype=np.int64)
        pr = np.empty(k)
        D = pool.observed.copy()
        for qi in range(k):
            for yi in range(k):
                if yi != qi and tg[D[qi] * P + D[yi]] < 0:
                    fill(pool, controls, kind, tab, P, D[qi], D[yi])
        mean_ap(D, P, tv, tg, te, vals, iwork, ap[q:q + k], pr, True)
        size, first = pool.n + 1, pool.offset  # one replicate and n_s controls a stratum
        row = np.empty(P, dtype=np.int64)
        G = np.empty(k, dtype=np.int64)
        for i in range(k):
            g = q + i
            if not active[g]:
                continue
            counts.stopped[g] = False
            early = counts.reached[g] < h
            drawn = counts.drawn[g]
            reached = counts.reached[g]
            counter = counts.counters[g]
            u = pool.observed[i]
            D[i] = u
            if target - drawn >= ROW_DRAWS and query_row(pool, controls, kind, tab, P, i, u, size, first, row):
                m = k - 1
                while drawn < target:  # draw_distinct's draw of one member a stratum: u is never in range
                    c = 0
                    for s in range(k):
                        if s != i:
                            idx = np.int64(uniform(keys[g], counter) * size[s])
                            counter += np.uint64(1)
                            if idx >= size[s]:
                                idx = size[s] - 1
                            G[c] = row[first[s] + idx]
                            c += 1
                    v = untied_ap(G, m)
                    drawn += 1
                    reached, stop = count_draw(v, ap[g], tol, reached, early, h)
                    if stop:
                        counts.stopped[g] = True
                        break
            while drawn < target and not counts.stopped[g]:
                for s in range(k):  # draw_query's draws: a member of each other stratum's pool
                    if s != i:
                        counter = draw_distinct(keys[g], counter, size[s], first[s], D, s, one, u)
                        if tg[u * P + D[s]] < 0:
                            fill(pool, controls, kind, tab, P, u, D[s])
                v, _ = query_ap(D, i, P, tv, tg, te, vals, iwork)
                drawn += 1
                reached, stop = count_draw(v, ap[g], tol, reached, early, h)
                if stop:
                    counts.stopped[g] = True
                    break
            counts.drawn[g], counts.reached[g], counts.counters[g] = drawn, reached, counter
        q += k
