"""Adaptive permutations of the consistency null: each label's p-value from as many draws as needed.

Label l's null stream (seed, "consistency", l) is the one of a fixed run (:func:`_consistency_kernels.
label_null`), continued in the rounds of :mod:`apnull.score._adaptive` (100, 400, 1,600, ... draws in
all, up to ``_adaptive.CAP``): a round resumes the SplitMix64 state and the last labelling where the
previous one left them, so the first L draws of an adaptive run are those of a fixed run of L. Stopping
and refinement are score's: Besag & Clifford's stop at the ``H``-th null mAP reaching the observed one,
and MMCTest's Clopper-Pearson intervals, which refine only the labels whose Benjamini-Hochberg decision
across labels is still open (:func:`_adaptive.still_open`). The p-value is :func:`_adaptive.
sequential_pvalue`. Which labels go on depends only on the draws of all labels, never on threads,
dask tasks or row order, so every run of a screen gives the same bits.
"""

from __future__ import annotations

import numpy as np

from ..law import VALUE_TOL
from . import _adaptive
from . import _consistency_kernels as K
from ._engine import stream_key

__all__ = ["LABEL_BATCH", "initial", "run_labels_auto"]

#: Labels per dask task (progress granularity; results do not depend on it).
LABEL_BATCH = 16


def initial(prof, t, seed) -> tuple:
    """(Sequential, labelling) of label t before any draw: its stream key and the identity."""
    key = np.uint64(stream_key(seed, "consistency", prof.labels[t]))
    G = prof.lists.gm_ptr.size - 1
    return _adaptive.Sequential(np.array([key], dtype=np.uint64), 0, 0, False), np.arange(G)


def _continue(prof, rows, t, observed, state, target, h) -> tuple:
    """(t, Sequential, labelling) after continuing label t's stream up to ``target`` draws."""
    seq, gperm = state
    gperm = gperm.copy()
    s, L, g, stop = K.label_null_more(t, np.uint64(seq.counters[0]), gperm, int(target), int(seq.drawn),
                                      int(seq.reached), float(observed), VALUE_TOL, int(h), rows, prof.lists)
    return t, _adaptive.Sequential(np.array([s], dtype=np.uint64), int(L), int(g), bool(stop)), gperm


def _batch(prof, rows, items, target, h) -> list:
    """One dask task: :func:`_continue` over ``items`` = [(t, observed mAP, state)]."""
    return [_continue(prof, rows, t, obs, state, target, h) for t, obs, state in items]


def _round(prof, rows, todo, observed, states, target, h, client, pool, pf, rw, progress):
    items = [(t, observed[t], states[t]) for t in todo]
    if client is not None:
        import dask.distributed as dd
        futures = [client.submit(_batch, pf, rw, items[i:i + LABEL_BATCH], target, h, pure=False)
                   for i in range(0, len(items), LABEL_BATCH)]
        done = 0
        for fut in dd.as_completed(futures):
            part = fut.result()
            for t, seq, gperm in part:
                states[t] = (seq, gperm)
            done += len(part)
            if progress:
                progress(done, len(items))
        return
    run = (lambda a: _continue(prof, rows, a[0], a[1], a[2], target, h))
    outs = map(run, items) if pool is None else pool.map(run, items)
    for done, (t, seq, gperm) in enumerate(outs, 1):
        states[t] = (seq, gperm)
        if progress:
            progress(done, len(items))


def run_labels_auto(prof, rows, observed, seed, client=None, progress=None, threads=None, cap=_adaptive.CAP,
                    h=_adaptive.H, delta=_adaptive.DELTA, levels=_adaptive.LEVELS) -> dict:
    """Adaptive p-values of the labels ``observed`` ({t: observed mAP}).

    Returns
    -------
    dict
        {t: (p_value, permutations used, bound)}; ``bound`` True where no null draw reached the
        observed mAP (p is then the upper bound 1 / (1 + L)).
    """
    ts = sorted(observed)
    states = {t: initial(prof, t, seed) for t in ts}
    targets = _adaptive.schedule(cap)
    pf = rw = None
    if client is not None:
        pf, rw = client.scatter(prof, broadcast=True), client.scatter(rows, broadcast=True)
    todo = ts
    with _adaptive.executor(threads) as pool:
        for r, target in enumerate(targets):
            _round(prof, rows, todo, observed, states, target, h, client, pool, pf, rw, progress if r == 0 else None)
            g = [states[t][0].reached for t in ts]
            L = [states[t][0].drawn for t in ts]
            todo = [t for t, go in zip(ts, _adaptive.still_open(g, L, len(targets), cap, delta, levels)) if go]
            if not todo:
                break
    seqs = [states[t][0] for t in ts]
    p, bound = _adaptive.sequential_pvalue([s.reached for s in seqs], [s.drawn for s in seqs],
                                           [s.stopped for s in seqs])
    return {t: (float(p[i]), seqs[i].drawn, bool(bound[i])) for i, t in enumerate(ts)}
