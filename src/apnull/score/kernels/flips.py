"""Compiled kernels (numba) of the pipeline comparison: sign flips of whole units.

A comparison statistic is a sum over *units* (groups of perturbations resampled together, see
:mod:`..nulls.compare`): T = sum_u x_u. A sign flip s in {+1, -1}^U gives T_s = sum_u s_u x_u, summed
in unit order (so the flip that changes nothing gives T itself, bit for bit, and a flip and its
complement give values of exactly opposite sign).

- random flips: flip j of the stream ``key`` flips unit u when the uniform number ``j * U + u`` of the
  stream (:func:`apnull.streams.uniform`) is below 1/2, so flip j is the same in every run, thread
  or process, and a longer run continues a shorter one;
- enumeration: flip j (0 <= j < 2^U) flips unit u when bit u of j is set (j = 0 is the identity).

:func:`flip_batch` counts the flips of sums (the mean delta), :func:`flipped_parts` gives each flip's
flipped share (the interval), :func:`retrieved_flips` counts Benjamini-Hochberg again on both sides
under each flip (the retrieved counts). Deterministic scalar code: the same bits in any process.
"""

from __future__ import annotations

import numba
import numpy as np

from ...compiled import entry
from ...fdr import bh_count
from ...streams import uniform
from .chunks import count_draw

__all__ = ["flip_batch", "flipped_parts", "retrieved_flips"]


@numba.njit(cache=True, inline="always")
def _flipped(key, j, u, units, exhaustive):  # pragma: no cover - compiled
    """Whether flip j flips unit u (see the module)."""
    if exhaustive:
        return (j >> u) & 1 == 1
    return uniform(key, np.uint64(j) * np.uint64(units) + np.uint64(u)) < 0.5


@entry(nogil=True)
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
        L = np.int64(0) if exhaustive else drawn[i]
        g = np.int64(0) if exhaustive else reached[i]
        end = (np.int64(1) << np.int64(U)) if exhaustive else np.int64(target)
        stop = False
        while L < end and not stop:
            t = 0.0
            for u in range(U):
                if _flipped(keys[i], L, u, U, exhaustive):
                    t -= x[u]
                else:
                    t += x[u]
            L += 1
            g, stop = count_draw(abs(t), abs(t_obs), tol[i], g, not exhaustive, h)
        drawn[i] = L
        reached[i] = g
        stopped[i] = stop


@entry(nogil=True)
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


@entry(nogil=True)
def retrieved_flips(ca, cb, unit, units, key, drawn, reached, target, h, exhaustive):  # pragma: no cover
    """Continue the sign-flip null of the retrieved counts; returns (drawn, reached, stopped).

    Perturbation j (of T) has the *first level* ``ca[j]`` on side A, ``cb[j]`` on side B: the smallest
    k with p_j * T / k <= alpha (T + 1 if none), so Benjamini-Hochberg at alpha rejects on a side
    exactly R = max{k : #{j : c_j <= k} >= k} tests. The statistic is R_B - R_A; flip s gives each
    perturbation of a flipped unit (``unit[j]``) B's level on side A and A's on side B, and BH is
    counted again on both sides. A flip reaches the observed value when |R_B' - R_A'| >= |R_B - R_A|.
    Random flips continue from ``drawn`` to ``target`` or the ``h``-th flip reaching it; ``exhaustive``
    counts all 2^units flips instead.
    """
    T = ca.size
    ha = np.zeros(T + 2, dtype=np.int64)
    hb = np.zeros(T + 2, dtype=np.int64)
    for j in range(T):
        ha[ca[j]] += 1
        hb[cb[j]] += 1
    obs = abs(bh_count(hb, T) - bh_count(ha, T))
    flip = np.zeros(units, dtype=np.bool_)
    L = np.int64(0) if exhaustive else drawn
    g = np.int64(0) if exhaustive else reached
    end = (np.int64(1) << np.int64(units)) if exhaustive else np.int64(target)
    stop = False
    while L < end and not stop:
        for u in range(units):
            flip[u] = _flipped(key, L, u, units, exhaustive)
        for k in range(T + 2):
            ha[k] = 0
            hb[k] = 0
        for j in range(T):
            if flip[unit[j]]:
                ha[cb[j]] += 1
                hb[ca[j]] += 1
            else:
                ha[ca[j]] += 1
                hb[cb[j]] += 1
        L += 1
        g, stop = count_draw(abs(bh_count(hb, T) - bh_count(ha, T)), obs, 0, g, not exhaustive, h)
    return L, g, stop
