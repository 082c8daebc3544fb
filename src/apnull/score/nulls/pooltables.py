"""What the crossed pools of a component keep for the whole run (:mod:`..kernels.crossed`): the pairs of two
controls every pool shares (:func:`shared_table`) and the counts of pools already filled (:func:`kept_fills`).

Both live in the part's ``shared`` holder of the component (:class:`.permutation.Part`): in process the same
holder in every round and null of the run, on a dask worker the one its prepared part keeps. Each holds
values a pool would compute itself, so a run gives the same bits with or without them; each is bounded in
memory (:data:`SHARED_MOST`, :data:`KEPT_MOST`), and past its bound the pools compute as before.
"""

from __future__ import annotations

import threading

import numpy as np

from ...law import VALUE_TOL
from ..kernels.crossed import crossed_batch as _crossed_kernel
from ..kernels.crossed import pool_sizes
from ..kernels.draws import Counts, Observed
from ..kernels.filled import Kept, Shared
from ..kernels.lookups import FILL_DRAWS

__all__ = ["SHARED_MOST", "NO_SHARED", "shared_table", "KEPT_MOST", "NO_KEPT", "kept_fills", "keep_done"]

#: Most control pairs (C * C for C controls of a component) of a :class:`..kernels.filled.Shared`: 16
#: bytes each, 128 MB. A larger component's crossed pools compute each pair of controls themselves.
SHARED_MOST = 1 << 23
NO_SHARED = Shared(np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int32), np.zeros((0, 0), dtype=np.int32))
#: An empty :class:`..kernels.filled.Kept` room: no pool's counts kept.
NO_KEPT = np.zeros(0, dtype=np.int16)
_SHARED_LOCK = threading.Lock()


def shared_table(part, c: int) -> Shared:
    """The :class:`..kernels.filled.Shared` of component ``c`` of ``part`` (its crossed pools' pairs of
    two controls, computed once for every pool, round and null of the run), built on first use;
    :data:`NO_SHARED` when it would exceed :data:`SHARED_MOST` pairs. The values are those each pool
    would compute, so a run gives the same bits with or without it."""
    controls = part.comps[c]
    C = controls.X.shape[0]
    if not part.shared or C * C > SHARED_MOST:
        return NO_SHARED
    holder = part.shared[c]
    with _SHARED_LOCK:  # the threads of a round share it: one builds it
        if "table" not in holder:
            table = Shared(np.empty((C, C)), np.empty((C, C), dtype=np.int32), np.empty((C, C), dtype=np.int32))
            _crossed_kernel(part.arrays, controls, part.kind, np.zeros(0, dtype=np.int64),
                            Counts(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64),
                                   np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)),
                            0, 1, VALUE_TOL, Observed(np.empty(0), np.empty(0), np.empty(0)), np.empty((0, 0)),
                            table, Kept(NO_KEPT, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)), True)
            holder["table"] = table
        return holder["table"]


#: Bytes of filled crossed pools' counts kept between rounds per component (:class:`..kernels.filled.Kept`:
#: 2 P * P bytes a pool, 54 KB for a pool of 165 members, JUMP's five plates of 32 controls): 64 MB. A
#: pool refined past them fills its table again each round (about 0.7 ms), with the same values.
KEPT_MOST = 1 << 26


def kept_fills(part, c: int, pos, drawn, target) -> Kept:
    """The :class:`..kernels.filled.Kept` of the crossed perturbations ``pos`` of ``part`` (component
    ``c``; ``drawn`` their draws so far): room, within :data:`KEPT_MOST` bytes of the component, for each
    one that fills its pool this round (at least :data:`..kernels.lookups.FILL_DRAWS` draws to go) and
    has none yet; the room a perturbation got in an earlier round, and whether its counts are there.
    Nothing when ``part`` has no holder of shared tables (every pool then fills as before)."""
    pos = np.asarray(pos, dtype=np.int64)
    n = pos.size
    start, done = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool)
    if not part.shared or not n:
        return Kept(NO_KEPT, start, done)
    holder = part.shared[c]
    with _SHARED_LOCK:
        store = holder.setdefault("kept", {"buf": None, "used": 0, "start": {}, "done": set()})
        index = part.index[pos].tolist()
        fills = (target - np.asarray(drawn)) >= FILL_DRAWS
        new = [t for t, j in enumerate(index) if fills[t] and j not in store["start"]]
        if new:
            sizes = pool_sizes(part.arrays, lambda j: part.comps[c], pos[new])
            for t, P in zip(new, sizes.tolist()):
                if store["used"] + P * P <= KEPT_MOST // 2:
                    store["start"][index[t]] = store["used"]
                    store["used"] += P * P
        if store["start"]:
            if store["buf"] is None:  # its pages are taken as pools are kept
                store["buf"] = np.empty(KEPT_MOST // 2, dtype=np.int16)
            for t, j in enumerate(index):
                start[t] = store["start"].get(j, -1)
                done[t] = j in store["done"]
        return Kept(store["buf"] if store["buf"] is not None else NO_KEPT, start, done)


def keep_done(part, c: int, pos, kept: Kept) -> None:
    """Note the perturbations whose counts ``kept`` now holds (the kernel set ``done``)."""
    if part.shared and kept.done.any():
        with _SHARED_LOCK:
            part.shared[c]["kept"]["done"].update(part.index[np.asarray(pos)[kept.done]].tolist())
