"""Compiled kernels (numba) of one perturbation's pool: its layout and the evaluation of one assignment.

Pool layout of perturbation t (:class:`Pool`, built by :func:`pool_layout`): for each stratum s of t,
in order, the k_s replicates of t there followed by the n_s controls there. An *assignment* D lists,
for each stratum in the same order, the k_s pool members that carry t's label; the observed
assignment is t's own replicates. With negatives="others" (:func:`member_pool`) a stratum's pool is
every profile there, held in the component's control tables, t's replicates among them: the pool of
stratum s is its n_s profiles, an assignment draws k_s of them, the observed one is the replicates'
positions, and every pair is counted on the control tables. :func:`evaluate` scores one assignment (every query's tie-aware AP
and Precision@R from counts over the pools, and the mean AP), with the pair rule as a mask.

Everything here is deterministic scalar code (no BLAS, no threads, no fastmath), so the same inputs
give the same bits in any process: in-process and dask runs agree exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import inner
from ...streams import draw_distinct
from .controls import pair_rank
from .ranking import add_query, count_replicates, count_sorted, equal_below, walk_counts
from .similarity import sim, sim_rows
from .sort import sort_work, stable_argsort

__all__ = ["Replicates", "Pool", "pool_members", "pool_most", "pool_layout", "member_pool", "replicate_sims", "replicate_ranks", "rank_members",
           "replicate_counts", "shares_code", "evaluate", "draw_assignment", "NO_CODES", "RANK_TABLE_RATIO"]

#: ``codes`` of a pool without a pair rule: no column.
NO_CODES = np.zeros((0, 0), dtype=np.int64)


class Replicates(NamedTuple):
    """The replicates of one perturbation t, grouped by stratum (``stratum`` non-decreasing)."""

    X: np.ndarray               #: (k, d) prepared replicate rows of t
    stratum: np.ndarray         #: (k,) int64 position s of each replicate's stratum among t's strata
    strata: np.ndarray          #: (J,) int64 t's strata as indices j into the component (``ControlRows``)


class Pool(NamedTuple):
    """The pool of one perturbation t (``_permute.pool_layout``): for each stratum s of t, in order,
    its k_s replicates then its n_s controls; g indexes the P pool members."""

    stratum: np.ndarray         #: (P,) position s of member g's stratum among t's strata
    replicate: np.ndarray       #: (P,) replicate index r of member g (row of the replicate arrays), -1 for a control
    row: np.ndarray             #: (P,) row of member g in ``ControlRows.X``, -1 for a replicate
    control: np.ndarray         #: (P,) index c of member g among its stratum's controls, -1 for a replicate
    n: np.ndarray               #: (J,) controls n_s of each stratum of t
    component_stratum: np.ndarray  #: (J,) index j of stratum s in the component (``ControlRows``)
    rep_lo: np.ndarray          #: (J,) replicates of stratum s are rep_lo[s] .. rep_hi[s] - 1
    rep_hi: np.ndarray
    offset: np.ndarray          #: (J,) first pool member of stratum s
    sim: np.ndarray             #: (k, P) similarity of replicate r to member g
    sorted_rc: np.ndarray       #: (k, max n_s) similarities of replicate r to its stratum's controls, ascending
    gt: np.ndarray              #: (k, P) controls of r's stratum more similar to r than member g (same stratum only)
    eq: np.ndarray              #: (k, P) controls of r's stratum as similar to r as member g (same stratum only)
    #: (one stratum: ``sorted_rc``, ``gt`` and ``eq`` have no columns; :func:`replicate_counts` counts when asked)
    observed: np.ndarray        #: (k,) the observed assignment: pool index of each replicate of t
    take: np.ndarray            #: (J,) members of stratum s's pool an assignment draws (k_s)


@numba.njit(cache=True, inline="always")
def replicate_sims(Xr, Xc, XT, g_rep, g_row, kind):  # pragma: no cover - compiled
    """(k, P) similarity of replicate r to pool member g: ``sim(Xr, r, ., .)`` of its row.

    Each run of consecutive control rows of the pool goes to :func:`._sims.sim_rows` (four replicates
    against ``XT``, the control rows transposed); replicates against replicates by ``sim``. The values
    are bit for bit those of ``sim``.
    """
    k = Xr.shape[0]
    P = g_rep.size
    out = np.empty((k, P))
    zero = np.int64(0)  # not a literal 0: a literal argument would compile sim_rows once more
    g = np.int64(0)
    while g < P:
        if g_rep[g] >= 0:
            for r in range(k):
                out[r, g] = sim(Xr, r, Xr, g_rep[g], kind)
            g += 1
            continue
        e = g + 1
        while e < P and g_rep[e] < 0 and g_row[e] == g_row[e - 1] + 1:
            e += 1
        sim_rows(Xr, zero, k, Xc, XT, g_row[g], g_row[g] + e - g, kind, out, zero, g)
        g = e
    return out


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
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


#: A single-stratum pool keeps a rank table of its replicates' rows when draws * k (k - 1) >= this * n:
#: a replicate is one of the k queries of about k / n of the draws and then counts its k - 1 positives'
#: ranks over the n controls, while the table sorts k rows of n once (about this many comparisons a value).
RANK_TABLE_RATIO = 50


@numba.njit(cache=True, inline="always")
def pool_most(s_n):  # pragma: no cover - compiled
    """The most controls n_s of any stratum of a pool (0 for no stratum): the width of its sorted rows."""
    most = np.int64(0)
    for s in range(s_n.size):
        most = max(most, s_n[s])
    return most


@inner()
def pool_members(reps, controls):  # pragma: no cover - compiled
    """The members of :func:`pool_layout`'s :class:`Pool`, without its similarities: (stratum, replicate,
    row, control, n, rep_lo, rep_hi, offset, observed), as the :class:`Pool` names them."""
    rep_str, t_strata = reps.stratum, reps.strata
    cstart, csize = controls.start, controls.size
    k = rep_str.size
    J = t_strata.size
    s_n = np.empty(J, dtype=np.int64)
    s_lo = np.zeros(J, dtype=np.int64)
    s_hi = np.zeros(J, dtype=np.int64)
    poff = np.empty(J, dtype=np.int64)
    for s in range(J):
        s_n[s] = csize[t_strata[s]]
        s_lo[s] = k
    for r in range(k):
        s = rep_str[r]
        s_lo[s] = min(s_lo[s], r)
        s_hi[s] = max(s_hi[s], r + 1)
    P = 0
    for s in range(J):
        poff[s] = P
        P += (s_hi[s] - s_lo[s]) + s_n[s]
    g_str = np.empty(P, dtype=np.int64)
    g_rep = np.full(P, -1, dtype=np.int64)
    g_row = np.full(P, -1, dtype=np.int64)
    g_ctl = np.full(P, -1, dtype=np.int64)
    for s in range(J):
        g = poff[s]
        for r in range(s_lo[s], s_hi[s]):
            g_str[g] = s
            g_rep[g] = r
            g += 1
        for c in range(s_n[s]):
            g_str[g] = s
            g_row[g] = cstart[t_strata[s]] + c
            g_ctl[g] = c
            g += 1
    D0 = np.empty(k, dtype=np.int64)
    for r in range(k):
        s = rep_str[r]
        D0[r] = poff[s] + r - s_lo[s]
    return g_str, g_rep, g_row, g_ctl, s_n, s_lo, s_hi, poff, D0


@inner()
def pool_layout(reps, controls, kind, draws):  # pragma: no cover - compiled
    """The :class:`Pool` of perturbation t: layout (:func:`pool_members`), replicate-to-pool similarities,
    sorted replicate-to-control rows and their ranks (``reps`` a ``Replicates``, ``controls`` a
    ``ControlRows``).

    ``draws``: about how many assignments will be evaluated on the pool. A pool over one stratum keeps
    no rank table when few are (``RANK_TABLE_RATIO``): a replicate query then counts its ranks when
    drawn (:func:`replicate_counts`, the same values)."""
    Xr, rep_str = reps.X, reps.stratum
    k = Xr.shape[0]
    J = reps.strata.size
    g_str, g_rep, g_row, g_ctl, s_n, s_lo, s_hi, poff, D0 = pool_members(reps, controls)
    P = g_str.size
    simRP = replicate_sims(Xr, controls.X, controls.XT, g_rep, g_row, kind)
    nmax = pool_most(s_n)
    if J == 1 and draws * k * (k - 1) < RANK_TABLE_RATIO * s_n[0]:  # counts made when drawn instead
        sortedRC = np.empty((k, 0))
        gtR = np.zeros((k, 0), dtype=np.int64)
        eqR = np.zeros((k, 0), dtype=np.int64)
    else:
        sortedRC = np.empty((k, nmax))
        gtR = np.zeros((k, P), dtype=np.int64)
        eqR = np.zeros((k, P), dtype=np.int64)
        replicate_ranks(simRP, rep_str, poff, s_lo, s_hi, s_n, sortedRC, gtR, eqR)
    return Pool(g_str, g_rep, g_row, g_ctl, s_n, reps.strata, s_lo, s_hi, poff, simRP, sortedRC, gtR, eqR, D0,
                s_hi - s_lo)


@inner()
def member_pool(reps, members, controls):  # pragma: no cover - compiled
    """The :class:`Pool` of perturbation t when every profile of a stratum is in its pool
    (negatives="others"): stratum s's pool is the component's stratum ``reps.strata[s]`` of
    ``controls`` (every profile there, t's replicates among them: ``members[r]`` is replicate r's
    position in its stratum's pool). No member is a replicate in the layout's sense (empty replicate
    ranges, no replicate similarity table), so :func:`evaluate` counts every pair on the control
    tables; an assignment draws ``take[s]`` = k_s members of each stratum; the observed assignment is
    the replicates' positions."""
    t_strata = reps.strata
    k = reps.X.shape[0]
    J = t_strata.size
    s_n = np.empty(J, dtype=np.int64)
    poff = np.empty(J, dtype=np.int64)
    take = np.zeros(J, dtype=np.int64)
    P = np.int64(0)
    for s in range(J):
        s_n[s] = controls.size[t_strata[s]]
        poff[s] = P
        P += s_n[s]
    for r in range(k):
        take[reps.stratum[r]] += 1
    g_str = np.empty(P, dtype=np.int64)
    g_row = np.empty(P, dtype=np.int64)
    g_ctl = np.empty(P, dtype=np.int64)
    for s in range(J):
        for c in range(s_n[s]):
            g = poff[s] + c
            g_str[g] = s
            g_row[g] = controls.start[t_strata[s]] + c
            g_ctl[g] = c
    D0 = np.empty(k, dtype=np.int64)
    for r in range(k):
        D0[r] = poff[reps.stratum[r]] + members[r]
    none = np.zeros(J, dtype=np.int64)
    return Pool(g_str, np.full(P, -1, dtype=np.int64), g_row, g_ctl, s_n, t_strata.copy(), none, none.copy(), poff,
                np.empty((k, 0)), np.empty((k, 0)), np.zeros((k, 0), dtype=np.int64), np.zeros((k, 0), dtype=np.int64),
                D0, take)


@numba.njit(cache=True, inline="always")
def replicate_counts(pool, ru, su, y, v):  # pragma: no cover - compiled
    """(gt, eq) of replicate ru (stratum s = su) against member y of its stratum's pool, similarity v:
    the controls of s more similar to ru than v / as similar. ``pool.gt[ru, y]`` / ``pool.eq[ru, y]``
    where the pool kept its rank table, else counted over the n_s controls (one stratum: a replicate
    is a query in few draws, so counting there costs less than sorting every replicate's row)."""
    if pool.gt.shape[1] > 0:
        return pool.gt[ru, y], pool.eq[ru, y]
    lo = pool.offset[su] + pool.rep_hi[su] - pool.rep_lo[su]
    row = pool.sim[ru]
    gt = np.int64(0)
    eq = np.int64(0)
    for g in range(lo, lo + pool.n[su]):
        w = row[g]
        gt += w > v
        eq += w == v
    return gt, eq


@numba.njit(cache=True, inline="always")
def shares_code(codes, u, y):  # pragma: no cover - compiled
    """True when pool members u and y have the same code in at least one column of ``codes``."""
    for c in range(codes.shape[1]):
        if codes[u, c] == codes[y, c]:
            return True
    return False


@inner()
def evaluate(D, want, ap_out, pr_out, fwork, iwork, controls, pool, kind, codes, only, tv, tg, te):  # pragma: no cover - compiled
    """Mean AP of assignment D (k pool indices); per-query AP and P@R into ap_out/pr_out if ``want``.
    ``only`` >= 0 scores query ``only`` alone (a query's conditional null needs its own AP only: one
    query's k - 1 look-ups a draw rather than the k queries' k (k - 1)); its values are the bits the whole
    evaluation gives it, and the mean is over that query. ``only`` = -1 scores every query.

    ``tv``, ``tg``, ``te``: a memo (:func:`.draws.pair_memo`) of the pairs (u, y) of members of different
    strata (at u * P + y; ``tv`` NaN, ``tg`` -1 until known), or three empty arrays. Such a pair's value and
    counts are the pool's, whatever the draw: a draw reads what another computed (the same values), and
    the similarity of two controls is kept for (y, u) too (``sim`` is exactly symmetric).

    Query u (stratum s) ranks the other members of D (positives, any stratum) and the members of
    pool_s outside D (negatives). Counts over pool_s: for a control query and a control positive of
    the same stratum, an O(1) lookup in the ranks of u's sorted row; for a replicate query, the
    ranks of its row (``replicate_counts``); across strata, a binary search in u's sorted
    row. The k_s replicates of t in pool_s are compared one by one.

    The pair rule (``positives_differ_by``) is a mask: ``codes`` (P, C) holds each pool member's codes
    (C = 0 for no rule); a member of D sharing a code with query u in any column is left out of u's
    ranking (neither positive nor negative). A query keeping no positive has no AP (NaN) and is left
    out of the mean; the mean is 0 if no query keeps one. Without a rule every query keeps its k - 1
    positives and the mean is over the k queries.

    ``controls`` is a :class:`.controls.ControlRows`, ``pool`` a :class:`Pool`; ``fwork`` (1, k) and
    ``iwork`` (5, k) are workspaces.
    """
    Xc, sorted_buf, soff = controls.X, controls.sorted_sims, controls.sorted_offset
    ranks, poff = controls.pairs.view(np.int16), controls.pairs_offset
    g_str, g_rep, g_row, g_ctl = pool.stratum, pool.replicate, pool.row, pool.control
    s_n, s_stratum, s_rep_lo, s_rep_hi = pool.n, pool.component_stratum, pool.rep_lo, pool.rep_hi
    simRP, sortedRC = pool.sim, pool.sorted_rc
    k = D.size
    P = g_str.size
    memo = tg.size > 0
    vals = fwork[0]
    same, base_gt, base_eq, order, kept = iwork[0], iwork[1], iwork[2], iwork[3], iwork[4]
    total = 0.0
    scored = np.int64(0)
    for qi in range(0 if only < 0 else only, k if only < 0 else only + 1):
        u = D[qi]
        su = g_str[u]
        ru = g_rep[u]
        n = s_n[su]
        j = s_stratum[su]
        cu = g_ctl[u]
        rs = soff[j] + cu * (n - 1)
        cnt = np.int64(0)
        for yi in range(k):
            if yi == qi:
                continue
            y = D[yi]
            insame = g_str[y] == su
            at = u * P + y if memo and not insame else np.int64(-1)
            if at >= 0 and tg[at] >= 0:  # known from an earlier draw
                v, gt, eq = tv[at], np.int64(tg[at]), np.int64(te[at])
            else:
                if ru >= 0:
                    v = simRP[ru, y]
                    if insame:
                        gt, eq = replicate_counts(pool, ru, su, y, v)
                    else:
                        gt, eq = count_sorted(sortedRC[ru, :n], v)
                elif g_rep[y] >= 0:
                    v = simRP[g_rep[y], u]
                    gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
                elif insame:
                    gt = pair_rank(ranks, poff[j], cu, g_ctl[y], n)
                    v = sorted_buf[rs + n - 2 - gt]
                    eq = equal_below(sorted_buf[rs:rs + n - 1], n - 2 - gt, v)
                else:
                    v = tv[at] if at >= 0 else np.nan  # its similarity known from the pair (y, u)
                    if v != v:
                        v = sim(Xc, g_row[u], Xc, g_row[y], kind)
                        if at >= 0:  # for (y, u): ``sim`` is exactly symmetric
                            tv[y * P + u] = v
                    gt, eq = count_sorted(sorted_buf[rs:rs + n - 1], v)
                gt, eq = count_replicates(simRP, u, s_rep_lo[su], s_rep_hi[su], ru, v, gt, eq)
                if at >= 0:
                    tv[at], tg[at], te[at] = v, gt, eq
            vals[cnt] = v
            same[cnt] = 1 if insame else 0
            kept[cnt] = 0 if shares_code(codes, u, y) else 1
            base_gt[cnt] = gt
            base_eq[cnt] = eq
            cnt += 1
        ap, pr = walk_counts(vals, same, kept, base_gt, base_eq, order, cnt)
        total, scored = add_query(ap, pr, qi, total, scored, want, ap_out, pr_out)
    return total / scored if scored > 0 else 0.0


@inner()
def draw_assignment(pool, keys, counters, D):  # pragma: no cover - compiled
    """One random assignment into D (k pool indices), continuing each stratum's stream at counters[s]:
    stratum s takes k_s = ``pool.take[s]`` distinct members of pool_s (its replicates and controls) from
    the stream keys[s], starting at uniform index counters[s] (updated in place)."""
    pos = np.int64(0)
    none = np.int64(-1)
    for s in range(keys.size):
        ks = pool.take[s]
        size = pool.rep_hi[s] - pool.rep_lo[s] + pool.n[s]
        counters[s] = draw_distinct(keys[s], counters[s], size, pool.offset[s], D, pos, ks, none)
        pos += ks
