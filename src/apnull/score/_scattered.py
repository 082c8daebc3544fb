"""Rounds of :mod:`._rounds` on dask, with the screen sent to the workers once.

Each round needs, for every perturbation still refined, its replicate rows and its component's
prepared controls. Shipping them with every round's tasks costs the whole screen again per round
(the scheduler, in the client process of a local cluster, holds every pending task's data), and
building a Python object per perturbation on the client costs more than the round itself.
:class:`Scattered` instead cuts the screen, component by component, into a few shards of about equal
size (:data:`SHARDS` per worker thread), each a :class:`._rounds.Part` of flat arrays: its
perturbations' replicate rows (a copy of those rows only), offsets, strata and stream keys, and its
components' raw control rows. A shard goes to a worker once (``client.scatter``) and the worker
prepares its controls there (``_engine.prepare_component``). A round's task then carries the
positions of its batch in the shard and their state arrays, and returns arrays.

The results are those of the in-process rounds bit for bit: a perturbation's scores depend on its
own rows, its strata's controls and its stream keys, not on which shard or task holds it.
"""

from __future__ import annotations

import math

import numpy as np

from . import _engine, _rounds

__all__ = ["Scattered", "TASK_BATCH", "SHARDS", "run_part", "prepare_part"]

#: Perturbations per dask task at most (a round is cut into about 4 tasks per worker thread).
TASK_BATCH = 4096
#: Shards of the screen per worker thread (so a shard moved by work stealing is a small part of it).
SHARDS = 8


def prepare_part(part, kind):
    """``part`` with each component's (strata, control rows) prepared (runs on a worker)."""
    return part._replace(comps=[_engine.prepare_component(strata, rows, kind) for strata, rows in part.comps])


def run_part(part, pos, state, kind, target, h, fn):
    """``fn`` on the perturbations at positions ``pos`` of a prepared shard (runs on a worker)."""
    return fn(part, pos, state, kind, target, h)


class Scattered:
    """The shards of ``screen`` on the workers of ``client``, built at the first round.

    Releasing the object (end of a run) releases the workers' copies.
    """

    def __init__(self, client, screen, seed):
        self.client, self.screen, self.seed = client, screen, seed
        self._futures = None          # shard number -> future of the prepared Part
        self._shard = self._pos = None  # perturbation index -> shard number, position in it
        self._threads = 1

    def _build(self):
        sc = self.screen
        pt = sc.perts
        comps = _rounds.screen_components(pt)
        keys = _rounds.mean_keys(pt, self.seed)
        self._threads = max(1, sum(self.client.nthreads().values()))
        size = np.array([pt.qoff[m + 1].sum() - pt.qoff[m].sum() for m, _ in comps], dtype=float)
        per = max(1.0, size.sum() / (SHARDS * self._threads))
        shards, cur, acc = [], [], 0.0
        for c, s in zip(comps, size):
            cur.append(c)
            acc += s
            if acc >= per:
                shards.append(cur)
                cur, acc = [], 0.0
        if cur:
            shards.append(cur)
        self._shard = np.empty(len(pt), dtype=np.int64)
        self._pos = np.empty(len(pt), dtype=np.int64)
        self._futures = []
        for k, group in enumerate(shards):
            part = _rounds.build_part(sc, keys, [(np.sort(m), st) for m, st in group], copy=True, prepare=False)
            self._shard[part.index] = k
            self._pos[part.index] = np.arange(part.index.size)
            [raw] = self.client.scatter([part], hash=False)
            self._futures.append(self.client.submit(prepare_part, raw, sc.kind, pure=False))
            del raw, part

    def run(self, idx, gather, target, h, fn, progress=None):
        """Yield (perturbation indices, outputs) of ``fn`` over the perturbations ``idx``, task by task."""
        from dask.distributed import as_completed

        if self._futures is None:
            self._build()
        idx = np.sort(np.asarray(idx, dtype=np.int64))
        size = max(1, min(TASK_BATCH, math.ceil(idx.size / (4 * self._threads))))
        order = np.argsort(self._shard[idx], kind="stable")
        idx = idx[order]
        cuts = np.flatnonzero(np.diff(self._shard[idx])) + 1
        futures = {}
        for todo in np.split(idx, cuts) if idx.size else []:
            data = self._futures[int(self._shard[todo[0]])]
            for a in range(0, todo.size, size):
                b = todo[a:a + size]
                f = self.client.submit(run_part, data, self._pos[b], gather(b), self.screen.kind, target, h, fn,
                                       pure=False)
                futures[f] = b
        done = 0
        for fut in as_completed(list(futures)):
            b = futures.pop(fut)
            out = fut.result()
            done += b.size
            if progress:
                progress(done, idx.size)
            yield b, out
