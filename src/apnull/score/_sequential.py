"""Compiled kernel (numba) of a sequential p-value: one perturbation's permutation stream, continued.

The adaptive rounds (:mod:`._adaptive`) continue each perturbation's keyed stream of label
permutations round after round; this is one perturbation's part of a round, with or without the
``positives_differ_by`` rule (:mod:`._diffby`): the same draws either way, each scored as the fixed-B
kernels score it (:func:`._kernels.evaluate` / :func:`._diffby.evaluate_excluding`).
"""

from __future__ import annotations

import numba
import numpy as np

from ._diffby import evaluate_excluding
from ._draws import CHUNK, draw_assignment, member_sims, record_positions, single_stratum_means
from ._kernels import Replicates, evaluate
from ._permute import pool_layout

__all__ = ["sequential_scores", "sequential_batch", "NO_CODES"]

#: ``codes`` of a screen without ``positives_differ_by``: no column.
NO_CODES = np.zeros((0, 0), dtype=np.int64)
#: Draws of the first chunk of a call (then doubling up to ``_draws.CHUNK``).
FIRST_CHUNK = 16


@numba.njit(cache=True, nogil=True)
def sequential_scores(reps, controls, kind, keys, counters, drawn, reached, target, h, tol, codes):  # pragma: no cover
    """Continue perturbation t's permutation stream up to ``target`` draws (a sequential p-value).

    Draw b of t is the b-th assignment of ``_permute.perturbation_scores`` (with ``codes``:
    ``_diffby.perturbation_scores_excluding``) with the same ``keys``: the streams continue at
    ``counters`` (one per stratum, updated in place), so a run in rounds draws exactly what one long
    run would. Counting starts from ``drawn`` draws of which ``reached`` had a null mAP >= mAP - ``tol``.
    If ``reached < h`` on entry, drawing stops as soon as ``reached`` reaches ``h`` (Besag & Clifford's
    stopping rule); otherwise it goes on to ``target``.

    ``codes``: (P, C) int64 ``positives_differ_by`` codes of t's pool members in pool order
    (``positives.pool_codes``), or :data:`NO_CODES` (C = 0) for none. With codes a query keeping no
    positive has NaN AP and Precision@R and is left out of the mean.

    Returns
    -------
    ap, pr : (k,) observed per-query tie-aware AP and Precision@R
    map_obs : float, the observed mAP
    drawn, reached : int, draws so far and how many reached ``map_obs - tol``
    stopped : bool, True when this call stopped at the h-th exceedance
    """
    k = reps.X.shape[0]
    pool = pool_layout(reps, controls, kind, target - drawn)
    ap = np.empty(k)
    pr = np.empty(k)
    fwork = np.empty((1, k))
    iwork = np.empty((5, k), dtype=np.int64)
    rule = codes.shape[1] > 0
    if rule:
        map_obs = evaluate_excluding(pool.observed, True, ap, pr, fwork, iwork, controls, pool, kind, codes)
    else:
        map_obs = evaluate(pool.observed, True, ap, pr, fwork, iwork, controls, pool, kind)
    early = reached < h
    if not rule and keys.size == 1 and k >= 2:  # one stratum: the chunked evaluation of a fixed B
        drawn, reached, stopped = _chunked(pool, controls, keys, counters, drawn, reached, target, h, tol,
                                           map_obs, early)
        return ap, pr, map_obs, drawn, reached, stopped
    D = np.empty(k, dtype=np.int64)
    stopped = False
    while drawn < target:
        draw_assignment(pool, keys, counters, D)
        if rule:
            v = evaluate_excluding(D, False, ap, pr, fwork, iwork, controls, pool, kind, codes)
        else:
            v = evaluate(D, False, ap, pr, fwork, iwork, controls, pool, kind)  # ap, pr not written
        drawn += 1
        if v >= map_obs - tol:
            reached += 1
            if early and reached >= h:
                stopped = True
                break
    return ap, pr, map_obs, drawn, reached, stopped


@numba.njit(cache=True, nogil=True)
def _chunked(pool, controls, keys, counters, drawn, reached, target, h, tol, map_obs, early):  # pragma: no cover
    """The draws of :func:`sequential_scores` for a single-stratum pool without codes, evaluated a chunk
    at a time by ``_draws.single_stratum_means`` (the values of ``evaluate``, bit for bit).

    Chunks grow from :data:`FIRST_CHUNK` to ``_draws.CHUNK`` draws, so a unit that stops early draws
    few more than it uses; the stream's counter after each draw is kept, and on a stop at draw b the
    stream is left right after draw b, as drawing one at a time leaves it.
    """
    k = pool.sim.shape[0]
    m = k - 1
    C = CHUNK
    D = np.empty((C, k), dtype=np.int64)
    after = np.empty(C, dtype=np.uint64)
    out = np.empty(C)
    npairs = C * k * m // 2
    idx = np.empty(npairs, dtype=np.int64)
    R = np.empty(npairs, dtype=np.int64)
    left = np.empty(C, dtype=np.int64)
    simPR, simPR32 = member_sims(pool)
    fwork = np.empty(k)
    iwork = np.empty((4, k), dtype=np.int64)
    n0 = pool.n[0]
    base = controls.pairs_offset[pool.component_stratum[0]]
    size = FIRST_CHUNK
    while drawn < target:
        nb = min(size, target - drawn)
        for b in range(nb):
            draw_assignment(pool, keys, counters, D[b])
            after[b] = counters[0]
        record_positions(D, nb, k, n0, base, controls.pairs, idx)
        single_stratum_means(D, nb, out, 0, controls, pool, simPR, simPR32, idx, R, left,
                             fwork, iwork[0], iwork[1], iwork[2], iwork[3])
        for b in range(nb):
            drawn += 1
            if out[b] >= map_obs - tol:
                reached += 1
                if early and reached >= h:
                    counters[0] = after[b]
                    return drawn, reached, True
        size = min(2 * size, C)
    return drawn, reached, False


@numba.njit(cache=True, nogil=True)
def sequential_batch(X, rows, qoff, soff, seg_len, seg_comp, keys, controls, kind, pos, counters, drawn,
                     reached, target, h, tol, ap, pr, maps, stopped):  # pragma: no cover - compiled
    """:func:`sequential_scores` (without codes) for the perturbations ``pos`` of a part, in one call.

    The arrays of a ``_rounds.Part`` (``X``, ``rows``, ``qoff``, ``soff``, ``seg_len``, ``seg_comp``,
    ``keys``) give perturbation j's replicates and streams, as ``Part.replicates(j)`` does; every one
    of ``pos`` belongs to the component of ``controls``. In batch order: ``counters`` holds the
    segments of pos[0], pos[1], ... (updated in place), ``drawn``, ``reached`` (updated), ``maps``,
    ``stopped`` one entry each, ``ap``, ``pr`` their queries. One call instead of one per perturbation:
    the dispatch of a call costs more than a hundred draws of a small pool.
    """
    d = X.shape[1]
    no_codes = np.zeros((0, 0), dtype=np.int64)
    q = 0
    sg = 0
    for t in range(pos.size):
        j = pos[t]
        a = qoff[j]
        k = qoff[j + 1] - a
        sa = soff[j]
        J = soff[j + 1] - sa
        Xr = np.empty((k, d))
        rep_str = np.empty(k, dtype=np.int64)
        r = 0
        for s in range(J):
            for _ in range(seg_len[sa + s]):
                for f in range(d):
                    Xr[r, f] = X[rows[a + r], f]
                rep_str[r] = s
                r += 1
        reps = Replicates(Xr, rep_str, seg_comp[sa:sa + J].copy())
        cnt = counters[sg:sg + J]
        a_t, p_t, m, L, g, stop = sequential_scores(reps, controls, kind, keys[sa:sa + J].copy(), cnt,
                                                    drawn[t], reached[t], target, h, tol, no_codes)
        for i in range(k):
            ap[q + i] = a_t[i]
            pr[q + i] = p_t[i]
        maps[t] = m
        drawn[t] = L
        reached[t] = g
        stopped[t] = stop
        q += k
        sg += J
