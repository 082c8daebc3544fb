"""What the crossed pools of a component keep for the whole run (:mod:`..kernels.crossed`): the pairs of two
controls the pools share, by blocks of two plates (:func:`shared_table`), the counts of pools already
filled (:func:`kept_fills`) and each pool's similarities (:func:`kept_pools`).

All live in the part's ``shared`` holder of the component (:class:`.permutation.Part`): in process the same
holder in every round and null of the run while the component's part is kept, on a dask worker the one its
prepared part keeps. Each holds values a pool would compute itself, so a run gives the same bits with or
without them; each is bounded in memory (:data:`SHARED_MOST`, :data:`KEPT_MOST`, :data:`POOLS_MOST`), and
past its bound the pools compute as before.
"""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

import numpy as np

from ...law import VALUE_TOL
from ..table.segments import offsets, ranges
from ..kernels.crossed import crossed_batch as _crossed_kernel
from ..kernels.crossed import crossed_pools, pool_sizes
from ..kernels.draws import Counts, Observed
from ..kernels.filled import Kept, Shared
from ..kernels.lookups import FILL_KEPT

__all__ = ["SHARED_MOST", "NO_SHARED", "spanned_pairs", "shared_table", "KEPT_MOST", "NO_KEPT", "kept_fills",
           "POOLS_MOST", "NO_POOLS", "kept_already", "ItemMarks", "Rooms", "kept_pools", "keep_done", "crossed_of", "BUILT_MOST", "BuiltComponents"]

#: Most control pairs of a component's :class:`..kernels.filled.Shared`, 16 bytes each (128 MB), its
#: index of S x S strata (8 bytes a pair of strata, counted as half a control pair) included. Blocks past
#: it are not held: their pools compute those pairs themselves.
SHARED_MOST = 1 << 23
NO_SHARED = Shared(np.zeros(0), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32),
                   np.zeros((0, 0), dtype=np.int64))
#: An empty :class:`..kernels.filled.Kept` room: no pool's counts kept.
NO_KEPT = np.zeros(0, dtype=np.int16)
_SHARED_LOCK = threading.Lock()
#: Held by the one thread building a shared table (:func:`shared_table`); the others go on without it.
_BUILD_LOCK = threading.Lock()
_NO_COUNTS = Counts(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                    np.zeros(0, dtype=bool))


def spanned_pairs(part, c) -> tuple:
    """(a, b, count): the pairs of strata a < b of component ``c`` (positions in its
    :class:`..kernels.controls.ControlRows`) on both of which some crossed perturbation of ``part``
    (:func:`..kernels.crossed.crossed_pools`) has a replicate, and how many such perturbations each has;
    by a * S + b ascending (S strata)."""
    arr = part.arrays
    S = part.comps[c].size.size
    pos = np.flatnonzero(part.comp_of == c)
    pos = pos[crossed_pools(arr, part.comps, part.comp_of, pos)]
    first, J = arr.soff[pos], arr.soff[pos + 1] - arr.soff[pos]
    keys = [np.zeros(0, dtype=np.int64)]
    for k in np.unique(J).tolist():
        strata = arr.seg_comp[first[J == k][:, None] + np.arange(k)]  # (perturbations, k) its strata
        i, i2 = np.triu_indices(k, 1)
        keys.append((np.minimum(strata[:, i], strata[:, i2]) * S + np.maximum(strata[:, i], strata[:, i2])).ravel())
    keys, count = np.unique(np.concatenate(keys), return_counts=True)
    return keys // S, keys % S, count


@contextlib.contextmanager
def _releasing(lock):
    """Release ``lock`` (acquired already) when the block ends."""
    try:
        yield
    finally:
        lock.release()


def shared_table(part, c: int) -> Shared:
    """The :class:`..kernels.filled.Shared` of component ``c`` of ``part``: for each pair of strata (plates)
    a, b that a crossed perturbation of the part spans (:func:`spanned_pairs`), the blocks (a, b) and
    (b, a) of their controls' pairs, computed once for every pool, round and null of the run, the pairs
    spanned by the most perturbations first, within :data:`SHARED_MOST` pairs (the pools of a pair of
    strata left out compute its pairs themselves); :data:`NO_SHARED` when no block is held. A later part
    of the same component (its next group) adds the blocks it needs that are not held yet (a new table:
    the one a running batch reads stays whole); a part whose perturbations all had every pair they span
    held by an earlier build (a later round's, the queries' null's) takes the table as it is. The values
    are those each pool would compute, so a run gives the same bits with or without it, whatever the
    blocks held: one thread of a round builds it, and a batch of another asking meanwhile takes the table
    as it was (the component's first: none) instead of waiting for it."""
    if not part.shared:
        return NO_SHARED
    controls = part.comps[c]
    holder = part.shared[c]
    idx = part.index[part.comp_of == c]
    key = (int(idx[0]), int(idx[-1]), idx.size) if idx.size else None
    if holder.get("for") == key:  # built for this part ("table" is set before "for")
        return holder["table"]
    if idx.size and "whole" in holder and (holder["whole"].get(idx) == 1).all():  # every pair they span is held
        return holder["table"]
    if not _BUILD_LOCK.acquire(blocking=False):  # another thread of the round builds it: this batch does not
        return holder.get("table", NO_SHARED)  # wait, its pools compute the pairs not held yet (the same bits)
    with _releasing(_BUILD_LOCK):
        if holder.get("for") == key:
            return holder["table"]
        old = holder.get("table", NO_SHARED)
        size = controls.size
        S = size.size
        a, b, count = spanned_pairs(part, c)
        if old.at.shape[0]:
            keep = old.at[a, b] < 0
            a, b, count = a[keep], b[keep], count[keep]
        cost = 2 * size[a] * size[b]  # both orders
        room = SHARED_MOST - old.v.size - S * S // 2
        order = np.lexsort((b, a, -count))  # the most perturbations first
        wanted = int((cost > 0).sum())
        order = order[(cost[order] > 0) & (np.cumsum(cost[order]) <= room)]
        table = old
        if order.size:
            a, b = a[order], b[order]
            ab, ba = size[a] * size[b], size[b] * size[a]
            start = old.v.size + np.concatenate([[0], np.cumsum(ab + ba)[:-1]])
            used = old.v.size
            total = used + int((ab + ba).sum())
            at = old.at.copy() if old.at.shape[0] else np.full((S, S), -1, dtype=np.int64)
            at[a, b], at[b, a] = start, start + ab
            table = Shared(np.empty(total), np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int32), at)
            table.v[:used], table.gt[:used], table.eq[:used] = old.v, old.gt, old.eq
            _crossed_kernel(part.arrays, controls, part.kind, np.zeros(0, dtype=np.int64), _NO_COUNTS, used, 1,
                            VALUE_TOL, Observed(np.empty(0), np.empty(0), np.empty(0)), np.empty((0, 0)),
                            table, Kept(NO_KEPT, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)), NO_POOLS, True)
        holder["table"] = table
        if order.size == wanted:  # nothing left out: a later part of these perturbations needs no new block
            with _SHARED_LOCK:
                holder.setdefault("whole", ItemMarks(0)).set(idx, 1)
        holder["for"] = key
        return table


#: Bytes of filled crossed pools' counts kept between rounds per component (:class:`..kernels.filled.Kept`:
#: 2 P * P bytes a pool, 54 KB for a pool of 165 members, JUMP's five plates of 32 controls): 256 MB, about
#: 4,900 such pools, written only as pools fill (a 2,000-compound screen keeps 21 MB). A pool refined past
#: them fills its table again each round (about 0.4 ms), with the same values. At 64 MB, a 20,000-compound
#: screen (about 2,800 pools refined past 1,600 draws) filled some 1,400 pools again in each later round.
KEPT_MOST = 1 << 28
#: Bytes of crossed pools' similarities kept for the run per component (:func:`kept_pools`: 8 k (P + max
#: n_s) bytes a pool, 7.9 KB for JUMP's five plates of 32 controls): 256 MB, about 34,000 such pools. A pool
#: past them computes its similarities again in each round and null (about 30 us), with the same values: at
#: 64 MB a 20,000-compound screen laid out 12,000 of its pools again in each round of both nulls.
POOLS_MOST = 1 << 28
#: An empty :class:`..kernels.filled.Kept` of pools' similarities: none kept.
NO_POOLS = Kept(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))


class ItemMarks:
    """An int64 mark of each perturbation, by its index in the screen (``fill`` until set), in an array grown
    as larger indices come: what a component's holder notes of its perturbations, read and written for a
    batch's indices at once (a dict or set looked up an item at a time, in every batch of every round, made a
    2,000-compound crossed run about 3% slower). Writers hold ``_SHARED_LOCK``; a read without it sees the
    marks from before or after a write (a write only sets marks, and grows the array into a new one)."""

    def __init__(self, fill: int = -1):
        self.fill = int(fill)
        self.values = np.zeros(0, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes

    def get(self, idx) -> np.ndarray:
        """(len(idx),) int64: the marks of the perturbations ``idx``."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.full(idx.size, self.fill, dtype=np.int64)
        inside = idx < self.values.size
        out[inside] = self.values[idx[inside]]
        return out

    def set(self, idx, marks) -> None:
        """Mark the perturbations ``idx`` with ``marks`` (one each, or one for all)."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size and int(idx.max()) >= self.values.size:
            grown = np.full(max(int(idx.max()) + 1, 2 * self.values.size), self.fill, dtype=np.int64)
            grown[:self.values.size] = self.values
            self.values = grown
        self.values[idx] = marks


class Rooms:
    """Rooms of one buffer of ``most`` bytes, one a perturbation (by its index in the screen), kept in a
    component's holder for the run: its values (a :class:`..kernels.filled.Kept`'s ``buf``) and which
    rooms the kernels filled. The buffer is made at the first room, its pages taken as rooms are filled,
    so it holds (:attr:`nbytes`) the rooms given out."""

    def __init__(self, most: int, dtype):
        self.dtype = np.dtype(dtype)
        self.size = most // self.dtype.itemsize
        self.buf, self.used = None, 0
        self.start, self.done = ItemMarks(-1), ItemMarks(0)  # each one's room (-1: none), values there (1)

    @property
    def nbytes(self) -> int:
        return self.used * self.dtype.itemsize

    def kept(self, index: list, sizes: dict) -> Kept:
        """The :class:`..kernels.filled.Kept` of the perturbations ``index``: a room for each one in
        ``sizes`` (index -> values) that has none yet, while they fit; each one's room and whether its
        values are there."""
        new = np.asarray(list(sizes), dtype=np.int64)
        new = new[self.start.get(new) < 0]
        given, at = [], []
        for j in new.tolist():
            if self.used + sizes[j] <= self.size:
                given.append(j)
                at.append(self.used)
                self.used += sizes[j]
        self.start.set(given, at)
        if self.used and self.buf is None:
            self.buf = np.empty(self.size, dtype=self.dtype)
        return Kept(self.buf if self.buf is not None else np.zeros(0, dtype=self.dtype), self.start.get(index),
                    self.done.get(index) == 1)


def _rooms(part, c: int, name: str, most: int, dtype, pos, wanted, sizes) -> Kept:
    """:meth:`Rooms.kept` of the perturbations ``pos`` of ``part`` (component ``c``) in its holder's rooms
    ``name`` (made of ``most`` bytes when first asked), a room wanted by those where ``wanted`` (a bool
    array over ``pos``), ``sizes(positions)`` the values each of them needs. Nothing when ``part`` has no
    holder (every pool then computes as before)."""
    pos = np.asarray(pos, dtype=np.int64)
    if not part.shared or not pos.size:
        return Kept(np.zeros(0, dtype=dtype), np.full(pos.size, -1, dtype=np.int64), np.zeros(pos.size, dtype=bool))
    holder = part.shared[c]
    with _SHARED_LOCK:
        rooms = holder.get(name) or holder.setdefault(name, Rooms(most, dtype))
        index = part.index[pos]
        new = np.flatnonzero(np.asarray(wanted, dtype=bool) & (rooms.start.get(index) < 0))
        sizes = dict(zip(index[new].tolist(), sizes(pos[new]).tolist())) if new.size else {}
        return rooms.kept(index, sizes)


def kept_fills(part, c: int, pos, drawn, target) -> Kept:
    """The :class:`..kernels.filled.Kept` of the crossed perturbations ``pos`` of ``part`` (component
    ``c``; ``drawn`` their draws so far): room, within :data:`KEPT_MOST` bytes of the component, for each
    one that may fill its pool this round (at least :data:`..kernels.lookups.FILL_KEPT` draws to go: it
    fills with a room, or from :data:`..kernels.lookups.FILL_DRAWS` without one) and has none yet; the room
    a perturbation got in an earlier round, and whether its counts are there. Nothing when ``part`` has no
    holder of shared tables (every pool then fills as before)."""
    fills = (target - np.asarray(drawn)) >= FILL_KEPT
    return _rooms(part, c, "kept", KEPT_MOST, np.int16, pos, fills,
                  lambda at: pool_sizes(part.arrays, part.comps, part.comp_of, at) ** 2)


def kept_pools(part, c: int, pos) -> Kept:
    """The :class:`..kernels.filled.Kept` of the similarities of the crossed perturbations ``pos`` of
    ``part`` (component ``c``): a room for each, within :data:`POOLS_MOST` bytes of the component, where the
    first round or null to lay a pool out keeps its replicates' rows (``Pool.sim``, ``Pool.sorted_rc``: k (P
    + max n_s) values) and every later one reads them (:func:`..kernels.filled.crossed_pool`); the same
    values, so the same draws."""
    def sizes(at):
        arr = part.arrays
        P = pool_sizes(arr, part.comps, part.comp_of, at)
        first, J = arr.soff[at], arr.soff[at + 1] - arr.soff[at]
        n = part.comps[c].size[arr.seg_comp[np.repeat(first - np.cumsum(J) + J, J) + np.arange(int(J.sum()))]]
        return J * (P + np.maximum.reduceat(n, np.cumsum(J) - J))

    return _rooms(part, c, "pools", POOLS_MOST, np.float64, pos, np.ones(len(pos), dtype=bool), sizes)


def kept_already(part, c: int, j: int) -> bool:
    """Whether perturbation j (component ``c`` of ``part``) has both its filled counts and its similarities
    in their rooms (:func:`kept_fills`, :func:`kept_pools`): a round then writes neither."""
    if not part.shared:
        return False
    holder = part.shared[c]
    with _SHARED_LOCK:
        return all(name in holder and holder[name].done.get([j])[0] == 1 for name in ("kept", "pools"))


def crossed_of(part, pos, decide) -> np.ndarray:
    """(len(pos),) bool: the perturbations ``pos`` of ``part`` that take the crossed kernels, as ``decide``
    (:func:`..kernels.crossed.crossed_pools`, the caller's) says, each decided once for the run and kept in
    its component's holder (``part.shared``) by its index in the screen: deciding took numpy calls on every
    batch of every round (about a tenth of a small crossed run's thread time, much of it holding the
    interpreter's lock). No crossed kernel for a part that may not take them (``part.crossed`` False)."""
    pos = np.asarray(pos, dtype=np.int64)
    if not part.crossed or not pos.size:
        return np.zeros(pos.size, dtype=bool)
    if not part.shared:
        return decide(part.arrays, part.comps, part.comp_of, pos)
    out = np.empty(pos.size, dtype=bool)
    comp_of = part.comp_of[pos]
    for c in np.unique(comp_of).tolist():
        at = np.flatnonzero(comp_of == c)
        keys = part.index[pos[at]]
        with _SHARED_LOCK:
            known = part.shared[c].get("crossed") or part.shared[c].setdefault("crossed", ItemMarks(-1))
            got = known.get(keys)
        todo = np.flatnonzero(got < 0)
        if todo.size:
            got[todo] = decide(part.arrays, part.comps, part.comp_of, pos[at[todo]])
            with _SHARED_LOCK:
                known.set(keys[todo], got[todo])
        out[at] = got == 1
    return out


def keep_done(part, c: int, pos, kept: Kept, name: str = "kept") -> None:
    """Note the perturbations whose values ``kept`` (the holder's rooms ``name``) now holds (the kernel set
    ``done``)."""
    if part.shared and kept.done.any():
        with _SHARED_LOCK:
            part.shared[c][name].done.set(part.index[np.asarray(pos)[kept.done]], 1)


#: Bytes of built components an in-process run keeps between its rounds and nulls (:class:`BuiltComponents`):
#: 1 GiB of control tables, shared pairs and kept counts.
BUILT_MOST = 1 << 30


def _nbytes(value) -> int:
    """Bytes of the numpy arrays in ``value`` (named tuples, tuples, lists and dict values, recursively)."""
    if isinstance(value, (np.ndarray, Rooms, ItemMarks)):
        return value.nbytes
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values()
                   if isinstance(v, (np.ndarray, Rooms, ItemMarks, tuple, list, dict)))
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0


class Built(NamedTuple):
    """A component's tables an in-process run keeps (:class:`BuiltComponents`)."""

    rows: object    #: its :class:`..kernels.controls.ControlRows`
    holder: dict    #: its holder of :func:`shared_table` and :func:`kept_fills`


class BuiltComponents:
    """The components an in-process run has built (each one's control tables, :func:`..kernels.controls.
    control_rows`, and its holder of :func:`shared_table` and :func:`kept_fills`), kept for its later
    rounds and nulls.

    The rounds visit the components in the same order each time, so the first ones built are kept, within
    :data:`BUILT_MOST` bytes of their arrays as they grow (the last kept are let go first when they pass
    it), and the last one built is always at hand (a component cut into groups uses it for each group).
    A component kept nowhere is built again when next needed, with the same values: what each round did
    for every component when only the last was kept (a screen of 12 crossed components built each one's
    shared pairs again, and filled again every pool whose counts it had kept, in every round)."""

    def __init__(self):
        self._kept, self._last, self._lock = {}, None, threading.Lock()
        self._rows = None  # (perturbations, their replicates' offsets, their prepared rows) of the last part made

    def keep_rows(self, items, qoff, X) -> None:
        """Keep the prepared replicate rows ``X`` of the perturbations ``items`` (ascending; ``qoff`` the
        screen's query offsets) that an in-process part has just made from a table read when asked, in
        place of those kept before: the last part's only (at most a group's, :data:`.permutation.PART_CELLS`
        values), so its later rounds and the queries' null read them instead of making them again."""
        with self._lock:
            self._rows = (items, offsets(qoff[items + 1] - qoff[items]), X)

    def kept_rows(self, items, qoff):
        """(X, rows) of the perturbations ``items``' replicates (ascending, in their order, as
        ``qoff`` lays them out) in the kept rows (:meth:`keep_rows`), or None when some are not kept."""
        with self._lock:
            if self._rows is None:
                return None
            members, off, X = self._rows
        where = np.minimum(np.searchsorted(members, items), members.size - 1)
        if not members.size or not np.array_equal(members[where], items):
            return None
        return X, ranges(off, where)

    def get(self, comp: int) -> Built | None:
        """The :class:`Built` tables of component ``comp`` if kept, else None."""
        with self._lock:
            while len(self._kept) > 1 and self._held() > BUILT_MOST:
                self._kept.popitem()  # the last kept goes first: the first ones serve every round
            if comp in self._kept:
                return self._kept[comp]
            return self._last[1] if self._last is not None and self._last[0] == comp else None

    def keep(self, comp: int, rows, holder: dict) -> None:
        """Note component ``comp``'s newly built tables."""
        with self._lock:
            self._last = (comp, Built(rows, holder))
            if not self._kept or self._held() + _nbytes(rows) <= BUILT_MOST:
                self._kept[comp] = self._last[1]

    def _held(self) -> int:
        return sum(_nbytes(built.rows) + _nbytes(built.holder) for built in self._kept.values())
