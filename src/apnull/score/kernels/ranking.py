"""Compiled kernels (numba): tie-aware AP and Precision@R of one query, the one tie-block walk.

Ties in similarity are averaged over all orders of each tied block (DESIGN: tie-aware AP). A block of
L items holding a positives, with ``start`` items and ``before`` positives ranked above it,
contributes :func:`block_sum` to the sum of precisions and a * min(L, max(0, R - start)) / L to the
hits in the top R (R = m: Precision@R). Two forms of input reach that one block arithmetic
(:func:`close_block`):

- :func:`walk_sorted`: a ranking already sorted by score, each item a positive, a negative or left
  out (stamps, so the caller marks classes without clearing arrays): ``score.ties``,
  ``score.rankings`` and consistency's tied rows;
- :func:`walk_counts`: the m positives' own values and, for each, how many pool members rank above it
  and tie with it (the permutation kernels, which never sort a whole ranking).

Deterministic scalar code: the same inputs give the same bits in any process or thread.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ... import exact
from ...compiled import entry, inner

__all__ = ["HARMONIC_TABLE", "compiled_harmonic", "block_sum", "close_block", "walk_sorted", "walk_counts", "walk_blocks",
           "add_query", "tie_aware_from_sorted", "count_sorted", "equal_below"]

_EULER = 0.5772156649015329
#: H_0 .. H_63 from the one harmonic, :func:`apnull.exact.harmonic` (correctly rounded), frozen into
#: the compiled code: what :func:`compiled_harmonic` returns below 64.
HARMONIC_TABLE = np.array([exact.harmonic(n) for n in range(64)])


@entry()
def compiled_harmonic(n):  # pragma: no cover - compiled
    """H_n = sum_{i<=n} 1/i for nopython code: :func:`apnull.exact.harmonic` below 64 (``HARMONIC_TABLE``),
    the asymptotic series ln n + gamma + 1/(2n) - 1/(12n^2) + 1/(120n^4) - 1/(252n^6) above (error < 1e-17).

    ``exact.harmonic`` is the one definition (any power; numba cannot call it and it must not import
    numba); this reads its values and is held to it within a few ulp (``tests/score/test_score_ties.py``).
    Only ``block_sum`` uses it.
    """
    if n < 64:
        return HARMONIC_TABLE[n]
    x = float(n)
    x2 = 1.0 / (x * x)
    return math.log(x) + _EULER + 0.5 / x - x2 * (1.0 / 12 - x2 * (1.0 / 120 - x2 / 252))


@inner()
def block_sum(a, L, start, before):  # pragma: no cover - compiled
    """Expected sum of precisions at the a positives of a tied block of L items (a positives).

    The block occupies ranks start+1 .. start+L with ``before`` positives ranked above it. Slot p is
    positive with probability a/L, and then holds before + 1 + (p-1)(a-1)/(L-1) positives on
    average up to itself, so the block contributes
    sum_{p=1..L} (a/L) * (before + 1 + (p-1)(a-1)/(L-1)) / (start + p)
    = (a/L) * [(alpha - beta*(start+1)) * (H_{start+L} - H_start) + beta*L],
    alpha = before + 1, beta = (a-1)/(L-1). Summed directly for L <= 64 (exact without ties).
    """
    if L == 1:
        return (before + 1.0) / (start + 1.0)
    beta = (a - 1.0) / (L - 1.0)
    if L <= 64:
        s = 0.0
        for p in range(1, L + 1):
            s += (before + 1.0 + (p - 1) * beta) / (start + p)
        return s * a / L
    alpha = before + 1.0
    dh = compiled_harmonic(start + L) - compiled_harmonic(start)
    return (a / L) * ((alpha - beta * (start + 1.0)) * dh + beta * L)


@numba.njit(cache=True, inline="always")
def close_block(a, L, start, before, R):  # pragma: no cover - compiled
    """(sum of precisions, hits in the top R) of a tied block: L items, a positives, ``start`` items
    and ``before`` positives above it (see the module text)."""
    return block_sum(a, L, start, before), a * min(L, max(0, R - start)) / L


@inner()
def walk_sorted(order, vals, carrier, token, share, stamp, m):  # pragma: no cover - compiled
    """Tie-aware (AP, Precision@R) of a sorted ranking: item ``order[i]`` (i = 0 first) has score
    ``vals[i]`` (descending); item x is a positive when ``carrier[x] == token``, left out of the
    ranking when not a positive and ``share[x] == stamp``, else a negative. ``m`` positives in all
    (NaN, NaN for m = 0). Stops once the m positives are placed."""
    if m == 0:
        return np.nan, np.nan
    N = order.size
    i = np.int64(0)
    before = np.int64(0)
    start = np.int64(0)
    total = 0.0
    hits = 0.0
    while i < N and before < m:
        v = vals[i]
        j = i
        a = np.int64(0)
        e = np.int64(0)
        while j < N and vals[j] == v:
            x = order[j]
            if carrier[x] == token:
                a += 1
            elif share[x] != stamp:
                e += 1
            j += 1
        L = a + e
        if a > 0:
            s, h = close_block(a, L, start, before, m)
            total += s
            hits += h
        before += a
        start += L
        i = j
    return total / m, hits / m


@entry()
def tie_aware_from_sorted(scores, rel):  # pragma: no cover - compiled
    """Tie-aware AP and Precision@R of items already sorted by score, descending (``rel`` nonzero for a
    relevant item); NaN, NaN when there is none. :func:`walk_sorted` with every item in the ranking."""
    N = scores.size
    order = np.arange(N)
    carrier = np.zeros(N, dtype=np.int64)
    m = np.int64(0)
    for i in range(N):
        if rel[i]:
            carrier[i] = 1
            m += 1
    share = np.zeros(N, dtype=np.int64)
    return walk_sorted(order, scores, carrier, np.int64(1), share, np.int64(1), m)


@inner()
def count_sorted(row, v):  # pragma: no cover - compiled
    """(#row > v, #row == v) in an ascending row, by binary search (the positions numpy's
    ``searchsorted`` gives with side "right" and "left"; written out so no text argument is compiled)."""
    lo = np.int64(0)
    hi = np.int64(row.size)
    while lo < hi:  # first entry > v
        mid = (lo + hi) >> 1
        if row[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    right = lo
    lo = np.int64(0)
    hi = right
    while lo < hi:  # first entry >= v
        mid = (lo + hi) >> 1
        if row[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return row.size - right, right - lo


@numba.njit(cache=True, inline="always")
def equal_below(row, pos, v):  # pragma: no cover - compiled
    """How many entries equal v end at index pos of an ascending row (ties are rare: a short scan)."""
    e = np.int64(0)
    while pos >= 0 and row[pos] == v:
        e += 1
        pos -= 1
    return e


@inner()
def count_replicates(simRP, u, lo, hi, skip, v, gt, eq):  # pragma: no cover - compiled
    """(gt, eq) with the replicates ``lo .. hi - 1`` of a stratum added, but ``skip`` (-1: none): each whose
    similarity to member u, ``simRP[r, u]``, is > v or == v (the stratum's replicates beside its sorted
    control row of :func:`count_sorted`)."""
    for r in range(lo, hi):
        if r != skip:
            w = simRP[r, u]
            if w > v:
                gt += 1
            elif w == v:
                eq += 1
    return gt, eq


@numba.njit(cache=True, inline="always")
def add_query(ap, pr, qi, total, scored, want, ap_out, pr_out):  # pragma: no cover - compiled
    """(total, scored) of a mean AP with query qi's (AP, P@R) added: a NaN AP (no positive kept) is left
    out; both go to ap_out[qi] / pr_out[qi] if ``want``. The mean is total / scored (0 when none)."""
    if ap == ap:
        total += ap
        scored += 1
    if want:
        ap_out[qi] = ap
        pr_out[qi] = pr
    return total, scored


@inner()
def walk_counts(vals, same, kept, base_gt, base_eq, order, cnt):  # pragma: no cover - compiled
    """Tie-aware (AP, Precision@R) of one query from the values of the cnt other members of its drawn set.

    ``kept[y]``: member y is a positive (else left out of the ranking: the pair rule); ``same[y]``:
    y lies in the query's stratum pool, so it is taken out of base_gt / base_eq (members of that pool,
    the query excluded, with similarity > / == vals[y]) whether kept or not: what is left are the
    negatives. A block of a tied positives with value v starts after (#negatives > v) + (#positives
    > v) items and holds the a positives and the #negatives == v. NaN, NaN when no member is kept.
    ``order`` is a work array (insertion sort of the kept members by value, descending); ``same`` is
    overwritten: its first entries become the members it marked (a block then takes out those few, not
    a pass over all cnt: a query of many replicates, few of them on its plate, walks in O(cnt), not
    O(cnt^2)).
    """
    m = np.int64(0)
    ns = np.int64(0)
    for i in range(cnt):
        if same[i] != 0:
            same[ns] = i  # ns <= i: an entry is read before it is overwritten
            ns += 1
        if kept[i] == 0:
            continue
        j = m
        while j > 0 and vals[order[j - 1]] < vals[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
        m += 1
    if m == 0:
        return np.nan, np.nan
    return walk_blocks(vals, order, m, base_gt, base_eq, same, ns)


@numba.njit(cache=True, inline="always")
def walk_blocks(vals, order, m, base_gt, base_eq, same, ns):  # pragma: no cover - compiled
    """(AP, Precision@R) of m >= 1 positives ``order[:m]`` (indices into ``vals``, most similar first),
    walked a tied block at a time (:func:`close_block`): a block's counts are its first positive's
    ``base_gt`` / ``base_eq``, less the members ``same[:ns]`` (indices into ``vals``: those in the
    query's stratum pool) more similar / as similar (:func:`walk_counts`; ns = 0 takes nothing out, and
    the loop compiles away where ns is the literal 0: :func:`.lookups.walk_positives`)."""
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
        gt = base_gt[first]
        eq = base_eq[first]
        for t in range(ns):
            w = vals[same[t]]
            if w > v:
                gt -= 1
            elif w == v:
                eq -= 1
        s, h = close_block(a, a + eq, gt + before, before, m)
        total += s
        hits += h
        before += a
        i += a
    return total / m, hits / m
