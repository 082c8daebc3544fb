"""A stable argsort of float64 values by radix (numba): the order ``np.argsort(kind="mergesort")`` gives.

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

_SIGN = np.uint64(1) << np.uint64(63)


@numba.njit(cache=True)
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
        total = 0
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


@numba.njit(cache=True)
def radix_work(n):  # pragma: no cover - compiled
    """A scratch array for :func:`radix_argsort` of up to n values."""
    return np.empty(4 * n + 256)
