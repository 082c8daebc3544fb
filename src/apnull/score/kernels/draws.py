"""Compiled kernels (numba) of the label-permutation nulls: draws of a pool and their values, continued.

A unit's null is a keyed stream of draws (:mod:`apnull.streams`); each kernel here continues a stream
from a saved counter to ``target`` draws in all, counting the draws whose value reaches the observed
one (``>= observed - tol``), and stops at the draw that makes the h-th such exceedance when it
started below h (Besag & Clifford's rule; with h > target it never stops early: a fixed number of
draws). A run in rounds draws exactly what one long run would, and the first L draws of any run are
those of a run of L. The engine (:mod:`apnull.score.engine`) decides the rounds; the nulls
(:mod:`apnull.score.nulls`) call the batch kernels at the end of this module.

- The mAP null of perturbation t (label permutation within strata): each stratum s of t takes k_s
  distinct members of its pool from the stream keys[s] (:func:`.pool.draw_assignment`), and the draw's
  value is the mean AP of the drawn set (:func:`.pool.evaluate`, the pair rule a mask on it).
  :func:`continue_general` evaluates one draw at a time (or the rows of an explicit enumeration);
  :func:`continue_single` serves a pool over one stratum without pair rule, the common case, in
  chunks: the next chunk is drawn and the positions of its look-ups (one 8-byte record of
  ``ControlRows.pairs`` per pair of drawn controls: the similarity as float32 and each one's rank in
  the other's row as int16) are computed and prefetched before the current chunk is evaluated
  (:func:`single_stratum_means`), so the memory system serves many reads while the processor
  computes. A control query's positives take their ranks from the records and add the replicates
  above them, compared in float32: rounding to nearest never reverses an order, so a strict float32
  inequality is the float64 one; any float32 equality, or a tie flagged in a record, takes the exact
  similarity from the query's sorted row (the counts of ``evaluate``). A draw of four controls is
  counted in registers (``_four``). Every value is bit for bit :func:`.pool.evaluate`'s.
- The conditional null of query q (:func:`continue_conditional`): q kept, each positive's label
  given to a member of its own stratum's pool (:func:`draw_query`), q's AP recomputed.
- Copairs-style null rows (:func:`random_ap_rows`): APs of m positives placed uniformly among m + n.

Only the batch kernels are called from Python, each compiled when a run first needs it: a screen whose
pools all span one stratum never compiles the general path, and a run without pair rule or several
strata never compiles the conditional one.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import entry, inner
from ...streams import draw_distinct
from .chunks import continue_single, count_draw, record_draw
from .lookups import MAX_TABLE, lookups, reset
from .pool import Replicates, draw_assignment, evaluate, member_pool, pool_layout

__all__ = ["PartRows", "Counts", "Observed", "replicates", "pool_codes", "pool_of", "NO_MEMBERS", "pair_memo",
           "draw_query", "continue_general", "continue_conditional", "mean_batch", "single_batch", "conditional_batch", "random_ap_rows"]


@inner()
def draw_query(pool, rep_str, qi, key, counter, D, tmp):  # pragma: no cover - compiled
    """Fill D (k pool indices) for query qi: D[qi] its own member, D[j] (j != qi) a member of stratum
    rep_str[j]'s pool, distinct within a stratum and never qi's; stratum by stratum, the positives of
    a stratum drawn in order from the stream ``key`` at ``counter`` (``tmp``: k scratch entries).
    Returns the next unused counter."""
    k = D.size
    D[qi] = pool.observed[qi]
    j = np.int64(0)
    while j < k:
        s = rep_str[j]
        e = j
        while e < k and rep_str[e] == s:
            e += 1
        count = e - j - (1 if j <= qi < e else 0)
        size = (pool.rep_hi[s] - pool.rep_lo[s]) + pool.n[s]
        counter = draw_distinct(key, counter, size, pool.offset[s], tmp, np.int64(0), count, D[qi])
        c = np.int64(0)
        for t in range(j, e):
            if t != qi:
                D[t] = tmp[c]
                c += 1
        j = e
    return counter


@numba.njit(cache=True, inline="always")
def pair_memo(P, pairs):  # pragma: no cover - compiled
    """The memo of :func:`.pool.evaluate` for a pool of P members about to evaluate about ``pairs`` pairs
    of members: a :class:`.lookups.Lookups` of its P * P pairs, every one forgotten, when that is within
    :data:`.lookups.MAX_TABLE` and the draws would compute at least an eighth of that many pairs (the
    memo's reset costs less than one pair computed in eight); else an empty one (no memo)."""
    if P * P > MAX_TABLE or 8 * pairs < P * P:
        return lookups(0)
    tab = lookups(P * P)
    reset(tab, P)
    return tab


@inner(nogil=True)
def continue_general(pool, controls, kind, keys, counters, drawn, reached, target, h, tol, observed, codes,
                     values, draws):  # pragma: no cover - compiled
    """Continue the mAP null of any pool to ``target`` draws, one draw at a time (see the module):
    random assignments from the strata's streams at ``counters`` (updated), or, when ``draws`` has
    rows, its row ``drawn`` next (an enumeration). ``codes``: the pool members' pair-rule codes
    (:func:`.pool.evaluate`). Returns (drawn, reached, stopped); values as :func:`continue_single`."""
    k = pool.sim.shape[0]
    ap = np.empty(k)
    pr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((5, k), dtype=np.int64)
    D = np.empty(k, dtype=np.int64)
    early = reached < h
    explicit = draws.shape[0] > 0
    memo = pair_memo(pool.stratum.size, max(target - drawn, 0) * k * (k - 1))
    while drawn < target:
        if explicit:
            for i in range(k):
                D[i] = draws[drawn, i]
        else:
            draw_assignment(pool, keys, counters, D)
        v = evaluate(D, np.bool_(False), ap, pr, fwork, iwork, controls, pool, kind, codes, np.int64(-1), memo.v,
                     memo.gt, memo.eq)
        drawn, reached, stop = record_draw(values, drawn, v, observed, tol, reached, early, h)
        if stop:
            return drawn, reached, True
    return drawn, reached, False


@inner(nogil=True)
def continue_conditional(pool, controls, kind, rep_str, keys, counters, drawn, reached, active, target, h, tol,
                         ap, stopped):  # pragma: no cover - compiled
    """Continue the conditional null of each active query i of a perturbation to ``target`` draws: query
    i's stream keys[i] from counters[i]; drawn[i], reached[i] (draws whose AP reaches ap[i] - tol, ap the
    observed APs) and counters updated in place; stopped[i] says whether this call stopped query i at its
    h-th exceedance (possible only when it entered below h)."""
    k = pool.sim.shape[0]
    tap = np.empty(k)
    tpr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((5, k), dtype=np.int64)
    no_codes = np.zeros((0, 0), dtype=np.int64)
    D = np.empty(k, dtype=np.int64)
    tmp = np.empty(k, dtype=np.int64)
    pairs = np.int64(0)
    for i in range(k):
        if active[i]:
            pairs += max(target - drawn[i], 0) * (k - 1)
    memo = pair_memo(pool.stratum.size, pairs)
    for i in range(k):
        if not active[i]:
            continue
        stopped[i] = False  # the p-value of this round's count: stopped only if this round stops it
        early = reached[i] < h
        while drawn[i] < target:
            counters[i] = draw_query(pool, rep_str, i, keys[i], counters[i], D, tmp)
            evaluate(D, np.bool_(True), tap, tpr, fwork, iwork, controls, pool, kind, no_codes, np.int64(i), memo.v,
                     memo.gt, memo.eq)
            drawn[i] += 1
            reached[i], stop = count_draw(tap[i], ap[i], tol, reached[i], early, h)
            if stop:
                stopped[i] = True
                break


#: ``PartRows.members`` of the control design: the replicates are not members of the control tables.
NO_MEMBERS = np.zeros(0, dtype=np.int64)


class PartRows(NamedTuple):
    """Some perturbations' rows and streams as the batch kernels read them (a part's arrays: see
    :class:`apnull.score.nulls.permutation.Part`). Perturbation j has replicates ``qoff[j]`` ..
    ``qoff[j + 1] - 1`` (rows ``X[rows[...]]``, grouped by stratum) and segments (its strata)
    ``soff[j]`` .. ``soff[j + 1] - 1``, each with ``seg_len`` replicates, the position ``seg_comp`` of its
    stratum in the component's :class:`.controls.ControlRows`, and its stream key ``keys``. With
    negatives="others", ``members`` gives each replicate's position in its stratum's pool (the control
    tables hold every profile; :func:`.pool.member_pool`); empty for the control design."""

    X: np.ndarray            #: (rows, d) float64
    rows: np.ndarray         #: (q,) int64 row in ``X`` of each replicate
    qoff: np.ndarray         #: (p + 1,) int64
    soff: np.ndarray         #: (p + 1,) int64
    seg_len: np.ndarray      #: (s,) int64
    seg_comp: np.ndarray     #: (s,) int64
    keys: np.ndarray         #: (s,) uint64
    rep_codes: np.ndarray    #: (q, C) int64 pair-rule codes of each replicate (C = 0: no rule)
    members: np.ndarray = NO_MEMBERS  #: (q,) int64 position of each replicate in its stratum's pool, or empty


class Counts(NamedTuple):
    """The streams and counts of a batch's units, in batch order (updated in place)."""

    counters: np.ndarray     #: uint64 next uniform of each stream
    drawn: np.ndarray        #: (units,) int64 draws so far
    reached: np.ndarray      #: (units,) int64 draws reaching the observed value
    stopped: np.ndarray      #: (units,) bool: this call stopped the unit at its h-th exceedance


class Observed(NamedTuple):
    """The observed scores of a batch's perturbations (written by the batch kernels)."""

    ap: np.ndarray           #: (queries,) tie-aware AP of each query
    pr: np.ndarray           #: (queries,) tie-aware Precision@R
    maps: np.ndarray         #: (perturbations,) mAP


@numba.njit(cache=True, inline="always")
def replicates(part, j):  # pragma: no cover - compiled
    """The :class:`.pool.Replicates` of perturbation j of ``part`` (a :class:`PartRows`; rows copied)."""
    a = part.qoff[j]
    k = part.qoff[j + 1] - a
    sa = part.soff[j]
    J = part.soff[j + 1] - sa
    d = part.X.shape[1]
    Xr = np.empty((k, d))
    rep_str = np.empty(k, dtype=np.int64)
    r = np.int64(0)
    for s in range(J):
        for _ in range(part.seg_len[sa + s]):
            for f in range(d):
                Xr[r, f] = part.X[part.rows[a + r], f]
            rep_str[r] = s
            r += 1
    return Replicates(Xr, rep_str, part.seg_comp[sa:sa + J].copy())


@numba.njit(cache=True, inline="always")
def pool_of(part, j, reps, controls, kind, draws):  # pragma: no cover - compiled
    """The :class:`.pool.Pool` of perturbation j of ``part``: :func:`.pool.pool_layout` (its replicates
    then the controls of each stratum; ``draws`` assignments expected), or with ``part.members``
    (negatives="others") :func:`.pool.member_pool` (every profile of a stratum, the replicates among them)."""
    if part.members.size > 0:
        a = part.qoff[j]
        return member_pool(reps, part.members[a:a + reps.X.shape[0]], controls)
    return pool_layout(reps, controls, kind, draws)


@numba.njit(cache=True, inline="always")
def none_of(reps):  # pragma: no cover - compiled
    """``reps`` with no replicate rows (its strata kept): the pool layout of negatives="others"."""
    return Replicates(reps.X[:0], reps.stratum[:0], reps.strata)


@inner()
def pool_codes(rep_codes, ctl_codes, controls, reps, a, out):  # pragma: no cover - compiled
    """``out`` (P, C) filled with the pair-rule codes of the pool members in pool order (per stratum its
    replicates, whose codes start at row ``a`` of ``rep_codes``, then its controls, rows of ``ctl_codes``
    aligned with ``controls.X``; with ``reps`` of no rows, the controls only: negatives="others", whose
    replicates are among them); returns ``out``, or it unchanged with no column (no rule)."""
    C = out.shape[1]
    if C == 0:
        return out
    k = reps.X.shape[0]
    g = np.int64(0)
    r = np.int64(0)
    for s in range(reps.strata.size):
        while r < k and reps.stratum[r] == s:
            for c in range(C):
                out[g, c] = rep_codes[a + r, c]
            g += 1
            r += 1
        c0 = controls.start[reps.strata[s]]
        for i in range(controls.size[reps.strata[s]]):
            for c in range(C):
                out[g, c] = ctl_codes[c0 + i, c]
            g += 1
    return out


@numba.njit(cache=True, inline="always")
def _observe(pool, controls, kind, codes, ap, pr):  # pragma: no cover - compiled
    """The observed assignment scored: each query's AP and Precision@R into ap, pr; returns the mAP."""
    k = pool.sim.shape[0]
    none = lookups(0)  # no memo: one evaluation
    return evaluate(pool.observed, np.bool_(True), ap, pr, np.empty((1, k)), np.empty((5, k), dtype=np.int64),
                    controls, pool, kind, codes, np.int64(-1), none.v, none.gt, none.eq)


@numba.njit(cache=True, inline="always")
def _observe_uncoded(pool, controls, kind, ap, pr):  # pragma: no cover - compiled
    """:func:`_observe` of a pool without the pair rule (no control codes)."""
    return _observe(pool, controls, kind, np.zeros((0, 0), dtype=np.int64), ap, pr)


@entry(nogil=True)
def mean_batch(part, controls, ctl_codes, kind, pos, counts, target, h, tol, observed, values,
               draws):  # pragma: no cover - compiled
    """The mAP null of the perturbations ``pos`` of ``part`` (a :class:`PartRows`; one component,
    ``controls``), one call, draws evaluated one at a time (:func:`continue_general`: any pool, the pair
    rule (``ctl_codes``: the controls' codes aligned with ``controls.X``), an enumeration).

    In batch order: ``counts`` (a :class:`Counts`; its counters are the segments of pos[0], pos[1],
    ...), ``observed`` (an :class:`Observed`: each perturbation's queries and mAP); ``values``
    (len(pos), V) receives the first V null values of each; ``draws``, when it has rows, is the
    enumeration of the batch's single perturbation.
    """
    q = np.int64(0)
    sg = np.int64(0)
    for t in range(pos.size):
        j = pos[t]
        reps = replicates(part, j)
        k = reps.X.shape[0]
        J = reps.strata.size
        in_pool = part.members.size > 0
        P = 0 if in_pool else k
        for s in range(J):
            P += controls.size[reps.strata[s]]
        C = ctl_codes.shape[1]
        codes = pool_codes(part.rep_codes, ctl_codes, controls, reps if not in_pool else none_of(reps),
                           part.qoff[j], np.empty((P if C > 0 else 0, C), dtype=np.int64))
        pool = pool_of(part, j, reps, controls, kind, target - counts.drawn[t])
        m = _observe(pool, controls, kind, codes, observed.ap[q:q + k], observed.pr[q:q + k])
        observed.maps[t] = m
        counts.drawn[t], counts.reached[t], counts.stopped[t] = continue_general(
            pool, controls, kind, part.keys[part.soff[j]:part.soff[j] + J], counts.counters[sg:sg + J],
            counts.drawn[t], counts.reached[t], target, h, tol, m, codes, values[t], draws)
        q += k
        sg += J


@entry(nogil=True)
def single_batch(part, controls, kind, pos, counts, target, h, tol, first_chunk, observed,
                 values):  # pragma: no cover - compiled
    """:func:`mean_batch` for perturbations whose pools span one stratum, without pair rule or
    enumeration: the chunked draws of :func:`.chunks.continue_single` (the same values); one counter
    per perturbation."""
    q = np.int64(0)
    for t in range(pos.size):
        j = pos[t]
        reps = replicates(part, j)
        k = reps.X.shape[0]
        pool = pool_layout(reps, controls, kind, target - counts.drawn[t])
        m = _observe_uncoded(pool, controls, kind, observed.ap[q:q + k], observed.pr[q:q + k])
        observed.maps[t] = m
        counts.drawn[t], counts.reached[t], counts.stopped[t] = continue_single(
            pool, controls, part.keys[part.soff[j]:part.soff[j] + 1], counts.counters[t:t + 1], counts.drawn[t],
            counts.reached[t], target, h, tol, m, first_chunk, values[t])
        q += k


@entry(nogil=True)
def conditional_batch(part, controls, kind, pos, keys, counts, active, target, h, tol, ap):  # pragma: no cover - compiled
    """The conditional null of the queries of the perturbations ``pos`` of ``part``, one call: in batch
    order, one entry per query in ``keys``, ``counts`` (a :class:`Counts`, a stream per query),
    ``active`` and ``ap`` (observed, written here) (:func:`continue_conditional`)."""
    q = np.int64(0)
    for t in range(pos.size):
        j = pos[t]
        reps = replicates(part, j)
        k = reps.X.shape[0]
        pool = pool_of(part, j, reps, controls, kind, target)
        _observe_uncoded(pool, controls, kind, ap[q:q + k], np.empty(k))
        continue_conditional(pool, controls, kind, reps.stratum, keys[q:q + k], counts.counters[q:q + k],
                             counts.drawn[q:q + k], counts.reached[q:q + k], active[q:q + k], target, h, tol,
                             ap[q:q + k], counts.stopped[q:q + k])
        q += k


@entry()
def random_ap_rows(m, n, B, key):  # pragma: no cover - compiled
    """B null APs of m positives placed uniformly among m + n ranks (the copairs-style null row)."""
    N = m + n
    out = np.empty(B)
    pos = np.empty(m, dtype=np.int64)
    counter = np.uint64(0)
    zero = np.int64(0)
    none = np.int64(-1)
    for b in range(B):
        counter = draw_distinct(key, counter, N, zero, pos, zero, m, none)
        srt = np.sort(pos)
        s = 0.0
        for i in range(m):
            s += (i + 1.0) / (srt[i] + 1.0)
        out[b] = s / m
    return out
