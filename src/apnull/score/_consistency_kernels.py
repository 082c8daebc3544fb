"""Compiled kernels (numba) for phenotypic consistency: similarity rows and label mAP under a labelling.

Profiles are indexed 0 .. P-1 in canonical order and belong to groups (perturbations), which carry
the labels (:class:`LabelLists`). A *labelling* ``gperm`` gives group g the label set of group
``gperm[g]`` (the identity is the observed labelling); ``ginv`` is its inverse. When replicates are
aggregated every group is one profile; with aggregate "none" the replicates of a perturbation keep
their label set together, so the null moves whole perturbations.

Query (q, l), for each label l of q: positives are the other profiles carrying l, negatives the
profiles sharing no label with q, every other profile is left out. The ranking is q's similarity row,
sorted once; AP is tie-aware (``_kernels.block_sum``, the same closed form as ``score``). A query with
no negative has no ranking to judge and gives NaN. Everything is deterministic scalar code, so the same
inputs give the same bits in any process or thread.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ._kernels import block_sum, sim

__all__ = ["LabelLists", "similarity_rows", "label_queries", "label_null", "label_null_more", "label_null_perms",
           "shuffle"]


@numba.njit(cache=True, nogil=True)
def similarity_rows(X, kind):  # pragma: no cover - compiled
    """Each profile's other profiles sorted by similarity, most similar first.

    Returns (order, vals, rank, tied): order[q] (P - 1 int32) lists the profiles other than q, by
    similarity to q descending (ties by index), vals[q] their similarities, rank[q, x] the position of
    x in order[q] (-1 for x = q), tied[q] whether row q holds equal similarities. ``kind`` as in
    ``_kernels.sim``; the similarity is exactly symmetric.
    """
    P = X.shape[0]
    S = np.empty((P, P))
    for a in range(P):
        for b in range(a + 1, P):
            v = sim(X, a, X, b, kind)
            S[a, b] = v
            S[b, a] = v
    order = np.empty((P, max(P - 1, 0)), dtype=np.int32)
    vals = np.empty((P, max(P - 1, 0)))
    row = np.empty(max(P - 1, 0))
    idx = np.empty(max(P - 1, 0), dtype=np.int32)
    rank = np.full((P, P), -1, dtype=np.int32)
    tied = np.zeros(P, dtype=np.bool_)
    for q in range(P):
        c = 0
        for b in range(P):
            if b != q:
                row[c] = -S[q, b]
                idx[c] = b
                c += 1
        o = np.argsort(row, kind="mergesort")
        for t in range(P - 1):
            order[q, t] = idx[o[t]]
            vals[q, t] = -row[o[t]]
            rank[q, idx[o[t]]] = t
            if t > 0 and vals[q, t] == vals[q, t - 1]:
                tied[q] = True
    return order, vals, rank, tied


@numba.njit(cache=True, nogil=True)
def _walk(order_q, vals_q, carrier, token, share, stamp, m):  # pragma: no cover - compiled
    """Tie-aware AP of one query: ``carrier[x] == token`` marks positives, ``share[x] == stamp`` the
    profiles left out (sharing a label without carrying l); the rest are negatives. Stops once the m
    positives are placed (their tied block closed)."""
    N = order_q.size
    i = 0
    before = 0
    start = 0
    total = 0.0
    while i < N and before < m:
        v = vals_q[i]
        j = i
        a = 0
        e = 0
        while j < N and vals_q[j] == v:
            x = order_q[j]
            if carrier[x] == token:
                a += 1
            elif share[x] != stamp:
                e += 1
            j += 1
        L = a + e
        if a > 0:
            total += block_sum(a, L, start, before)
        before += a
        start += L
        i = j
    return total / m


@numba.njit(cache=True, nogil=True)
def _insertion_sort(a, k):  # pragma: no cover - compiled
    for i in range(1, k):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@numba.njit(cache=True, nogil=True)
def _ranked(pos, m, out_pos, nout):  # pragma: no cover - compiled
    """AP of a row without ties from the row positions of its m positives (``pos``) and of the
    ``nout`` profiles left out (``out_pos``): the i-th positive (0-based, by position r) has
    r - i - (left-out profiles above it) negatives above it, so precision (i + 1) / (r + 1 - out)."""
    if m > 32:
        pos[:m] = np.sort(pos[:m])
    else:
        _insertion_sort(pos, m)
    if nout > 32:
        out_pos[:nout] = np.sort(out_pos[:nout])
    else:
        _insertion_sort(out_pos, nout)
    total = 0.0
    o = 0
    for i in range(m):
        r = pos[i]
        while o < nout and out_pos[o] < r:
            o += 1
        total += (i + 1.0) / (r + 1.0 - o)
    return total / m


class LabelLists(NamedTuple):
    """Who carries which label, by perturbation (group); each profile belongs to one group (itself when
    replicates are aggregated, its perturbation with aggregate "none")."""

    group: np.ndarray      #: (P,) group of each profile
    gm_ptr: np.ndarray     #: (G + 1,) the profiles of group g are gm[gm_ptr[g]:gm_ptr[g + 1]]
    gm: np.ndarray
    grp_ptr: np.ndarray    #: (G + 1,) the labels of group g are grp_lab[grp_ptr[g]:grp_ptr[g + 1]]
    grp_lab: np.ndarray
    lab_ptr: np.ndarray    #: (T + 1,) the groups carrying label l are lab_mem[lab_ptr[l]:lab_ptr[l + 1]]
    lab_mem: np.ndarray


@numba.njit(cache=True, nogil=True)
def label_queries(t, gperm, ginv, rows, L, carrier, share, counter, work, ap_out, n_out, q_out):  # pragma: no cover
    """The queries of label t when group g carries the labels of group ``gperm[g]`` (``ginv`` its
    inverse; the identity is the observed labelling). Returns (mAP, k), k the profiles carrying t.

    Fills, for each carrier (by group, then member), ap_out (NaN without a negative or a positive),
    n_out (negatives) and q_out (the query profile). ``carrier``/``share`` are int64 work arrays of
    length P compared with fresh stamps from ``counter[0]`` (never cleared). mAP is the mean over the
    queries with an AP; NaN when none has one. ``rows`` is what ``similarity_rows`` returned; a row
    without ties takes the short path (``_ranked``), a row with ties is walked (``_walk``). ``work``
    is an int64 (2, P) workspace; ``L`` a :class:`LabelLists`.
    """
    order, vals, rank, tied = rows
    P = order.shape[0]
    pos = work[0]
    out_pos = work[1]
    gm_ptr, gm = L.gm_ptr, L.gm
    lab_ptr, lab_mem = L.lab_ptr, L.lab_mem
    counter[0] += 1
    token = counter[0]
    k = 0
    for w in range(lab_ptr[t], lab_ptr[t + 1]):
        G = ginv[lab_mem[w]]
        for h in range(gm_ptr[G], gm_ptr[G + 1]):
            carrier[gm[h]] = token
            k += 1
    m = k - 1
    total = 0.0
    used = 0
    idx = 0
    for w in range(lab_ptr[t], lab_ptr[t + 1]):
        G = ginv[lab_mem[w]]
        o = gperm[G]
        for h in range(gm_ptr[G], gm_ptr[G + 1]):
            q = gm[h]
            counter[0] += 1
            stamp = counter[0]
            shared = 0
            nout = 0
            for hh in range(L.grp_ptr[o], L.grp_ptr[o + 1]):
                lab = L.grp_lab[hh]
                for w2 in range(lab_ptr[lab], lab_ptr[lab + 1]):
                    G2 = ginv[lab_mem[w2]]
                    for h2 in range(gm_ptr[G2], gm_ptr[G2 + 1]):
                        x = gm[h2]
                        if share[x] != stamp:
                            share[x] = stamp
                            if x != q:
                                shared += 1
                                if carrier[x] != token:
                                    out_pos[nout] = rank[q, x]
                                    nout += 1
            n = P - 1 - shared
            ap = np.nan
            if n > 0 and m > 0 and not tied[q]:
                c = 0
                for w2 in range(lab_ptr[t], lab_ptr[t + 1]):
                    G2 = ginv[lab_mem[w2]]
                    for h2 in range(gm_ptr[G2], gm_ptr[G2 + 1]):
                        if gm[h2] != q:
                            pos[c] = rank[q, gm[h2]]
                            c += 1
                ap = _ranked(pos, m, out_pos, nout)
            elif n > 0 and m > 0:
                ap = _walk(order[q], vals[q], carrier, token, share, stamp, m)
            if ap == ap:
                total += ap
                used += 1
            ap_out[idx] = ap
            n_out[idx] = n
            q_out[idx] = q
            idx += 1
    return (total / used if used > 0 else np.nan), k


@numba.njit(cache=True, nogil=True)
def _splitmix(state):  # pragma: no cover - compiled
    """One step of SplitMix64 (Steele, Lea & Flood 2014): (new state, 64-bit output)."""
    state = (state + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = state
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    return state, z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def shuffle(perm, state):  # pragma: no cover - compiled
    """Fisher-Yates shuffle of ``perm`` in place with SplitMix64 draws; returns the new state. The
    index j <= i is floor(u * (i + 1)) for u uniform on [0, 1) with 53 bits (bias below 2^-40)."""
    for i in range(perm.size - 1, 0, -1):
        state, z = _splitmix(state)
        j = int((z >> np.uint64(11)) * (1.0 / 9007199254740992.0) * (i + 1))
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
    return state


@numba.njit(cache=True, nogil=True)
def _scratch(P):  # pragma: no cover - compiled
    """The work arrays :func:`label_queries` fills, for P profiles."""
    return (np.zeros(P, dtype=np.int64), np.zeros(P, dtype=np.int64), np.zeros(1, dtype=np.int64),
            np.empty((2, P), dtype=np.int64), np.empty(P), np.empty(P, dtype=np.int64), np.empty(P, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _label_map(t, gperm, ginv, rows, L, scratch):  # pragma: no cover - compiled
    """mAP of label t when group i carries the labels of group ``gperm[i]`` (``ginv`` its inverse)."""
    carrier, share, counter, work, ap, nn, qq = scratch
    for i in range(gperm.size):
        ginv[gperm[i]] = i
    return label_queries(t, gperm, ginv, rows, L, carrier, share, counter, work, ap, nn, qq)[0]


@numba.njit(cache=True, nogil=True)
def label_null(t, key, B, rows, L):  # pragma: no cover - compiled
    """mAP of label t under B random labellings of the groups drawn from the stream ``key`` (uint64):
    labelling b is the previous one shuffled again (Fisher-Yates), starting from the identity, so the
    first values of a longer run are those of a shorter one. B values (NaN where no query has an AP)."""
    G = L.gm_ptr.size - 1
    gperm = np.arange(G)
    ginv = np.empty(G, dtype=np.int64)
    scratch = _scratch(rows[0].shape[0])
    state = np.uint64(key)
    out = np.empty(B)
    for b in range(B):
        state = shuffle(gperm, state)
        out[b] = _label_map(t, gperm, ginv, rows, L, scratch)
    return out


@numba.njit(cache=True, nogil=True)
def label_null_more(t, state, gperm, target, drawn, reached, observed, tol, h, rows, L):  # pragma: no cover
    """Continue label t's null stream (a sequential p-value): the draws of :func:`label_null`, from the
    SplitMix64 ``state`` and the labelling ``gperm`` (updated in place) left after ``drawn`` draws.

    Counts the draws whose mAP reaches ``observed - tol`` (NaN never does) on top of ``reached``, up
    to ``target`` draws in all; if ``reached < h`` on entry it stops at the draw that makes it ``h``
    (Besag & Clifford's rule). Returns (state, drawn, reached, stopped).
    """
    ginv = np.empty(gperm.size, dtype=np.int64)
    scratch = _scratch(rows[0].shape[0])
    early = reached < h
    stopped = False
    while drawn < target:
        state = shuffle(gperm, state)
        v = _label_map(t, gperm, ginv, rows, L, scratch)
        drawn += 1
        if v >= observed - tol:
            reached += 1
            if early and reached >= h:
                stopped = True
                break
    return state, drawn, reached, stopped


@numba.njit(cache=True, nogil=True)
def label_null_perms(t, perms, rows, L):  # pragma: no cover - compiled
    """mAP of label t under each labelling of the groups (row of ``perms``, B x G ints); B values."""
    B, G = perms.shape
    ginv = np.empty(G, dtype=np.int64)
    scratch = _scratch(rows[0].shape[0])
    out = np.empty(B)
    for b in range(B):
        out[b] = _label_map(t, perms[b], ginv, rows, L, scratch)
    return out
