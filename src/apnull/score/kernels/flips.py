"""Compiled kernels (numba) of the pipeline comparison: sign flips of whole units.

A comparison statistic is a sum over *units* (groups of perturbations resampled together, see
:mod:`..nulls.compare`): T = sum_u x_u. A sign flip s in {+1, -1}^U gives T_s = sum_u s_u x_u, summed
in unit order (so the flip that changes nothing gives T itself, bit for bit, and a flip and its
complement give values of exactly opposite sign).

- random flips: flip j of the stream ``key`` flips unit u when the uniform number ``j * U + u`` of the
  stream (:func:`apnull.streams.uniform`) is below 1/2, so flip j is the same in every run, thread
  or process, and a longer run continues a shorter one;
- enumeration: flip j (0 <= j < 2^U) flips unit u when bit u of j is set (j = 0 is the identity).

Deterministic scalar code: the same bits in any process.
"""

from __future__ import annotations

import numba
import numpy as np

from ...streams import uniform

__all__ = ["flip_batch", "flipped_parts"]


@numba.njit(cache=True, inline="always")
def _flipped(key, j, u, units, exhaustive):  # pragma: no cover - compiled
    """Whether flip j flips unit u (see the module)."""
    if exhaustive:
        return (j >> u) & 1 == 1
    return uniform(key, np.uint64(j) * np.uint64(units) + np.uint64(u)) < 0.5


@numba.njit(cache=True, nogil=True)
def flip_batch(sums, keys, tol, drawn, reached, stopped, target, h, exhaustive):  # pragma: no cover - compiled
    """Continue the sign-flip nulls of ``sums.shape[0]`` statistics, in place.

    Statistic i has unit values ``sums[i]``; its observed value is T = sum_u sums[i, u]. Each flip s
    *reaches* T when ``|T_s| >= |T| - tol[i]`` (two-sided). Random flips: from flip ``drawn[i]`` on,
    until ``target`` flips in all or, Besag-Clifford, the ``h``-th flip reaching T (``stopped[i]``
    set); ``drawn``/``reached`` count the flips and those reaching T. ``exhaustive``: every one of
    the 2^U flips instead (``target`` and ``h`` ignored): ``drawn[i]`` = 2^U.
    """
    n, U = sums.shape
    for i in range(n):
        x = sums[i]
        t_obs = 0.0
        for u in range(U):
            t_obs += x[u]
        a = abs(t_obs) - tol[i]
        L = np.int64(0) if exhaustive else drawn[i]
        g = np.int64(0) if exhaustive else reached[i]
        end = (np.int64(1) << np.int64(U)) if exhaustive else np.int64(target)
        stop = False
        while L < end:
            t = 0.0
            for u in range(U):
                if _flipped(keys[i], L, u, U, exhaustive):
                    t -= x[u]
                else:
                    t += x[u]
            L += 1
            if abs(t) >= a:
                g += 1
                if not exhaustive and g >= h:
                    stop = True
                    break
        drawn[i] = L
        reached[i] = g
        stopped[i] = stop


@numba.njit(cache=True, nogil=True)
def flipped_parts(values, counts, key, draws, exhaustive):  # pragma: no cover - compiled
    """(value, count) of the flipped units of each flip: ``sum_{u flipped} values[u]`` and
    ``sum_{u flipped} counts[u]`` for flips 0 .. ``draws - 1`` of the stream ``key`` (the flips
    :func:`flip_batch` counts), or of every flip when ``exhaustive`` (``draws`` = 2^U)."""
    U = values.size
    part = np.zeros(draws)
    size = np.zeros(draws, dtype=np.int64)
    for j in range(draws):
        v = 0.0
        c = np.int64(0)
        for u in range(U):
            if _flipped(key, np.int64(j), u, U, exhaustive):
                v += values[u]
                c += counts[u]
        part[j] = v
        size[j] = c
    return part, size
