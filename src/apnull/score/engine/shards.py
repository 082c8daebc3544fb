"""Cutting a screen's items into the shards sent to dask workers, each with only the strata it needs.

A null's items (perturbations) come in *units*, the components of strata: strata linked by an item
with replicates in both (:func:`..table.perts.components_of`). Units share nothing, so the natural
shard is a few whole units. On the crossed layout (each replicate on its own plate, every plate
holding replicates of hundreds of perturbations) one unit holds every plate, and whole units cannot
split the work. A unit larger than a shard's share is then cut by its items: each piece is a set of
perturbations, and a worker receives their replicate rows and the controls of only the strata they
have replicates in (:func:`touched_strata`), not the unit's every stratum. An item's draws read its
own strata only (its pool in each), and its streams are keyed by its name and stratum, so a cut
changes no value: the results are those of one process, bit for bit.

The pieces of a cut unit take its items in order of their strata (:func:`strata_order`: the sorted
list of each item's strata, compared as words), so items sharing plates (JUMP's compounds of one plate
map share all their plates) land in one piece and each piece needs few plates' controls.

Shards are of similar cost, not of similar size, when the items' costs are given: a positive control
with two wells on each of a screen's 34 plates (68 replicates) costs as much a draw as 200 five-replicate
compounds. Sized by replicates, JUMP's eight controls filled two of sixteen shards (half the screen's
cost), each of them one task of the first round, so the rest of the work waited on two workers' turns.
"""

from __future__ import annotations

import numpy as np

from ..table.segments import ranges

__all__ = ["batch_bounds", "screen_shards", "strata_order", "touched_strata"]


def strata_order(soff: np.ndarray, seg_stratum: np.ndarray, items: np.ndarray) -> np.ndarray:
    """``items`` ordered by their strata: each item's stratum indices sorted, the lists compared as
    words (first stratum, then second, ...; a shorter list first when it is a prefix), ties by item."""
    items = np.asarray(items, dtype=np.int64)
    if items.size < 2:
        return items
    n = soff[items + 1] - soff[items]
    width = int(n.max())
    pad = np.full((items.size, width), -1, dtype=np.int64)  # -1: no stratum (a prefix sorts first)
    segs = ranges(soff, items)
    row = np.repeat(np.arange(items.size), n)
    col = np.arange(segs.size) - np.repeat(np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    pad[row, col] = seg_stratum[segs]
    last = np.iinfo(np.int64).max
    pad = np.where(pad < 0, last, pad)
    pad.sort(axis=1)  # each item's strata ascending, the pads after them ...
    pad[pad == last] = -1  # ... and below any stratum: a list that is a prefix of another sorts first
    keys = [items] + [pad[:, c] for c in range(width - 1, -1, -1)]  # lexsort: last key first
    return items[np.lexsort(keys)]


def touched_strata(soff: np.ndarray, seg_stratum: np.ndarray, items, strata: np.ndarray) -> np.ndarray:
    """The strata of ``strata`` (a unit's, in its order) in which some item of ``items`` has replicates,
    in the same order: what a shard of those items needs of the unit."""
    used = np.zeros(int(max(strata.max(initial=-1), seg_stratum.max(initial=-1))) + 1, dtype=bool)
    used[seg_stratum[ranges(soff, items)]] = True
    return strata[used[strata]]


def batch_bounds(count: int, weights, size: int, budget: float) -> list:
    """[(start, end), ...]: consecutive batches of ``count`` items in their order (``weights`` their costs,
    or None: ``size`` items a batch). A batch ends at ``size`` items, or before the item that would take
    its cost past ``budget``: a heavy item (a perturbation with replicates on every plate: k (k - 1)
    pairs a draw) starts a batch of its own, so the heavy items spread over the batches rather than queue
    in one. Items of equal cost are cut as without weights. The batches of a round in process
    (:meth:`.executor.InProcess.run`: ``size`` items of the round's mean cost), of a round's tasks on
    dask (:meth:`.executor.Scattered.run`) and the pieces of a cut unit (:func:`screen_shards`)."""
    if weights is None:
        return [(a, min(a + size, count)) for a in range(0, count, size)]
    bounds, start, cost = [], 0, 0.0
    for i, w in enumerate(np.asarray(weights, dtype=float).tolist()):
        if i > start and (i - start == size or cost + w > budget):
            bounds.append((start, i))
            start, cost = i, 0.0
        cost += w
    bounds.append((start, count))
    return bounds


def screen_shards(units: list, qoff: np.ndarray, soff: np.ndarray, seg_stratum: np.ndarray,
                  count: int, weights=None) -> list:
    """About ``count`` shards (item arrays) of similar cost: whole units gathered in their order, and a
    unit of more than a shard's share cut into pieces of its items in :func:`strata_order` (each piece
    at most a share, or one item when that item alone is more; the unit's last piece gathered with what
    follows). An item's cost is its ``weights`` entry, or its number of replicates.

    Parameters
    ----------
    units : list of ndarray
        Each unit's items (int64), e.g. the perturbations of each component of strata.
    qoff, soff : ndarray
        (items + 1,) offsets of each item's replicates and of its strata (segments).
    seg_stratum : ndarray
        (segments,) the stratum of each segment.
    count : int
        Shards wanted (at least 1).
    weights : ndarray, optional
        (items,) each item's cost (e.g. a draw's, k (k - 1) + 1 for k replicates); None: its replicates.

    Returns
    -------
    list of ndarray
        Disjoint item arrays covering every unit's items; an item's shard holds every item of its unit
        unless the unit was cut.
    """
    cost = (qoff[1:] - qoff[:-1]).astype(float) if weights is None else np.asarray(weights, dtype=float)
    size = np.array([float(cost[m].sum()) for m in units])
    per = max(1.0, float(size.sum()) / max(int(count), 1))
    shards, cur, acc = [], [], 0.0
    for members, s in zip(units, size.tolist()):
        if s > per and members.size > 1:  # cut by items: pieces of about a share, in order of strata
            order = strata_order(soff, seg_stratum, members)
            pieces = [order[a:b] for a, b in batch_bounds(order.size, cost[order], order.size, per)]
            for piece in pieces[:-1]:
                shards.append(np.sort(piece))
            members = pieces[-1]
            s = float(cost[members].sum())
        cur.append(members)
        acc += s
        if acc >= per:
            shards.append(np.sort(np.concatenate(cur)))
            cur, acc = [], 0.0
    if cur:
        shards.append(np.sort(np.concatenate(cur)))
    return shards
