"""Compiled kernels (numba) of the crossed layout: one replicate a stratum, draws as table look-ups.

In the crossed layout (JUMP's) each replicate of perturbation t sits on its own plate beside that
plate's controls: t's pool (:func:`.pool.pool_layout`) is, for each stratum s, its one replicate and
the n_s controls there, and a draw takes one member of each stratum's pool. Query u (stratum s) then
ranks k - 1 positives, every one on another plate, among the n_s other members of its own pool. What a
draw needs of a pair (u, y) of members of different strata is fixed for the perturbation: the
similarity v = sim(u, y) and the counts (gt, eq) of u's plate-mates more similar to u than v / as
similar. :func:`.lookups.pair_counts` computes them the first time a draw asks (v from the pool's replicate rows, or
``sim`` of two controls, each unordered control pair once; the counts by a binary search in u's sorted
plate-mates and a comparison with its plate's replicate) and keeps them in a table of the pool's
member pairs (:class:`.lookups.Lookups`), so a later draw of the pair is three reads. A query's AP is then
:func:`.ranking.walk_counts` over its k - 1 look-ups (:func:`.lookups.walk_positives`, its steps for positives
that are all kept and all on other plates): the values, counts and arithmetic of
:func:`.pool.evaluate`, so every value (observed AP, null mAP, conditional null AP) is bit for bit the
general path's, drawn from the same streams with the same draws as :func:`.pool.draw_assignment` and
:func:`.draws.draw_query` (written out here for one member a stratum).

- :func:`crossed_batch`: the mAP null (each stratum's pool gives one member the label; the mean of the
  k APs), continued to ``target`` draws as :func:`.draws.continue_general` does. A perturbation with
  at least :data:`.lookups.FILL_DRAWS` draws to go (:data:`.lookups.FILL_KEPT` with a room to keep its
  counts for the later rounds) fills its whole table first (:func:`.lookups.fill_all`,
  which also finds the members whose rows have no tie) and draws by :func:`.filled.filled_mean`: k
  uniforms, and for each untied query k - 1 int16 counts ranked and k - 1 precisions read from a table
  (:func:`.filled.quotients`); the same values, bit for bit, at about a third of the cost.
- :func:`crossed_conditional_batch`: the conditional null of each query (the query kept, each positive's
  label moved within its own plate's pool), only the query's own AP computed: k - 1 look-ups a draw.
  A query with many draws to go reads its whole row first (:func:`.lookups.query_row`); without a tie in it, a
  draw is k - 1 uniforms, k - 1 counts read, sorted and summed (:func:`.lookups.untied_ap`).
- Five strata (JUMP's five replicates): a filled pool without ties and a query's row draw on scalars
  (:func:`pick`, :func:`.filled.five_mean`, :func:`.filled.rank_four`): a helper with loops inlined in a draw
  loop takes and drops a reference to each of its arrays every draw (atomic operations: half the draw).
- :func:`law_batch`: the exact conditional law of the queries about to take many draws, counted instead
  (:func:`.querylaw.law_count`) from the rows :func:`crossed_conditional_batch` gives them, where the
  row has no tie and the count stays within ``limit`` steps (the caller allows :data:`EXACT_STEPS` a
  draw replaced; a step costs about a third of a draw, so a count never costs much more than the draws
  would have): the query's counts become the law's (``reached`` choices of ``drawn`` = T, stopped),
  exact. A small entry of its own, so a run that never refines a query that far never compiles it.

A perturbation takes this path when each of its strata holds one replicate (at least two strata),
without pair rule, with the control design, and its pool's table fits :data:`MAX_TABLE`
(:func:`crossed_pools`); the others take the general kernels of :mod:`.draws`.
"""

from __future__ import annotations

import numba
import numpy as np

from ...compiled import entry
from ...streams import uniform
from .chunks import count_draw, record_draw
from .querylaw import law_count
from .filled import crossed_pool, filled_mean, five_mean, quotients, rank_four, shared_fill, untied_mean, untied_sum
from .pool import pool_most
from .lookups import FILL_DRAWS, FILL_KEPT, MAX_TABLE, ROW_DRAWS, batch_lookups, fill_all, know_all, mean_ap, query_ap, query_row, untied_ap
from .ranking import count_sorted

__all__ = ["MAX_TABLE", "pool_sizes", "EXACT_STEPS", "EXACT_MOST", "law_batch", "crossed_pools", "crossed_batch", "crossed_conditional_batch"]

#: Steps of :func:`.querylaw.law_count` allowed for each draw the exact law replaces (a step costs
#: about a third of a draw): a count that would cost more than the draws gives up, and the draws run.
EXACT_STEPS = 2

#: Most plate-mates of a crossed pool's query whose counts a filled table holds as int16 (:func:`.filled.filled_mean`);
#: a larger plate draws by the look-ups of every pair.
COUNTS_MOST = 32767

#: Most choices T of a query's exact law (counts stay exact in float64).
EXACT_MOST = float(1 << 52)


def crossed_pools(arrays, comps, comp_of, pos) -> np.ndarray:
    """(len(pos),) bool: perturbations ``pos`` of a part's :class:`.draws.PartRows` that take the crossed
    kernels: one replicate in each of their (at least two) strata, no pair rule, the control design,
    and a look-up table within :data:`MAX_TABLE` (``comps``: the part's :class:`.controls.ControlRows`,
    ``comp_of[j]`` the one of perturbation j's component)."""
    pos = np.asarray(pos, dtype=np.int64)
    if arrays.rep_codes.shape[1] or arrays.members.size or not pos.size:
        return np.zeros(pos.size, dtype=bool)
    first, last = arrays.soff[pos], arrays.soff[pos + 1]
    J = last - first  # every perturbation has a stratum
    segs = np.repeat(first - np.concatenate([[0], np.cumsum(J)[:-1]]), J) + np.arange(int(J.sum()))
    longest = np.maximum.reduceat(arrays.seg_len[segs], np.concatenate([[0], np.cumsum(J)[:-1]]))
    out = (J >= 2) & (longest == 1)
    at = np.flatnonzero(out)  # only the crossed candidates: their table's size
    P = pool_sizes(arrays, comps, comp_of, pos[at])
    out[at] = P * P <= MAX_TABLE
    return out


def pool_sizes(arrays, comps, comp_of, pos) -> np.ndarray:
    """(len(pos),) int64: the pool members P of perturbations ``pos`` (:func:`crossed_pools`'s
    arguments): in each of its strata its replicates and the controls there."""
    pos = np.asarray(pos, dtype=np.int64)
    if not pos.size:
        return np.zeros(0, dtype=np.int64)
    first = arrays.soff[pos]
    J = arrays.soff[pos + 1] - first  # every perturbation has a stratum
    start = np.concatenate([[0], np.cumsum(J)[:-1]])
    segs = np.repeat(first - start, J) + np.arange(int(J.sum()))
    members = arrays.seg_len[segs].astype(np.int64)
    comp = np.repeat(np.asarray(comp_of)[pos], J)  # each segment's component
    for c in np.unique(comp).tolist():
        at = comp == c
        members[at] += comps[c].size[arrays.seg_comp[segs[at]]]
    return np.add.reduceat(members, start)


@numba.njit(cache=True, inline="always")
def pick(key, counter, size, first):  # pragma: no cover - compiled
    """:func:`.streams.draw_distinct`'s draw of one member of a stratum's pool (``size`` members from
    ``first``, the number ``counter`` of stream ``key``), written out for one: scalars only, so a draw
    loop calling it takes no reference count."""
    idx = np.int64(uniform(key, counter) * size)
    if idx >= size:
        idx = size - 1
    return first + idx


@numba.njit(cache=True, inline="always")
def draw_one(keys, counters, size, first, D):  # pragma: no cover - compiled
    """:func:`pick` of one member of each stratum's pool (stratum s: ``size[s]`` members from
    ``first[s]``, stream ``keys[s]`` at ``counters[s]``) into D."""
    for s in range(D.size):
        D[s] = pick(keys[s], counters[s], size[s], first[s])
        counters[s] += np.uint64(1)


@entry(nogil=True)
def crossed_batch(part, controls, kind, pos, counts, target, h, tol, observed, values, shared, kept, pools,
                  build):  # pragma: no cover - compiled
    """The mAP null of the crossed perturbations ``pos`` of ``part`` (:func:`.draws.mean_batch`'s
    arguments, without pair rule or enumeration): the same draws and values, by look-ups. ``shared``:
    the component's :class:`.filled.Shared` (empty arrays: none); ``kept``: a :class:`.filled.Kept`, the
    filled pools' counts kept between rounds (a pool kept draws without filling again); ``pools``: a
    :class:`.filled.Kept` of the pools' similarities kept between rounds and nulls (:func:`.filled.crossed_pool`); with ``build``
    True this call only fills the blocks of ``shared`` from pair ``target`` on (:func:`.filled.shared_fill`),
    the one entry serving both, so no other is compiled."""
    if build:
        shared_fill(controls, kind, shared, target)
        return
    shv, shg, she, sha = shared.v, shared.gt, shared.eq, shared.at
    tab = batch_lookups(part, controls, pos)
    tv, tg, te = tab.v, tab.gt, tab.eq
    q = np.int64(0)
    none = np.int64(-1)
    for t in range(pos.size):
        j = pos[t]
        pool, P, D, vals, iwork, m = crossed_pool(part, j, controls, kind, tab, shared, pools, t, observed.ap,
                                                  observed.pr, q)
        k = D.size
        observed.maps[t] = m
        sg = part.soff[j]
        keys = part.keys[sg:sg + k]
        counters = counts.counters[q:q + k]  # one segment a replicate
        drawn = counts.drawn[t]
        reached = counts.reached[t]
        early = reached < h
        stopped = False
        saved = values[t]  # room for the draws' values (the null's histogram)
        size, first = pool.n + 1, pool.offset  # one replicate and n_s controls a stratum
        at = kept.start[t]  # its room for the filled counts, -1: none
        if target - drawn >= FILL_DRAWS or (at >= 0 and target - drawn >= FILL_KEPT):  # every pair known: draws
            # read the counts only (filled_mean)
            again = at >= 0 and kept.done[t]  # its untied counts kept from an earlier round: no fill
            untied = kept.done[:0] if again else fill_all(pool, controls, kind, tab, P, shared)
            most = pool_most(pool.n)
            if most <= COUNTS_MOST:
                quot = quotients(k - 1, most)
                small = kept.buf[at:at + P * P] if again else tg[:P * P].astype(np.int16)
                G = np.empty(k, dtype=np.int64)
                S = np.empty(k)
                every = True  # no tie in any row: draws without the tie-aware walk (untied_mean)
                for u in range(untied.size):
                    every = every and untied[u]
                if every and at >= 0 and not again:  # kept for the next rounds
                    buf = kept.buf
                    for u in range(P * P):  # a loop, not a slice assignment: numba compiles that one's shape
                        buf[at + u] = small[u]  # error message (string formatting) for seconds on a first run
                    kept.done[t] = True
                if every and k == 5:  # five strata: the draw on scalars (pick, five_mean), the loop
                    start = drawn     # holding no reference count; each draw takes one number a stream
                    while drawn < target:
                        n = np.uint64(drawn - start)
                        v = five_mean(pick(keys[0], counters[0] + n, size[0], first[0]),
                                      pick(keys[1], counters[1] + n, size[1], first[1]),
                                      pick(keys[2], counters[2] + n, size[2], first[2]),
                                      pick(keys[3], counters[3] + n, size[3], first[3]),
                                      pick(keys[4], counters[4] + n, size[4], first[4]), P, small, quot)
                        drawn, reached, stop = record_draw(saved, drawn, v, m, tol, reached, early, h)
                        if stop:
                            stopped = True
                            break
                    for s in range(k):
                        counters[s] += np.uint64(drawn - start)
                while drawn < target and every and not stopped:
                    draw_one(keys, counters, size, first, D)
                    v = untied_mean(D, P, small, quot, G, S)
                    drawn, reached, stop = record_draw(saved, drawn, v, m, tol, reached, early, h)
                    if stop:
                        stopped = True
                        break
                while drawn < target and not stopped:
                    draw_one(keys, counters, size, first, D)
                    v = filled_mean(D, P, small, tv, tg, te, untied, quot, G, S, vals, iwork)
                    drawn, reached, stop = record_draw(saved, drawn, v, m, tol, reached, early, h)
                    if stop:
                        stopped = True
                        break
        g_str, s_n, g_rep, simRP, g_row = pool.stratum, pool.n, pool.replicate, pool.sim, pool.row
        Xc, sortedRC, c_off, c_sorted = controls.X, pool.sorted_rc, controls.sorted_offset, controls.sorted_sims
        s_comp, g_ctl, rep_lo, rep_hi = pool.component_stratum, pool.control, pool.rep_lo, pool.rep_hi
        quot5 = quotients(k - 1, pool_most(s_n)) if k == 5 and drawn < target and not stopped else np.empty((0, 0))
        while drawn < target and not stopped:  # the look-ups a draw needs, as it needs them
            for s in range(k):  # draw_assignment's draws, one member a stratum (pick: draw_distinct's for one,
                D[s] = pick(keys[s], counters[s], size[s], first[s])  # on scalars, no reference count a draw)
                counters[s] += np.uint64(1)
            need = sha.shape[0] == 0  # a pair not yet known that only know_all computes
            for qi in range(k):  # a shared pair of two controls read here (know_all's read, not its call:
                u = D[qi]        # a call hands on 23 arrays, a reference count each)
                su = g_str[u]
                for yi in range(k):
                    y = D[yi]
                    i = u * P + y
                    if yi == qi or tg[i] >= 0 or need:
                        continue
                    o = sha[s_comp[su], s_comp[g_str[y]]] if g_rep[u] < 0 and g_rep[y] < 0 else none
                    if o < 0:
                        need = True
                        continue
                    a = o + g_ctl[u] * s_n[g_str[y]] + g_ctl[y]
                    w, gt, eq = shv[a], np.int64(shg[a]), np.int64(she[a])
                    for r in range(rep_lo[su], rep_hi[su]):  # the plate's replicate (count_replicates)
                        gt += simRP[r, u] > w
                        eq += simRP[r, u] == w
                    tv[i], tg[i], te[i] = w, gt, eq
            if need:
                know_all(D, P, tv, tg, te, g_str, s_n, g_rep, simRP, g_row, Xc, kind, sortedRC, c_off, c_sorted,
                         s_comp, g_ctl, rep_lo, rep_hi, shv, shg, she, sha)
            v = untied_sum(D, P, tv, tg, te, quot5, none) if quot5.shape[0] > 0 else -1.0  # five strata, no tie
            v = v / 5 if v >= 0 else mean_ap(D, P, tv, tg, te, vals, iwork, vals, vals, False)
            drawn, reached, stop = record_draw(saved, drawn, v, m, tol, reached, early, h)
            if stop:
                stopped = True
                break
        counts.drawn[t], counts.reached[t], counts.stopped[t] = drawn, reached, stopped
        q += k


@entry(nogil=True)
def crossed_conditional_batch(part, controls, kind, pos, keys, counts, active, target, h, tol, ap, lawful, rows,
                              shape, untied, shared, pools):  # pragma: no cover - compiled
    """The conditional null of the queries of the crossed perturbations ``pos`` of ``part``
    (:func:`.draws.conditional_batch`'s arguments): the same draws and values, by look-ups of the
    query's own row only.

    An active query marked ``lawful`` draws nothing: its row goes to ``rows[g]`` (:func:`.lookups.query_row`,
    ``untied[g]`` whether it has no tie), its pool's layout to ``shape[g]`` (its position i among the
    perturbation's queries, the strata k, then each stratum's first member and size), for
    :func:`law_batch` to count its exact law. ``shared``: as :func:`crossed_batch`'s; no draw here reads
    it (a query is a replicate, and its observed assignment holds replicates only), so the null hands
    none (:data:`..nulls.pooltables.NO_SHARED`); ``pools``: as :func:`crossed_batch`'s, the same rooms."""
    tab = batch_lookups(part, controls, pos)
    tv, tg, te = tab.v, tab.gt, tab.eq
    q = np.int64(0)
    pr = np.empty(ap.size)  # the observed queries' P@R, unused here
    for t in range(pos.size):
        j = pos[t]
        pool, P, D, vals, iwork, _ = crossed_pool(part, j, controls, kind, tab, shared, pools, t, ap, pr, q)
        k = D.size
        g_str, s_n, g_rep, simRP, sortedRC = pool.stratum, pool.n, pool.replicate, pool.sim, pool.sorted_rc
        size, first = pool.n + 1, pool.offset  # one replicate and n_s controls a stratum
        row = np.empty(P, dtype=np.int64)
        G = np.empty(k, dtype=np.int64)
        quot = quotients(k - 1, pool_most(s_n)) if k == 5 else np.empty((0, 0))  # rank_four's precisions
        for i in range(k):
            g = q + i
            if not active[g]:
                continue
            if lawful[g]:  # its exact law is counted instead (law_batch)
                untied[g] = query_row(pool, tab, P, i, pool.observed[i], size, first, rows[g])
                shape[g, 0], shape[g, 1] = i, k
                for s in range(k):
                    shape[g, 2 + s], shape[g, 2 + k + s] = first[s], size[s]
                continue
            counts.stopped[g] = False
            early = counts.reached[g] < h
            drawn = counts.drawn[g]
            reached = counts.reached[g]
            counter = counts.counters[g]
            u = pool.observed[i]
            D[i] = u
            ru = g_rep[u]
            nu = s_n[g_str[u]]
            o0, o1, o2, o3 = 0 + (i <= 0), 1 + (i <= 1), 2 + (i <= 2), 3 + (i <= 3)  # five strata: the others
            if target - drawn >= ROW_DRAWS and query_row(pool, tab, P, i, u, size, first, row):
                m = k - 1
                if k == 5:  # four positives: the draw on scalars (pick, rank_four), as untied_ap adds them
                    while drawn < target:
                        v = rank_four(row[np.uint64(pick(keys[g], counter, size[o0], first[o0]))],  # unsigned: no
                                      row[np.uint64(pick(keys[g], counter + np.uint64(1), size[o1], first[o1]))],
                                      row[np.uint64(pick(keys[g], counter + np.uint64(2), size[o2], first[o2]))],
                                      row[np.uint64(pick(keys[g], counter + np.uint64(3), size[o3], first[o3]))],
                                      quot) / m  # test for a negative index (rank_four)
                        counter += np.uint64(4)
                        drawn += 1
                        reached, stop = count_draw(v, ap[g], tol, reached, early, h)
                        if stop:
                            counts.stopped[g] = True
                            break
                while drawn < target and not counts.stopped[g]:  # draw_distinct's draw of one member a stratum: u is never in range
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
            b = u * P
            srow = sortedRC[ru, :nu]
            while drawn < target and not counts.stopped[g]:
                for s in range(k):  # draw_query's draws: a member of each other stratum's pool (pick: draw_distinct's
                    if s != i:      # for one, on scalars; u is never in range)
                        y = pick(keys[g], counter, size[s], first[s])
                        counter += np.uint64(1)
                        D[s] = y
                        if tg[b + y] < 0:  # pair_counts's steps for a replicate query (u is one), without
                            w = simRP[ru, y]  # handing on its 22 arrays (each costs two atomic reference counts)
                            tv[b + y] = w
                            tg[b + y], te[b + y] = count_sorted(srow, w)
                v = untied_sum(D, P, tv, tg, te, quot, i) if k == 5 else -1.0  # four untied positives: rank_four
                if v < 0:
                    v, _ = query_ap(D, i, P, tv, tg, te, vals, iwork)
                drawn += 1
                reached, stop = count_draw(v, ap[g], tol, reached, early, h)
                if stop:
                    counts.stopped[g] = True
                    break
            counts.drawn[g], counts.reached[g], counts.counters[g] = drawn, reached, counter
        q += k



@entry(nogil=True)
def law_batch(rows, shape, which, ap, tol, limit, counts, exact):  # pragma: no cover - compiled
    """The exact conditional law of the queries ``which`` (their rows and pool layouts as
    :func:`crossed_conditional_batch` gives them in ``rows`` and ``shape``; ``ap`` their observed APs):
    the choices reaching the observed AP counted (:func:`.querylaw.law_count`) within ``limit`` steps;
    where that succeeds the query's counts become the law's (``drawn`` = T, ``reached`` the count,
    ``stopped``) and ``exact`` True."""
    for g in range(which.size):
        if not which[g]:
            continue
        i, k = shape[g, 0], shape[g, 1]
        first = shape[g, 2:2 + k].copy()
        size = shape[g, 2 + k:2 + 2 * k].copy()
        T = 1.0
        for s in range(k):
            if s != i:
                T *= size[s]
        if T < EXACT_MOST:
            hits, _ = law_count(rows[g], first, size, i, ap[g], tol, limit[g])
            if hits >= 0:
                counts.drawn[g], counts.reached[g], counts.stopped[g] = np.int64(T), hits, True
                exact[g] = True
