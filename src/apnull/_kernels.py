"""Compiled kernels (numba) of the null sampler, and the package's one random stream (``uniform``).

Imported lazily: only Monte Carlo sampling and the scoring permutations (apnull.score) need them.

``floyd_ap_pr`` performs exactly the steps of ``sampling._metrics_numpy`` (the plain-numpy reference)
and gives the same numbers; tests hold the two together.
"""

import numba
import numpy as np

# de Bruijn sequence for finding the index of the lowest set bit of a 64-bit word
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.array(
    [0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4,
     62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
     63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
     46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6], dtype=np.int64)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@numba.njit(cache=True, inline="always")
def uniform(key, index):  # pragma: no cover - compiled
    """The index-th 53-bit uniform in [0, 1) of the SplitMix64 stream with seed ``key``: the package's
    one random stream (the null sampler here, the permutations of :mod:`apnull.score`)."""
    z = key + (index + np.uint64(1)) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True, parallel=True)
def floyd_ap_pr(key, rows, k, N, m, complement, top, ap_out, pr_out, top_out):  # pragma: no cover - compiled
    """AP, Precision@R and the positives in the top ``top`` ranks of ``rows`` null draws, into
    ap_out, pr_out and top_out.

    Row r uses uniforms r*k .. r*k+k-1 of the stream ``key``. Floyd's algorithm marks k ranks in a
    bitset; the positives (the marked ranks, or the unmarked ones if ``complement``) are then
    visited in rank order one set bit at a time, so a row costs O(k + N/64), not O(N).
    """
    nwords = (N + 63) // 64
    one = np.uint64(1)
    uk = np.uint64(k)
    for r in numba.prange(rows):
        bits = np.zeros(nwords, dtype=np.uint64)
        base = np.uint64(r) * uk
        for c in range(k):
            j = N - k + c
            t = min(np.int64(uniform(key, base + np.uint64(c)) * (j + 1)), j)
            if (bits[t >> 6] >> np.uint64(t & 63)) & one:
                t = j
            bits[t >> 6] |= one << np.uint64(t & 63)
        i = 0
        s = 0.0
        hits = 0
        top_hits = 0
        for w in range(nwords):
            word = bits[w]
            if complement:
                word = ~word
                if w == nwords - 1 and N % 64 != 0:
                    word &= (one << np.uint64(N % 64)) - one
            while word != 0:
                low = word & (~word + one)
                pos = w * 64 + _DEBRUIJN_INDEX[np.int64((low * _DEBRUIJN) >> np.uint64(58))]
                i += 1
                s += i / (pos + 1.0)
                if pos < m:
                    hits += 1
                if pos < top:
                    top_hits += 1
                word ^= low
        ap_out[r] = s / m
        pr_out[r] = hits / m
        top_out[r] = top_hits
