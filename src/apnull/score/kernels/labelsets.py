"""Compiled kernels (numba) for phenotypic consistency: similarity rows and label mAP under a labelling.

Profiles are indexed 0 .. P-1 in canonical order and belong to groups (perturbations), which carry
the labels (:class:`LabelLists`). A *labelling* ``gperm`` gives group g the label set of group
``gperm[g]`` (the identity is the observed labelling); ``ginv`` is its inverse. When replicates are
aggregated every group is one profile; with aggregate "none" the replicates of a perturbation keep
their label set together, so the null moves whole perturbations.

Query (q, l), for each label l of q: positives are the other profiles carrying l, negatives the
profiles sharing no label with q (a profile without a label is a negative of every query), every
other profile is left out. The pair rule (``positives_differ_by``, copairs's ``pos_diffby``): a
profile carrying l that shares a value with q in one of those columns (``LabelLists.codes``) is left
out too, so q's m counts only the others. The ranking is q's similarity row, sorted once; AP is
tie-aware (:func:`.ranking.walk_sorted`, the same block arithmetic as ``score``). A query with no
negative, or no positive kept, has no ranking to judge and gives NaN. The null of label l continues its
stream of shuffled labellings (:func:`continue_label`, :func:`label_batch`). Everything is
deterministic scalar code, so the same inputs give the same bits in any process or thread.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...compiled import entry, inner
from ...streams import shuffle
from .chunks import record_draw
from .ranking import walk_sorted
from .similarity import sim

__all__ = ["LabelLists", "similarity_rows", "label_queries", "continue_label", "label_batch", "ranked_ap",
           "SORT_OR_WALK"]

#: A query whose row has no ties sorts its m positives' positions (about m log m) when m * SORT_OR_WALK < P,
#: else walks its sorted row (up to P): both give the same bits (``ranked_ap`` is ``walk_sorted`` without ties).
SORT_OR_WALK = 8


@entry(nogil=True)
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
        c = np.int64(0)
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


@inner(nogil=True)
def _insertion_sort(a, k):  # pragma: no cover - compiled
    for i in range(1, k):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@inner()
def _sort_start(a, k):  # pragma: no cover - compiled
    """Sort a[:k] in place: insertion sort up to 32 entries, numpy's sort above."""
    if k > 32:
        srt = np.sort(a[:k])
        for i in range(k):
            a[i] = srt[i]
    else:
        _insertion_sort(a, k)


@inner(nogil=True)
def ranked_ap(pos, m, out_pos, nout):  # pragma: no cover - compiled
    """AP of a row without ties from the row positions of its m positives (``pos``) and of the
    ``nout`` profiles left out (``out_pos``): the i-th positive (0-based, by position r) has
    r - i - (left-out profiles above it) negatives above it, so precision (i + 1) / (r + 1 - out)."""
    _sort_start(pos, m)
    _sort_start(out_pos, nout)
    total = 0.0
    o = np.int64(0)
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
    codes: np.ndarray      #: (P, C) int64 pair-rule codes of each profile (C = 0: no rule)


@inner()
def _shares(codes, a, b):  # pragma: no cover - compiled
    """Whether profiles a and b hold the same code in one of the pair rule's columns."""
    for c in range(codes.shape[1]):
        if codes[a, c] == codes[b, c]:
            return True
    return False


@entry(nogil=True)
def label_queries(t, gperm, ginv, rows, L, carrier, share, counter, work, ap_out, n_out, q_out,
                  m_out):  # pragma: no cover - compiled
    """The queries of label t when group g carries the labels of group ``gperm[g]`` (``ginv`` its
    inverse; the identity is the observed labelling). Returns (mAP, k), k the profiles carrying t.

    Fills, for each carrier (by group, then member), ap_out (NaN without a negative or a positive),
    n_out (negatives), m_out (positives kept by the pair rule) and q_out (the query profile).
    ``carrier``/``share`` are int64 work arrays of length P compared with fresh stamps from
    ``counter[0]`` (never cleared). mAP is the mean over the queries with an AP; NaN when none has
    one. ``rows`` is what ``similarity_rows`` returned; a row without ties and with few positives
    (m * :data:`SORT_OR_WALK` < P) takes the short path (``ranked_ap``), any other row is walked
    (:func:`.ranking.walk_sorted`), with the same bits where both apply. ``work`` is an int64
    (3, P) workspace, its last row stamps (never cleared: zeros at first); ``L`` a :class:`LabelLists`.
    """
    order, vals, rank, tied = rows
    P = order.shape[0]
    pos = work[0]
    out_pos = work[1]
    kept = work[2]
    codes = L.codes
    rule = codes.shape[1] > 0
    gm_ptr, gm = L.gm_ptr, L.gm
    lab_ptr, lab_mem = L.lab_ptr, L.lab_mem
    counter[0] += 1
    token = counter[0]
    k = np.int64(0)
    for w in range(lab_ptr[t], lab_ptr[t + 1]):
        G = ginv[lab_mem[w]]
        for h in range(gm_ptr[G], gm_ptr[G + 1]):
            carrier[gm[h]] = token
            k += 1
    m = k - 1
    total = 0.0
    used = np.int64(0)
    idx = np.int64(0)
    for w in range(lab_ptr[t], lab_ptr[t + 1]):
        G = ginv[lab_mem[w]]
        o = gperm[G]
        for h in range(gm_ptr[G], gm_ptr[G + 1]):
            q = gm[h]
            counter[0] += 1
            stamp = counter[0]
            shared = np.int64(0)
            nout = np.int64(0)
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
            mq = m
            if rule:  # carriers sharing a pair-rule value with q are left out; the others stamped in ``kept``
                for w2 in range(lab_ptr[t], lab_ptr[t + 1]):
                    G2 = ginv[lab_mem[w2]]
                    for h2 in range(gm_ptr[G2], gm_ptr[G2 + 1]):
                        x = gm[h2]
                        if x != q:
                            if _shares(codes, q, x):
                                out_pos[nout] = rank[q, x]
                                nout += 1
                                mq -= 1
                            else:
                                kept[x] = stamp
            ap = np.nan
            if n > 0 and mq > 0 and not tied[q] and mq * SORT_OR_WALK < P:
                c = np.int64(0)
                for w2 in range(lab_ptr[t], lab_ptr[t + 1]):
                    G2 = ginv[lab_mem[w2]]
                    for h2 in range(gm_ptr[G2], gm_ptr[G2 + 1]):
                        x = gm[h2]
                        if x != q and (not rule or kept[x] == stamp):
                            pos[c] = rank[q, x]
                            c += 1
                ap = ranked_ap(pos, mq, out_pos, nout)
            elif n > 0 and mq > 0 and rule:
                ap = walk_sorted(order[q], vals[q], kept, stamp, share, stamp, mq)[0]
            elif n > 0 and mq > 0:
                ap = walk_sorted(order[q], vals[q], carrier, token, share, stamp, m)[0]
            if ap == ap:
                total += ap
                used += 1
            ap_out[idx] = ap
            n_out[idx] = n
            m_out[idx] = mq
            q_out[idx] = q
            idx += 1
    return (total / used if used > 0 else np.nan), k


@inner()
def _scratch(P):  # pragma: no cover - compiled
    """The work arrays :func:`label_queries` fills, for P profiles."""
    return (np.zeros(P, dtype=np.int64), np.zeros(P, dtype=np.int64), np.zeros(1, dtype=np.int64),
            np.zeros((3, P), dtype=np.int64), np.empty(P), np.empty(P, dtype=np.int64), np.empty(P, dtype=np.int64),
            np.empty(P, dtype=np.int64))


@inner()
def _label_map(t, gperm, ginv, rows, L, scratch):  # pragma: no cover - compiled
    """mAP of label t when group i carries the labels of group ``gperm[i]`` (``ginv`` its inverse)."""
    carrier, share, counter, work, ap, nn, qq, mm = scratch
    for i in range(gperm.size):
        ginv[gperm[i]] = i
    return label_queries(t, gperm, ginv, rows, L, carrier, share, counter, work, ap, nn, qq, mm)[0]


@entry(nogil=True)
def continue_label(t, key, counter, gperm, drawn, reached, target, h, tol, observed, rows, L, values,
                   perms):  # pragma: no cover - compiled
    """Continue label t's null stream to ``target`` draws: draw b relabels the groups by the previous
    labelling shuffled again (:func:`apnull.streams.shuffle` of ``gperm``, in place, from the stream
    ``key`` at ``counter``; the identity before the first draw), and its value is label t's mAP under
    it (NaN where no query has an AP, which never reaches the observed value). Counts the draws whose
    mAP reaches ``observed - tol`` on top of ``reached``; if ``reached < h`` on entry it stops at the
    draw that makes it ``h`` (Besag & Clifford). Draw i's value goes to ``values[i]`` when that entry
    exists. With rows in ``perms`` (explicit labellings, B x G), row ``drawn`` is draw ``drawn``
    instead. Returns (counter, drawn, reached, stopped)."""
    ginv = np.empty(gperm.size, dtype=np.int64)
    scratch = _scratch(rows[0].shape[0])
    early = reached < h
    explicit = perms.shape[0] > 0
    while drawn < target:
        if explicit:
            for i in range(gperm.size):
                gperm[i] = perms[drawn, i]
        else:
            counter = shuffle(gperm, key, counter)
        v = _label_map(t, gperm, ginv, rows, L, scratch)
        drawn, reached, stop = record_draw(values, drawn, v, observed, tol, reached, early, h)
        if stop:
            return counter, drawn, reached, True
    return counter, drawn, reached, False


@entry(nogil=True)
def label_batch(ts, keys, counters, gperms, drawn, reached, observed, target, h, tol, rows, L, values,
                stopped):  # pragma: no cover - compiled
    """:func:`continue_label` for the labels ``ts`` of a batch in one call, one entry (row of ``gperms``
    and ``values``) each, in batch order; ``counters``, ``gperms``, ``drawn``, ``reached`` updated,
    ``stopped`` set."""
    no_perms = np.zeros((0, 0), dtype=np.int64)
    for i in range(ts.size):
        counters[i], drawn[i], reached[i], stopped[i] = continue_label(
            ts[i], keys[i], counters[i], gperms[i], drawn[i], reached[i], target, h, tol, observed[i], rows, L,
            values[i], no_perms)
