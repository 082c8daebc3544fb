"""Stable argsorts of float64 values (numba): the order ``np.argsort(kind="mergesort")`` gives, by radix
(``radix_argsort``) or by buckets (``stable_argsort``, radix where buckets would be slow).

Each value (finite; -0.0 read as 0.0) is mapped to a 64-bit key whose unsigned order is the order of
the values: flip every bit of a negative value, set the sign bit of a non-negative one. Eight stable
counting passes over the key bytes, least significant first, then sort the keys; a pass whose byte is
the same for every key moves nothing and is skipped (similarities share their exponent bytes). For the
few thousand values of a similarity row this is several times faster than a comparison sort, and being
stable it puts equal values in index order, exactly as a stable merge sort does.
"""

from __future__ import annotations

import numba
import numpy as np

from ...compiled import inner

_SIGN = np.uint64(1) << np.uint64(63)


@inner()
def radix_argsort(vals, order, work):  # pragma: no cover - compiled
    """Write into ``order`` (int64, n) the stable ascending order of ``vals`` (n finite floats).

    ``work`` is a float64 scratch array of at least 2 n + 2 n (keys and indices, twice) + 256 entries
    (reused between calls: no allocation here). Returns ``order``.
    """
    n = vals.size
    fk = work[:n]
    fk2 = work[n:2 * n]
    for i in range(n):
        fk[i] = vals[i] + 0.0  # -0.0 + 0.0 = 0.0: equal values get equal keys
    keys = fk.view(np.uint64)
    keys2 = fk2.view(np.uint64)
    idx = work[2 * n:3 * n].view(np.int64)
    idx2 = work[3 * n:4 * n].view(np.int64)
    count = work[4 * n:4 * n + 256].view(np.int64)
    for i in range(n):
        kb = keys[i]
        if kb & _SIGN:
            keys[i] = ~kb
        else:
            keys[i] = kb | _SIGN
        idx[i] = i
    flipped = False
    for p in range(8):
        shift = np.uint64(8 * p)
        for c in range(256):
            count[c] = 0
        src_k = keys2 if flipped else keys
        src_i = idx2 if flipped else idx
        dst_k = keys if flipped else keys2
        dst_i = idx if flipped else idx2
        for i in range(n):
            count[np.int64((src_k[i] >> shift) & np.uint64(255))] += 1
        if n == 0 or count[np.int64((src_k[0] >> shift) & np.uint64(255))] == n:
            continue
        total = np.int64(0)
        for c in range(256):
            t = count[c]
            count[c] = total
            total += t
        for i in range(n):
            c = np.int64((src_k[i] >> shift) & np.uint64(255))
            pos = count[c]
            dst_k[pos] = src_k[i]
            dst_i[pos] = src_i[i]
            count[c] = pos + 1
        flipped = not flipped
    src_i = idx2 if flipped else idx
    for i in range(n):
        order[i] = src_i[i]
    return order


@numba.njit(cache=True, inline="always")
def radix_work(n):  # pragma: no cover - compiled
    """A scratch array for :func:`radix_argsort` of up to n values."""
    return np.empty(4 * n + 256)


#: Largest bucket :func:`stable_argsort` sorts by insertion; a larger one sorts the row by radix.
BUCKET_LIMIT = 64
#: Buckets per value in :func:`stable_argsort` (fewer values share a bucket: fewer moves in the
#: insertion sort, whose branches are hard to predict).
BUCKETS = 3


@inner()
def stable_argsort(vals, order, work):  # pragma: no cover - compiled
    """Write into ``order`` (int64, n) the stable ascending order of ``vals`` (n finite floats): the
    order of :func:`radix_argsort` (and of ``np.argsort(kind="mergesort")``), usually faster.

    The values go to 3 n buckets by ``floor((v - min) * (3 n - 1) / (max - min))``, which never decreases
    as v grows (each rounding is monotone), in index order; one insertion sort of the result then
    moves values only within their bucket, keeps equal values in index order and gives the stable
    order. Similarity rows are spread out, so buckets hold one or two values; a bucket over
    ``BUCKET_LIMIT`` values (clustered values), or a range that is not finite, sorts by radix instead.
    ``work``: :func:`sort_work` of at least n.
    """
    n = vals.size
    if n < 2:
        for i in range(n):
            order[i] = i
        return order
    lo = vals[0]
    hi = vals[0]
    lo1, hi1, lo2, hi2, lo3, hi3 = lo, hi, lo, hi, lo, hi  # four independent chains
    i = np.int64(0)
    while i + 4 <= n:
        lo = min(lo, vals[i])
        hi = max(hi, vals[i])
        lo1 = min(lo1, vals[i + 1])
        hi1 = max(hi1, vals[i + 1])
        lo2 = min(lo2, vals[i + 2])
        hi2 = max(hi2, vals[i + 2])
        lo3 = min(lo3, vals[i + 3])
        hi3 = max(hi3, vals[i + 3])
        i += 4
    while i < n:
        lo = min(lo, vals[i])
        hi = max(hi, vals[i])
        i += 1
    lo = min(min(lo, lo1), min(lo2, lo3))
    hi = max(max(hi, hi1), max(hi2, hi3))
    span = hi - lo
    if span == 0.0:  # all equal (-0.0 and 0.0 alike)
        for i in range(n):
            order[i] = i
        return order
    rwork = work[:4 * n + 256]
    if not span < np.inf:
        return radix_argsort(vals, order, rwork)
    nb = BUCKETS * n
    count = work[4 * n + 256:4 * n + 257 + nb].view(np.int64)
    bucket = work[4 * n + 257 + nb:5 * n + 257 + nb].view(np.int64)
    sv = work[5 * n + 257 + nb:6 * n + 257 + nb]
    scale = (nb - 1) / span
    if not scale < np.inf:  # a span below the smallest normal numbers
        return radix_argsort(vals, order, rwork)
    for c in range(nb + 1):
        count[c] = 0
    for i in range(n):
        b = min(np.int64((vals[i] - lo) * scale), nb - 1)
        bucket[i] = b
        count[b] += 1
    total = np.int64(0)
    big = np.int64(0)
    for c in range(nb):  # bucket starts, summed in registers
        t = count[c]
        big = max(big, t)
        count[c] = total
        total += t
    if big > BUCKET_LIMIT:
        return radix_argsort(vals, order, rwork)
    for i in range(n):
        b = bucket[i]
        p = count[b]
        sv[p] = vals[i]
        order[p] = i
        count[b] = p + 1
    for i in range(1, n):
        x = sv[i]
        if not sv[i - 1] > x:
            continue
        oi = order[i]
        j = i
        while j > 0 and sv[j - 1] > x:
            sv[j] = sv[j - 1]
            order[j] = order[j - 1]
            j -= 1
        sv[j] = x
        order[j] = oi
    return order


@numba.njit(cache=True, inline="always")
def sort_work(n):  # pragma: no cover - compiled
    """A scratch array for :func:`stable_argsort` (and :func:`radix_argsort`) of up to n values."""
    return np.empty((6 + BUCKETS) * n + 257)


@numba.njit(cache=True, inline="always")
def insertion_sort(a, n):  # pragma: no cover - compiled
    """Sort ``a[:n]`` ascending in place, by insertion: the few values of one draw or one count (a
    draw's positives' counts, a partial choice's bounds), where a call to a general sort costs more."""
    for i in range(1, n):
        x = a[i]
        j = i
        while j > 0 and a[j - 1] > x:
            a[j] = a[j - 1]
            j -= 1
        a[j] = x
