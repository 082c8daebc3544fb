"""Compiled kernels (numba) of the crossed layout's look-ups: a pool's member pairs, filled once.

The tables and steps :mod:`.crossed`'s batch kernels read (see there): :class:`Lookups` (a pool's member
pairs: similarity, and the counts among the query's plate-mates), :func:`pair_counts` (one pair, the
first time a draw needs it) and :func:`fill_all` (every pair, before a long run of draws),
:func:`query_ap` / :func:`mean_ap` (an assignment's APs from its look-ups, :func:`walk_positives`), and a
query's whole row (:func:`query_row`) with the AP of a draw without ties (:func:`untied_ap`). The values
and arithmetic are :func:`.pool.evaluate`'s, so every value is bit for bit the general path's.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import inner
from .pool import pool_most
from .ranking import add_query, count_replicates, count_sorted, walk_blocks
from .similarity import dot4, sim, sim_rows
from .sort import insertion_sort

__all__ = ["MAX_TABLE", "Lookups", "lookups", "reset", "value_set", "tied_values", "pair_counts", "fill_all", "FILL_DRAWS", "FILL_KEPT",
           "walk_positives", "query_ap", "mean_ap", "batch_lookups", "control_sims", "know_all", "query_row", "untied_ap",
           "ROW_DRAWS"]

#: Most member pairs of one pool's look-up table (P * P for P pool members: 16 bytes each, 32 MB): the
#: crossed kernels' (:func:`.crossed.crossed_pools`) and :func:`.draws.pair_memo`'s.
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


@numba.njit(cache=True, inline="always")
def value_set(count):  # pragma: no cover - compiled
    """Room for sets of up to ``count`` float64 values each (:func:`tied_values`), one at a time, each marked by
    an integer >= 0: (width, values, marks), 2 ** width >= 2 * count slots, every mark -1."""
    width = np.int64(4)
    while (np.int64(1) << width) < 2 * count:
        width += 1
    return width, np.empty(np.int64(1) << width), np.full(np.int64(1) << width, -1, dtype=np.int64)


@inner()
def tied_values(tv, at, count, skip_lo, skip_hi, width, seen, mark, set_mark):  # pragma: no cover - compiled
    """True when two of the values ``tv[at + y]``, y in 0 .. count - 1 but not in skip_lo .. skip_hi - 1, are
    equal (a NaN equals nothing, as under ``==``): each value looked up in, then added to, the set
    ``set_mark`` of a :func:`value_set` (``width``, ``seen``, ``mark``; open addressing on a multiplicative
    hash of the value's bits, 0.0 and -0.0 hashed alike). A set's slots are those holding its mark, so a
    new set needs no clearing. Called once a row: a helper called for each value costs more than the
    look-up (its arrays' reference counts)."""
    bits = tv.view(np.uint64)
    last = (np.int64(1) << width) - 1
    for y in range(count):
        if skip_lo <= y < skip_hi:
            continue
        v = tv[at + y]
        h = np.int64(((np.uint64(0) if v == 0.0 else bits[at + y]) * np.uint64(0x9E3779B97F4A7C15))
                     >> np.uint64(64 - width))
        while mark[h] == set_mark:
            if seen[h] == v:
                return True
            h = (h + 1) & last
        mark[h] = set_mark
        seen[h] = v
    return False


@numba.njit(cache=True, inline="always")
def pair_counts(u, y, P, tv, tg, te, g_str, s_n, g_rep, simRP, g_row, Xc, kind, sortedRC, c_off, c_sorted, s_comp,
                g_ctl, rep_lo, rep_hi):  # pragma: no cover - compiled
    """Compute the look-up (u, y) into ``tv``, ``tg``, ``te`` (a :class:`Lookups`' arrays): v = sim(u, y),
    from the pool's replicate rows or ``sim`` of two controls (an unordered pair once, for both
    directions: ``sim`` is exactly symmetric); gt / eq the members of u's pool (u excluded) more similar
    to u than v / as similar, as :func:`.pool.evaluate` counts them (a binary search in u's sorted
    plate-mates and a comparison with its plate's replicate). Arrays come by name, not as tuples (a
    tuple handed on costs a reference count per array); callers call it only for a pair not yet known
    (``tg`` < 0; the test inside it slowed the draw loops). A pair of two controls in a block of a
    :class:`.filled.Shared` is read from it instead (:func:`know_all`, :func:`fill_all`)."""
    i = u * P + y
    v = tv[i]
    su = g_str[u]
    n = s_n[su]
    ru = g_rep[u]
    if v != v:
        if ru >= 0:
            v = simRP[ru, y]
        elif g_rep[y] >= 0:
            v = simRP[g_rep[y], u]
        else:
            v = sim(Xc, g_row[u], Xc, g_row[y], kind)
            tv[y * P + u] = v  # the pair's other direction
        tv[i] = v
    if ru >= 0:
        g, e = count_sorted(sortedRC[ru, :n], v)
    else:
        rs = c_off[s_comp[su]] + g_ctl[u] * (n - 1)
        g, e = count_sorted(c_sorted[rs:rs + n - 1], v)
        g, e = count_replicates(simRP, u, rep_lo[su], rep_hi[su], ru, v, g, e)
    tg[i] = g
    te[i] = e


#: A perturbation whose round has at least this many mAP draws left fills its whole table first
#: (:func:`fill_all`): one call, not one a pair.
FILL_DRAWS = 512
#: ... or this many, when a room keeps its filled counts for the later rounds (:class:`.filled.Kept`): a fill
#: costs about 450 lazy draws, and most pools refined to 400 draws are refined further, so the fill is
#: paid once, not lazily at 400 and again at 1,600.
FILL_KEPT = 256


@inner()
def fill_all(pool, controls, kind, tab, P, shared):  # pragma: no cover - compiled
    """Every look-up of the pool (pairs of members of different strata), the values :func:`pair_counts`
    gives: two strata's controls read from a :class:`.filled.Shared` block (``shared``) or computed a block
    at a time by :func:`.similarity.sim_rows` (the bits of ``sim``), the others from the replicate rows;
    then u's row, each pair's counts by a binary search in u's sorted plate-mates (and its plate's
    replicate). Returns (P,) bool: member u's row has no tie (every eq 0, and no two members of
    other strata as similar to u, found by a set of the row's values, :func:`tied_values`); u's AP as a query
    is then :func:`untied_ap` of its positives' gt (:func:`.filled.filled_mean`)."""
    tv, tg, te = tab.v, tab.gt, tab.eq
    g_str, s_n, g_rep, simRP = pool.stratum, pool.n, pool.replicate, pool.sim
    sortedRC, c_off, c_sorted = pool.sorted_rc, controls.sorted_offset, controls.sorted_sims
    s_comp, g_ctl, rep_lo, rep_hi = pool.component_stratum, pool.control, pool.rep_lo, pool.rep_hi
    J = s_n.size
    most = pool_most(s_n)
    block = np.empty((most, most))
    zero = np.int64(0)  # not a literal 0: a literal argument would compile sim_rows once more
    sv, sg, se = shared.v, shared.gt, shared.eq
    held = np.full((J, J), -1, dtype=np.int64)  # the shared block of two strata, -1: none
    for s in range(J if shared.at.shape[0] > 0 else 0):
        for s2 in range(J):
            held[s, s2] = shared.at[s_comp[s], s_comp[s2]] if s2 != s else -1
    for s in range(J):  # two strata's controls
        a0 = controls.start[s_comp[s]]
        ga = pool.offset[s] + rep_hi[s] - rep_lo[s]  # the stratum's first control member
        for s2 in range(s + 1, J):
            if held[s, s2] >= 0:  # both orders held (pooltables.shared_table)
                continue
            c0 = controls.start[s_comp[s2]]
            gc = pool.offset[s2] + rep_hi[s2] - rep_lo[s2]
            sim_rows(controls.X, a0, a0 + s_n[s], controls.X, controls.XT, c0, c0 + s_n[s2], kind, block, zero, zero)
            for a in range(s_n[s]):
                for c in range(s_n[s2]):
                    tv[(ga + a) * P + gc + c] = block[a, c]
                    tv[(gc + c) * P + ga + a] = block[a, c]  # sim is exactly symmetric
    untied = np.ones(P, dtype=np.bool_)
    width, seen, mark = value_set(P)
    for u in range(P):
        su = g_str[u]
        n = s_n[su]
        ru = g_rep[u]
        lo, hi = rep_lo[su], rep_hi[su]  # read once: for the compiler a store to the table might change them
        if ru >= 0:
            row = sortedRC[ru, :n]
        else:
            rs = c_off[s_comp[su]] + g_ctl[u] * (n - 1)
            row = c_sorted[rs:rs + n - 1]
        free = True
        for s2 in range(J):
            if s2 == su:
                continue
            o = held[su, s2] if ru < 0 else np.int64(-1)  # two controls of a shared block
            base = o + g_ctl[u] * s_n[s2]
            first = pool.offset[s2]
            for y in range(first, first + rep_hi[s2] - rep_lo[s2] + s_n[s2]):
                i = u * P + y
                ry = g_rep[y]
                if o >= 0 and ry < 0:  # the shared counts
                    a = base + g_ctl[y]
                    v = sv[a]
                    g, e = np.int64(sg[a]), np.int64(se[a])
                else:
                    v = simRP[ru, y] if ru >= 0 else (simRP[ry, u] if ry >= 0 else tv[i])
                    g, e = count_sorted(row, v)
                tv[i] = v
                g, e = count_replicates(simRP, u, lo, hi, ru, v, g, e)  # a control: its plate's replicate
                tg[i] = g
                te[i] = e
                free = free and e == 0  # no tie with a plate-mate
        own = pool.offset[su]  # nor with a member of another stratum
        untied[u] = free and not tied_values(tv, u * P, P, own, own + hi - lo + n, width, seen, mark, u)
    return untied


@numba.njit(cache=True, inline="always")
def walk_positives(vals, base_gt, base_eq, order, m):  # pragma: no cover - compiled
    """:func:`.ranking.walk_counts` of m positives, every one kept and none in the query's stratum (its
    ``same`` all 0, ``kept`` all 1): the same sort and block walk (:func:`.ranking.walk_blocks`, nothing
    taken out), so the same bits, without the two masks' loops."""
    for i in range(m):
        j = i
        while j > 0 and vals[order[j - 1]] < vals[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    return walk_blocks(vals, order, m, base_gt, base_eq, order, 0)


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
        total, scored = add_query(ap, pr, qi, total, scored, want, ap_out, pr_out)
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


@inner()
def control_sims(tv, P, Xc, g_row, kind, u0, y0, u1, y1, u2, y2, u3, y3):  # pragma: no cover - compiled
    """The similarities of four pairs (u, y) of a pool's controls (dot products: kinds 0 and 2) into the
    look-up table ``tv``, both directions, by :func:`.similarity.dot4`: the bits of ``sim``."""
    d0, d1, d2, d3 = dot4(Xc, g_row[u0], g_row[y0], g_row[u1], g_row[y1], g_row[u2], g_row[y2], g_row[u3], g_row[y3])
    if kind == 2:
        d0, d1, d2, d3 = abs(d0), abs(d1), abs(d2), abs(d3)
    tv[u0 * P + y0] = d0
    tv[y0 * P + u0] = d0
    tv[u1 * P + y1] = d1
    tv[y1 * P + u1] = d1
    tv[u2 * P + y2] = d2
    tv[y2 * P + u2] = d2
    tv[u3 * P + y3] = d3
    tv[y3 * P + u3] = d3


@inner()
def know_all(D, P, tv, tg, te, g_str, s_n, g_rep, simRP, g_row, Xc, kind, sortedRC, c_off, c_sorted, s_comp, g_ctl,
             rep_lo, rep_hi, sv, sg, se, sat):  # pragma: no cover - compiled
    """Every look-up (D[qi], D[yi]), qi != yi, of assignment D known: :func:`pair_counts` (its arguments)
    where it is not yet. An inner kernel, compiled once: copied into both crossed entries (through
    :func:`.filled.crossed_pool`) it added about 8 s (14%) to a fresh install's first crossed run.

    A pair of two controls in a block of a :class:`.filled.Shared` (``sv``, ``sg``, ``se``, ``sat``) is
    read here as :func:`pair_counts` would count it, without calling it (a call handed 22 arrays takes and
    drops a reference to each: about 0.3 us, ten times the look-up). The other pairs of two controls not
    yet known have their similarities computed first, four at a time (:func:`control_sims`; kinds 0 and
    2), with ``sim``'s bits: on long rows (737 features) ``sim`` one at a time was 40% of early rounds."""
    shared = sat.shape[0] > 0
    if kind == 0 or kind == 2:
        pending = 0
        u0 = y0 = u1 = y1 = u2 = y2 = np.int64(0)
        for qi in range(D.size):
            u = D[qi]
            if g_rep[u] >= 0:
                continue
            for yi in range(qi + 1, D.size):
                y = D[yi]
                if g_rep[y] >= 0 or tv[u * P + y] == tv[u * P + y]:
                    continue
                if shared and sat[s_comp[g_str[u]], s_comp[g_str[y]]] >= 0:
                    continue
                if pending == 0:
                    u0, y0 = u, y
                elif pending == 1:
                    u1, y1 = u, y
                elif pending == 2:
                    u2, y2 = u, y
                else:
                    control_sims(tv, P, Xc, g_row, kind, u0, y0, u1, y1, u2, y2, u, y)
                    pending = -1
                pending += 1
        if pending > 0:  # one to three left: the first pair again in the free places (the same value)
            if pending < 2:
                u1, y1 = u0, y0
            if pending < 3:
                u2, y2 = u0, y0
            control_sims(tv, P, Xc, g_row, kind, u0, y0, u1, y1, u2, y2, u0, y0)
    for qi in range(D.size):
        u = D[qi]
        base = u * P
        su = g_str[u]
        for yi in range(D.size):
            y = D[yi]
            i = base + y
            if yi == qi or tg[i] >= 0:
                continue
            sy = g_str[y]
            o = sat[s_comp[su], s_comp[sy]] if shared and g_rep[u] < 0 and g_rep[y] < 0 else -1
            if o >= 0:
                a = o + g_ctl[u] * s_n[sy] + g_ctl[y]
                v = sv[a]
                tv[i] = v
                g, e = count_replicates(simRP, u, rep_lo[su], rep_hi[su], g_rep[u], v, np.int64(sg[a]),
                                        np.int64(se[a]))  # pair_counts's count of the plate's replicate
                tg[i] = g
                te[i] = e
            else:
                pair_counts(u, y, P, tv, tg, te, g_str, s_n, g_rep, simRP, g_row, Xc, kind, sortedRC, c_off,
                            c_sorted, s_comp, g_ctl, rep_lo, rep_hi)


#: A query whose round has at least this many draws left reads its whole row first (:func:`query_row`).
ROW_DRAWS = 32


@inner()  # once a pool (a query row), not a draw: compiled once, not copied into each call site
def query_row(pool, tab, P, qi, u, size, first, row):  # pragma: no cover - compiled
    """Fill ``row`` with the count gt (plate-mates of query u, a replicate, more similar to it) of every member
    of every other stratum's pool, stratum by stratum (stratum s at ``first[s]``, ``size[s]`` members,
    as the pool lays them out); returns True when the row has no tie: every eq is 0 and no two members
    of different strata are as similar to u. A draw's AP then depends on its positives' gt only
    (:func:`untied_ap`)."""
    k = size.size
    tv, tg, te = tab.v, tab.gt, tab.eq
    g_str, s_n, g_rep, simRP, sortedRC = pool.stratum, pool.n, pool.replicate, pool.sim, pool.sorted_rc
    ru = g_rep[u]
    nu = s_n[g_str[u]]
    for s in range(k):
        if s == qi:
            continue
        for y in range(first[s], first[s] + size[s]):
            i = u * P + y
            if tg[i] < 0:  # pair_counts's steps for a replicate query, without handing on its 22 arrays
                v = simRP[ru, y]
                tv[i] = v
                tg[i], te[i] = count_sorted(sortedRC[ru, :nu], v)
            row[y] = tg[i]
            if te[i] != 0:
                return False
    width, seen, mark = value_set(P)
    return not tied_values(tv, u * P, P, first[qi], first[qi] + size[qi], width, seen, mark, 0)


@numba.njit(cache=True, inline="always")
def untied_ap(G, m):  # pragma: no cover - compiled
    """AP of m positives without ties from their counts G (sorted here, ascending): the sum over the
    sorted counts of (b + 1) / (G[b] + b + 1), over m; :func:`walk_positives`'s operations for blocks of
    one positive, in its order (the value order is the count order), so the same bits."""
    insertion_sort(G, m)
    total = 0.0
    for b in range(m):
        total += (b + 1.0) / (G[b] + b + 1.0)
    return total / m
