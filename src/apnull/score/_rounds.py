"""Rounds of a per-perturbation kernel over a screen, every unit's state held in a few flat arrays.

The adaptive nulls (:mod:`._adaptive` for the mAP, :mod:`.conditional` per query) continue each
unit's random stream in rounds. Their state lives in numpy arrays at one of three levels of the
screen's :class:`._perts.PertTable`: one entry per perturbation (``"pert"``), per segment (a
perturbation's replicates in one stratum, ``"seg"``) or per replicate query (``"query"``).
A round runs a batch function over the chosen perturbations, a batch at a time::

    fn(part, pos, state, kind, target, h) -> {name: array}

``part`` (a :class:`Part`) holds the data of some perturbations (their replicate rows, strata and
stream keys) and their components' prepared controls; ``pos`` the positions in the part of the
batch's perturbations; ``state`` the input arrays cut to the batch (entries in batch order at each
level); the output arrays, laid out the same way, are written back into the screen's arrays.

In process, a part holds one component's perturbations and points into the screen's own matrix
(no copy); the batches run on a thread pool, a bounded number at a time, so memory follows the
largest component. On dask (:mod:`._scattered`) parts of many components are sent to the workers
once, and a round's tasks carry only positions and state arrays. A perturbation's output depends on
its own rows, controls and stream keys only: identical whatever the parts, batches, threads or workers.
"""

from __future__ import annotations

import math
from concurrent.futures import FIRST_COMPLETED, wait
from typing import NamedTuple

import numpy as np

from . import _engine
from ._kernels import Replicates
from ._perts import components_of, ranges
from ._sequential import NO_CODES

__all__ = ["Part", "screen_components", "build_part", "mean_keys", "InProcess", "run_rounds", "CHUNK"]

#: Segments whose stream keys are made together (:func:`mean_keys`).
KEY_CHUNK = 8192

#: Perturbations per in-process batch at most (fewer when a round has few, so threads share them).
CHUNK = 64


class Part(NamedTuple):
    """Some perturbations of a screen with what their kernels read (arrays per perturbation j)."""

    comps: list              #: prepared :class:`._engine.Component` of each component of the part
    comp_of: np.ndarray      #: (p,) position in ``comps`` of perturbation j's component
    index: np.ndarray        #: (p,) perturbation j's index in the screen
    X: np.ndarray            #: rows that ``rows`` points into (the screen's matrix, or the part's own copy)
    rows: np.ndarray         #: (q,) row in ``X`` of each replicate, perturbation by perturbation
    qoff: np.ndarray         #: (p + 1,) replicates of j: ``qoff[j]`` .. ``qoff[j + 1] - 1``
    soff: np.ndarray         #: (p + 1,) segments of j (strata, sorted)
    seg_len: np.ndarray      #: (s,) replicates of each segment
    seg_comp: np.ndarray     #: (s,) position of each segment's stratum among its component's strata
    keys: np.ndarray         #: (s,) uint64 key of each segment's permutation stream (:func:`mean_keys`)
    rep_codes: np.ndarray | None = None  #: (q, C) ``positives_differ_by`` codes of each replicate, or None
    ctl_codes: list | None = None  #: per component, per stratum: (n, C) codes of its controls, or None

    def replicates(self, j) -> Replicates:
        """The :class:`._kernels.Replicates` of perturbation j (as ``_engine.pert_spec`` gives them)."""
        a, b = self.qoff[j], self.qoff[j + 1]
        sa, sb = self.soff[j], self.soff[j + 1]
        rep_str = np.repeat(np.arange(sb - sa, dtype=np.int64), self.seg_len[sa:sb])
        return Replicates(np.ascontiguousarray(self.X[self.rows[a:b]]), rep_str, self.seg_comp[sa:sb])

    def pool_codes(self, j) -> np.ndarray:
        """(P, C) ``positives_differ_by`` codes of perturbation j's pool members in pool order (per
        stratum its replicates, then the stratum's controls; ``positives.pool_codes``), or
        ``_sequential.NO_CODES`` when the screen has no such columns."""
        if self.rep_codes is None:
            return NO_CODES
        parts, a = [], int(self.qoff[j])
        comp = self.ctl_codes[self.comp_of[j]]
        for seg in range(int(self.soff[j]), int(self.soff[j + 1])):
            parts += [self.rep_codes[a:a + self.seg_len[seg]], comp[self.seg_comp[seg]]]
            a += int(self.seg_len[seg])
        return np.ascontiguousarray(np.concatenate(parts))

    def segments(self, j) -> slice:
        return slice(int(self.soff[j]), int(self.soff[j + 1]))


def screen_components(perts) -> list:
    """[(perturbation indices, stratum indices)] of each component: strata linked by a perturbation
    with replicates in both (union-find); strata sorted, components in order of their first stratum
    (:func:`._perts.components_of`)."""
    return components_of(perts)


def mean_keys(perts, seed) -> np.ndarray:
    """(s,) uint64 stream key of every segment's permutations: ``stream_key(seed, key, stratum)``."""
    keys = np.empty(perts.seg_stratum.size, dtype=np.uint64)
    owner = np.repeat(np.arange(len(perts)), np.diff(perts.soff))
    strata = perts.strata.tolist()
    for a in range(0, owner.size, KEY_CHUNK):  # a chunk of names at a time (a Python string each)
        first = int(owner[a])
        names = perts.keys[first:int(owner[min(a + KEY_CHUNK, owner.size) - 1]) + 1].tolist()
        for j, (i, s) in enumerate(zip(owner[a:a + KEY_CHUNK].tolist(), perts.seg_stratum[a:a + KEY_CHUNK].tolist()), a):
            keys[j] = _engine.stream_key(seed, names[i - first], strata[s])
    return keys


def build_part(screen, keys, comps, copy=False, prepare=True) -> Part:
    """The :class:`Part` of the components ``comps`` ([(perturbation indices, stratum indices)]).

    ``copy``: the part holds its own replicate rows (to send to a worker) instead of the screen's
    matrix. ``prepare=False`` leaves each component as (strata, control rows), to prepare later.
    """
    pt = screen.perts
    copy = copy or not isinstance(screen.X, np.ndarray)  # rows read from the table: once per part
    where = np.full(len(pt.strata), -1, dtype=np.int64)
    codes = getattr(screen, "codes", None)
    built, comp_of, ctl_codes = [], [], []
    for c, (members, strata) in enumerate(comps):
        where[strata] = np.arange(strata.size)
        names = [pt.strata[s] for s in strata.tolist()]
        rows = [np.ascontiguousarray(screen.X[screen.controls[s]]) for s in names]
        built.append(_engine.prepare_component(names, rows, screen.kind) if prepare else (names, rows))
        comp_of.append(np.full(members.size, c, dtype=np.int64))
        if codes is not None:
            ctl_codes.append([codes[screen.controls[s]] for s in names])
    index = np.concatenate([m for m, _ in comps]).astype(np.int64)
    segs = ranges(pt.soff, index)
    rows = pt.rows[ranges(pt.qoff, index)]
    X = np.ascontiguousarray(screen.X[rows]) if copy else screen.X
    return Part(built, np.concatenate(comp_of), index, X, np.arange(rows.size) if copy else rows,
                _offsets(pt.qoff[index + 1] - pt.qoff[index]), _offsets(pt.soff[index + 1] - pt.soff[index]),
                pt.seg_len[segs], where[pt.seg_stratum[segs]], keys[segs],
                None if codes is None else np.ascontiguousarray(codes[rows]), ctl_codes if codes is not None else None)


def _offsets(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


class InProcess:
    """Rounds in this process: one component's part at a time, batches on a thread ``pool`` (or none)."""

    def __init__(self, screen, seed, pool=None):
        self.screen, self.seed, self.pool = screen, seed, pool
        self._comps = self._keys = None

    def run(self, idx, gather, target, h, fn, progress=None):
        """Yield (perturbation indices, outputs) of ``fn`` over the perturbations ``idx``, batch by batch."""
        sc = self.screen
        if self._comps is None:
            self._comps, self._keys = screen_components(sc.perts), mean_keys(sc.perts, self.seed)
        chosen = np.zeros(len(sc.perts), dtype=bool)
        chosen[idx] = True
        total = int(chosen.sum())
        workers = getattr(self.pool, "_max_workers", 1) if self.pool is not None else 1
        size = max(1, min(CHUNK, math.ceil(total / (4 * workers))))

        def tasks():
            for members, strata in self._comps:
                todo = members[chosen[members]]
                if todo.size:
                    part = build_part(sc, self._keys, [(np.sort(todo), strata)])
                    for a in range(0, todo.size, size):
                        pos = np.arange(a, min(a + size, todo.size))
                        yield part, pos, gather(part.index[pos])

        def one(part, pos, st):
            return part.index[pos], fn(part, pos, st, sc.kind, target, h)

        def outputs():  # in the order they finish
            if self.pool is None:
                for task in tasks():
                    yield one(*task)
                return
            pending = set()
            for task in tasks():
                pending.add(self.pool.submit(one, *task))
                if len(pending) >= 4 * workers:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    yield from (f.result() for f in finished)
            yield from (f.result() for f in pending)

        done = 0
        for out in outputs():
            done += out[0].size
            if progress:
                progress(done, total)
            yield out


def run_rounds(runner, idx, state, levels, inputs, target, h, fn, progress=None) -> None:
    """One round: ``fn`` over the perturbations ``idx`` by ``runner`` (:class:`InProcess` or
    :class:`._scattered.Scattered`), reading ``state[name]`` for ``name`` in ``inputs`` and writing
    its outputs into ``state`` (arrays at the levels ``levels[name]``: "pert", "seg" or "query")."""
    pt = runner.screen.perts
    offs = {"seg": pt.soff, "query": pt.qoff}

    def at(name, chunk):
        level = levels[name]
        return chunk if level == "pert" else ranges(offs[level], chunk)

    def gather(chunk):
        return {name: state[name][at(name, chunk)] for name in inputs}

    for chunk, out in runner.run(np.asarray(idx, dtype=np.int64), gather, target, h, fn, progress):
        for name, arr in out.items():
            state[name][at(name, chunk)] = arr
