"""Where a round's work runs: threads of this process, or dask workers, through one interface.

A null's work is cut into *items* (a perturbation, a label), each with state arrays the rounds read
and write. The executor runs a batch function over chosen items, a batch at a time::

    fn(part, pos, state, target, h) -> {name: array}

``part`` (made by the null's :class:`Work`) holds the data of some items; ``pos`` the positions in
the part of the batch's items; ``state`` the input arrays cut to the batch (entries in batch order
at each level); the output arrays, laid out the same way, are written back by :func:`run_round`.

- :class:`InProcess`: one group of items (items sharing prepared data, e.g. the perturbations of a
  component of strata) at a time, so memory follows the largest group; its batches (consecutive items
  in the group's order) on a thread pool, a bounded number in flight. The compiled kernels release the GIL.
- :class:`Scattered`: the work's parts are sent to the dask workers once (``client.scatter``) and
  prepared there; a round's tasks carry only positions and state arrays, and return arrays.

An item's output depends on its own data and stream keys only: identical whatever the parts,
batches, threads or workers.
"""

from __future__ import annotations

import contextlib
import math
import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from types import MappingProxyType
from typing import Protocol

import numpy as np

from ...memo import rough_nbytes
from ..table.segments import ranges
from .connect import connect
from .shards import batch_bounds

__all__ = ["Work", "Pieces", "WholeWork", "whole", "InProcess", "Scattered", "run_round", "runner", "thread_pool",
           "default_threads", "drawing_order", "batch_bounds", "connect", "BATCH", "TASK_BATCH", "SHARDS"]

#: Items per in-process batch at most (fewer when a round has few, so threads share them).
BATCH = 64
#: Items per dask task at most (a round is cut into about 4 tasks per worker thread).
TASK_BATCH = 4096
#: Shards of the work per worker thread (so a shard moved by work stealing is a small part of it).
SHARDS = 8


def default_threads() -> int:
    """Threads for an in-process run: the cores this process may use (at most 32)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(32, cores))


class Work(Protocol):
    """The data of a null's items, as the executors cut it (see the module)."""

    size: int      #: number of items
    offsets: dict  #: level name -> (items + 1,) offsets of that level's entries per item ("item": one each)
    broadcast: bool  #: its one part goes to every worker (work that cannot be cut)

    def groups(self) -> list:
        """Item indices sharing prepared data, in a fixed order: the groups, and each group's items in
        the order they are drawn in process (batches of consecutive items; e.g. items reading the same
        data one after the other, so it stays in the processor's caches). No output depends on it."""

    def part(self, items: np.ndarray, worker: bool):
        """The part holding ``items`` (sorted; within one group for ``worker=False``), with an ``index``
        array (its items); ``worker``: a self-contained copy to send away, prepared there by ``prepare``."""

    def shards(self, count: int) -> list:
        """Item arrays of at most about ``count`` parts to send to workers (whole groups each)."""

    # Optional: ``weights() -> (size,) float``, each item's cost of a draw relative to the others' (its
    # queries times their positives): in process, batches are cut to about equal costs, so a heavy
    # item does not share a batch, and a thread, with many others (:func:`batch_bounds`).

    #: A module-level function (sent to the workers by reference, not with the work's data): a part made
    #: by ``part(..., worker=True)`` made ready for the batch function, on the worker.
    prepare: object


class Pieces(Protocol):
    """How a null cuts one item's round into pieces that threads run side by side (the last rounds of
    an adaptive null hold a few items, fewer than the threads), and joins their outputs: the same
    outputs, bit for bit, as the round run whole."""

    def cut(self, part, pos, st, target, h, count):
        """[(state, target), ...]: the inputs and the target of each piece (about ``count``) of the round
        of the one item at ``pos`` (``st`` its inputs, ``target`` the round's), or None: run it whole."""

    def join(self, st, outs: list) -> dict:
        """The item's outputs from its pieces' ``outs`` (in piece order) and its inputs ``st``."""


class ThreadPool(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` that says how many threads it runs (``workers``)."""

    def __init__(self, workers: int):
        super().__init__(workers, thread_name_prefix="apnull")
        self.workers = workers


def whole(part):
    """The ``prepare`` of a :class:`WholeWork`: its part is ready as it comes."""
    return part


class WholeWork:
    """The base of a work that is one group, its one part sent whole to every dask worker (a few
    numbers, or data no null of it can cut): its ``groups`` and ``shards`` are all ``size`` items,
    its part needs no preparing (:func:`whole`) and its state arrays are per item (no ``offsets``).
    A subclass sets ``size`` and makes ``part(items, worker)``."""

    size: int
    broadcast = True
    prepare = staticmethod(whole)
    offsets = MappingProxyType({})

    def groups(self) -> list:
        return [np.arange(self.size)]

    def shards(self, count: int) -> list:
        return [np.arange(self.size)]


def thread_pool(threads):
    """A thread pool of ``threads`` (default one per core), or a null context for one thread."""
    threads = default_threads() if threads is None else threads
    return ThreadPool(threads) if threads > 1 else contextlib.nullcontext()


class InProcess:
    """Rounds in this process: one group's part at a time, batches on a thread ``pool`` (or none); the next
    group's part is made on a thread of its own while one group's batches run."""

    def __init__(self, work, pool=None):
        self.work, self.pool = work, pool

    def run(self, idx, gather, target, h, fn, progress=None, pieces=None):
        """Yield (item indices, outputs) of ``fn`` over the items ``idx``, batch by batch; with ``pieces``
        (a :class:`Pieces`) and fewer items than four a thread, an item's round may run as pieces side by
        side, their outputs joined."""
        work = self.work
        chosen = np.zeros(work.size, dtype=bool)
        chosen[idx] = True
        total = int(chosen.sum())
        workers = self.pool.workers if self.pool is not None else 1
        size = max(1, min(BATCH, math.ceil(total / (4 * workers))))
        cut = math.ceil(4 * workers / total) if pieces is not None and workers > 1 and total else 1
        weights = work.weights() if hasattr(work, "weights") else None
        budget = size * float(weights[chosen].mean()) if weights is not None and total else 0.0

        def tasks():
            groups = [todo for members in work.groups() if (todo := members[chosen[members]]).size]
            with ThreadPoolExecutor(1, thread_name_prefix="apnull-part") as ahead:  # the next group's part made
                made = None  # while this one's batches run (the rows read from a table: half the main thread's
                for g, todo in enumerate(groups):  # time, the threads waiting for it a third of theirs)
                    part = made.result() if made is not None else work.part(np.sort(todo), False)
                    made = ahead.submit(work.part, np.sort(groups[g + 1]), False) if g + 1 < len(groups) else None
                    at = drawing_order(part.index, todo)
                    for a, b in batch_bounds(todo.size, None if weights is None else weights[todo], size, budget):
                        pos = at[a:b]
                        st = gather(part.index[pos])
                        cuts = pieces.cut(part, pos, st, target, h, cut) if cut > 1 else None
                        if cuts is None:
                            yield part, pos, st, target, None
                            continue
                        for i, (piece, upto) in enumerate(cuts):  # one item (size is 1 here)
                            yield part, pos, piece, upto, (int(part.index[pos[0]]), i, len(cuts), st)

        def one(part, pos, st, upto, piece):
            return part.index[pos], fn(part, pos, st, upto, h), piece

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
        held = {}  # an item's pieces' outputs until all are in
        for index, out, piece in outputs():
            if piece is not None:
                item, i, count, st = piece
                got = held.setdefault(item, [None] * count)
                got[i] = out
                if any(g is None for g in got):
                    continue
                out = pieces.join(st, held.pop(item))
            done += index.size
            if progress:
                progress(done, total)
            yield index, out


def drawing_order(index: np.ndarray, todo: np.ndarray) -> np.ndarray:
    """The positions in a part (its items ``index``) of the items ``todo``, in the order of ``todo``: a
    group's items are drawn in the order :meth:`Work.groups` gives them (ascending positions when it
    gives them ascending)."""
    sorter = np.argsort(index, kind="stable")
    return sorter[np.searchsorted(index, todo, sorter=sorter)]


def _run_part(part, pos, state, target, h, fn):
    return fn(part, pos, state, target, h)


class Scattered:
    """The parts of ``work`` on the workers of ``client``: the work cut into shards
    (``work.shards``, about :data:`SHARDS` per worker thread), each shard's part made, sent
    (``client.scatter``) and prepared on its worker the first time a round needs it, and kept for the
    next rounds (and for other nulls on the same work). A round's tasks of a shard are submitted as
    soon as its part is sent, so the workers draw while the next shards are made. Releasing the
    object releases the workers' copies. ``sent`` holds the items and the bytes of each part sent.
    """

    def __init__(self, client, work):
        self.client, self.work = client, work
        self._items = None            # shard number -> its items (sorted)
        self._futures = {}            # shard number -> future of the prepared part
        self._making = {}             # shard number -> (concurrent) future of its part, made ahead of sending
        self._shard = self._pos = None  # item index -> shard number, position in its part
        self._threads = 1
        self.sent = []                # (shard number, items, bytes) of each part sent

    def _plan(self):
        work = self.work
        self._threads = max(1, sum(self.client.nthreads().values()))
        self._items = work.shards(SHARDS * self._threads)
        self._shard = np.empty(work.size, dtype=np.int64)
        self._pos = np.empty(work.size, dtype=np.int64)
        for k, items in enumerate(self._items):
            self._shard[items] = k

    def shard_count(self) -> int:
        """Shards the work is cut into (for this client's worker threads)."""
        if self._items is None:
            self._plan()
        return len(self._items)

    def shard(self, k: int):
        """The future of shard k's prepared part, made and sent the first time it is asked for."""
        if self._items is None:
            self._plan()
        if k not in self._futures:
            work = self.work
            made = self._making.pop(k, None)
            part = made.result() if made is not None else work.part(self._items[k], True)
            self._pos[part.index] = np.arange(part.index.size)
            self.sent.append((k, int(part.index.size), rough_nbytes(part)))
            [raw] = self.client.scatter([part], hash=False, broadcast=getattr(work, "broadcast", False))
            self._futures[k] = self.client.submit(work.prepare, raw, pure=False)
            del raw, part
        return self._futures[k]

    def run(self, idx, gather, target, h, fn, progress=None, pieces=None):
        """Yield (item indices, outputs) of ``fn`` over the items ``idx``, task by task: the items of a
        shard go to the worker holding its part (each item's round whole: ``pieces`` is not used)."""
        from dask.distributed import as_completed

        if self._items is None:
            self._plan()
        idx = np.sort(np.asarray(idx, dtype=np.int64))
        size = max(1, min(TASK_BATCH, math.ceil(idx.size / (4 * self._threads))))
        weights = self.work.weights() if hasattr(self.work, "weights") else None
        budget = size * float(weights[idx].mean()) if weights is not None and idx.size else 0.0
        order = np.argsort(self._shard[idx], kind="stable")
        idx = idx[order]
        cuts = np.flatnonzero(np.diff(self._shard[idx])) + 1
        futures = as_completed()
        owner = {}
        groups = np.split(idx, cuts) if idx.size else []
        with ThreadPoolExecutor(1, thread_name_prefix="apnull-shard") as ahead:
            for i, todo in enumerate(groups):
                if i + 1 < len(groups):  # the next shard's part made while this one is sent (sending waits on
                    k = int(self._shard[groups[i + 1][0]])  # the worker; made in turn, they took half the time)
                    if k not in self._futures and k not in self._making:
                        self._making[k] = ahead.submit(self.work.part, self._items[k], True)
                data = self.shard(int(self._shard[todo[0]]))  # made and sent now, the first time
                for a, z in batch_bounds(todo.size, None if weights is None else weights[todo], size, budget):
                    b = todo[a:z]
                    f = self.client.submit(_run_part, data, self._pos[b], gather(b), target, h, fn, pure=False)
                    owner[f] = b
                    futures.add(f)
        done = 0
        for fut in futures:
            b = owner.pop(fut)
            out = fut.result()
            done += b.size
            if progress:
                progress(done, idx.size)
            yield b, out


def runner(client, work, pool):
    """What runs the rounds of ``work``: the dask ``client`` (:class:`Scattered`, reused when ``client``
    is already one for this work) or this process on ``pool`` (:class:`InProcess`)."""
    if client is None:
        return InProcess(work, pool)
    if isinstance(client, Scattered) and client.work is work:
        return client
    return Scattered(client.client if isinstance(client, Scattered) else client, work)


def run_round(run, idx, state, levels, inputs, target, h, fn, progress=None, pieces=None) -> None:
    """One round: ``fn`` over the items ``idx`` by ``run`` (:class:`InProcess` or :class:`Scattered`),
    reading ``state[name]`` for ``name`` in ``inputs`` and writing its outputs into ``state`` (arrays at
    the levels ``levels[name]``: "item", or a level of ``run.work.offsets``); ``pieces``: the null's
    :class:`Pieces`, if its items' rounds can be cut."""
    offs = run.work.offsets
    found = {}  # a batch's positions, from its gathering to its writing back (the batches in flight)

    def positions(chunk):
        """name -> the positions of the items ``chunk``'s entries in ``state[name]`` (each level's once)."""
        known = {"item": chunk}

        def at(name):
            level = levels[name]
            if level not in known:
                known[level] = ranges(offs[level], chunk)
            return known[level]
        return at

    def gather(chunk):
        at = found[chunk.tobytes()] = positions(chunk)
        return {name: state[name][at(name)] for name in inputs}

    for chunk, out in run.run(np.asarray(idx, dtype=np.int64), gather, target, h, fn, progress, pieces):
        at = found.pop(chunk.tobytes(), None) or positions(chunk)
        for name, arr in out.items():
            state[name][at(name)] = arr

