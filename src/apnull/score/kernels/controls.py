"""Compiled kernels (numba) of a component's controls: the tables the permutation kernels read.

Per stratum of controls: each control's similarities to the others, sorted, and the 8-byte record of
each unordered control pair (its similarity and the rank of each control in the other's row), in one
pass (:func:`sorted_control_rows`); :func:`control_rows` builds them for the strata of a component
(strata linked by perturbations) into one :class:`ControlRows`. Similarities come in blocks of four
rows (:mod:`.similarity`), with the bits of ``sim``; rows are sorted by :func:`.sort.stable_argsort`.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...compiled import entry
from .similarity import sim_rows
from .sort import sort_work, stable_argsort

__all__ = ["ControlRows", "pair_index", "pair_rank", "sorted_control_rows", "pair_rows", "control_rows"]


class ControlRows(NamedTuple):
    """The controls of one component of strata, as the kernels read them (built by
    ``_engine.prepare_component``). Stratum j of the component holds ``size[j]`` controls."""

    X: np.ndarray               #: (n_total, d) prepared control rows; stratum j at rows start[j] .. + size[j]
    start: np.ndarray           #: (J,) int64 first row of each stratum in ``X``
    size: np.ndarray            #: (J,) int64 number of controls of each stratum
    sorted_sims: np.ndarray     #: float64 buffer of sorted similarity rows (``_tables.sorted_control_rows``):
    # control c of stratum j has its n - 1 similarities to the others, ascending, at
    # sorted_offset[j] + c * (size[j] - 1)
    sorted_offset: np.ndarray   #: (J,) int64 start of stratum j in ``sorted_sims``
    pairs: np.ndarray           #: int64 buffer of 8-byte pair records (``_tables.sorted_control_rows``):
    # for controls a < b of stratum j, record i = pair_index(a, b, n) at pairs_offset[j] + i holds
    # sim(a, b) as float32, then as int16 b's rank in a's row and a's rank in b's row (how many of the
    # row's similarities exceed it; -1 - rank when it ties another entry of the row)
    pairs_offset: np.ndarray    #: (J,) int64 start of stratum j in ``pairs``
    XT: np.ndarray              #: (d, n_total) ``X`` transposed, contiguous (blocks of similarities)


@numba.njit(cache=True, inline="always")
def pair_index(a, b, n):  # pragma: no cover - compiled
    """Index of the unordered pair a < b among the n (n - 1) / 2 pairs of n items, row by row."""
    return a * (2 * n - a - 1) // 2 + (b - a - 1)


@numba.njit(cache=True, inline="always")
def pair_rank(ranks, base, cu, cy, n):  # pragma: no cover - compiled
    """How many of control cu's similarities (its sorted row) exceed sim(cu, cy), from the pair's record
    (``ranks`` the int16 view of ``ControlRows.pairs``, ``base`` the stratum's ``pairs_offset``)."""
    if cu < cy:
        r = np.int64(ranks[4 * (base + pair_index(cu, cy, n)) + 2])
    else:
        r = np.int64(ranks[4 * (base + pair_index(cy, cu, n)) + 3])
    return -1 - r if r < 0 else r


@entry()
def sorted_control_rows(Xc, XT, kind, rows, pairs):  # pragma: no cover - compiled
    """Sorted similarity rows of the controls and the 8-byte record of every unordered control pair.

    Fills rows[a] (n - 1 entries) with the similarities of control a to the other n - 1 controls,
    ascending, and ``pairs`` (int64, n (n - 1) / 2 entries, every one written) with the records:
    pair a < b is record ``i = pair_index(a, b, n)``; as float32 (entry 2 i of its
    float32 view) sim(a, b) rounded to nearest; as int16 (entries 4 i + 2 and 4 i + 3 of its int16
    view) b's rank in a's row and a's rank in b's row, each stored as -1 - rank when the similarity
    ties another entry of that row. The rank of b in a's row is how many of a's similarities exceed
    sim(a, b), so that sim(a, b) = rows[a, n - 2 - rank]; the float32 value is that of the last entry
    of its tied block. ``XT`` is ``Xc`` transposed (contiguous).

    sim(a, b) and sim(b, a) have the same bits (products commute, and a difference only changes sign),
    so each is computed once: rows a0 .. a0 + 3 (four at a time) against the controls from a0 on; the
    values for each later row b are parked in rows[b] at the slots a0 .. a0 + 3 (the similarities to
    controls a < b sit at slot a), which row b reads back when its turn comes, before it is sorted
    into place. Each record is completed from both rows.
    """
    n = Xc.shape[0]
    m = max(n - 1, 0)
    S = np.empty((4, n))
    vals = np.empty(m)
    order = np.empty(m, dtype=np.int64)
    work = sort_work(m)
    zero = np.int64(0)  # not a literal 0: a literal argument would compile sim_rows once more
    sims = pairs.view(np.float32)
    ranks = pairs.view(np.int16)
    for a0 in range(0, n, 4):
        a1 = min(a0 + 4, n)
        w = a1 - a0
        sim_rows(Xc, a0, a1, Xc, XT, a0, n, kind, S, zero, zero)  # S[i, c - a0] = sim(a0 + i, c), c >= a0
        if w == 4:
            for b in range(a1, n):  # parked for row b: its similarities to a0 .. a0 + 3
                rb = rows[b]
                c = b - a0
                rb[a0] = S[0, c]
                rb[a0 + 1] = S[1, c]
                rb[a0 + 2] = S[2, c]
                rb[a0 + 3] = S[3, c]
        else:
            for b in range(a1, n):
                for i in range(w):
                    rows[b, a0 + i] = S[i, b - a0]
        for a in range(a0, a1):
            ra = rows[a]
            for b in range(a0):  # parked by the blocks before
                vals[b] = ra[b]
            for b in range(a0, a):  # rows of this block before a: sim(b, a)
                vals[b] = S[b - a0, a - a0]
            srow = S[a - a0]
            for b in range(a + 1, n):
                vals[b - 1] = srow[b - a0]
            stable_argsort(vals, order, work)  # = argsort(kind="mergesort")
            row = rows[a]
            for t in range(m):
                row[t] = vals[order[t]]
            hi = m
            while hi > 0:  # tied blocks, from the largest values down: rank = entries above the block
                lo = hi - 1
                while lo > 0 and row[lo - 1] == row[hi - 1]:
                    lo -= 1
                rank = m - hi
                if hi - lo > 1:
                    rank = -1 - rank
                v32 = np.float32(row[hi - 1])
                for t in range(lo, hi):
                    col = order[t]
                    if col >= a:  # b = col + 1 > a: the record's first rank and its similarity
                        i = pair_index(a, col + 1, n)
                        sims[2 * i] = v32
                        ranks[4 * i + 2] = rank
                    else:  # b = col < a
                        ranks[4 * pair_index(col, a, n) + 3] = rank
                hi = lo


def control_rows(Xc_list, kind) -> ControlRows:
    """The :class:`ControlRows` of the strata whose control rows are ``Xc_list`` (in order): the controls
    concatenated, each control's similarities to the others sorted once and ranked.

    Memory: 12 bytes per ordered pair of controls in a stratum (the sorted float64 rows, and the 8-byte
    record (float32 similarity, both int16 ranks) of each unordered pair, which the kernels read).
    """
    csize = np.array([x.shape[0] for x in Xc_list], dtype=np.int64)
    cstart = np.concatenate([[0], np.cumsum(csize)[:-1]]).astype(np.int64)
    lens = csize * np.maximum(csize - 1, 0)
    soff = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    buf = np.empty(int(lens.sum()))
    plens = csize * np.maximum(csize - 1, 0) // 2  # one 8-byte record per unordered pair
    poff = np.concatenate([[0], np.cumsum(plens)[:-1]]).astype(np.int64)
    pbuf = np.empty(int(plens.sum()), dtype=np.int64)
    Xc = np.ascontiguousarray(np.concatenate(Xc_list)) if Xc_list else np.empty((0, 0))
    XT = np.ascontiguousarray(Xc.T)
    for j in range(len(Xc_list)):
        n = int(csize[j])
        rows = buf[soff[j]:soff[j] + lens[j]].reshape(n, max(n - 1, 0))  # filled in place: no copies
        sorted_control_rows(Xc[cstart[j]:cstart[j] + n], np.ascontiguousarray(XT[:, cstart[j]:cstart[j] + n]),
                                    kind, rows, pbuf[poff[j]:poff[j] + plens[j]])
    return ControlRows(Xc, cstart, csize, buf, soff, pbuf, poff, XT)



def pair_rows(Xc, kind) -> tuple:
    """(rows, pairs) of :func:`sorted_control_rows` for the controls ``Xc``, in new arrays.

    Pair (a, b) is record ``pairs[pair_index(a, b, n)]``. One record serves both directions of a pair,
    so a draw of k controls reads k (k - 1) / 2 records; ranks fit int16 below 32,768 controls a
    stratum (``limits.SCORE_MAX_STRATUM_CONTROLS`` is 10,000).
    """
    Xc = np.ascontiguousarray(Xc, dtype=np.float64)
    n = Xc.shape[0]
    rows = np.empty((n, max(n - 1, 0)))
    pairs = np.empty(n * max(n - 1, 0) // 2, dtype=np.int64)
    sorted_control_rows(Xc, np.ascontiguousarray(Xc.T), kind, rows, pairs)
    return rows, pairs
