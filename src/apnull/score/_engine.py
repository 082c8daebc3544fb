"""Running the per-perturbation kernels: components of strata, batches, in-process or on dask.

Strata that share a perturbation form a component; a component's control data (rows and sorted
similarity rows, one stratum at a time) is prepared once and its perturbations are scored in batches.
Only one component's data is held at a time in-process, so memory grows with the largest component,
not with the number of perturbations. In process, the perturbations of a batch are scored by one
thread per core (the kernel releases the GIL); with dask each component is one task and each batch
another, run single-threaded. Each perturbation's result depends on its own data and stream keys only,
so the results are identical bit for bit whatever the threads, batches or workers.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..law import permutation_pvalue
from ..limits import SCORE_MAX_EXACT_ASSIGNMENTS as MAX_EXACT_ASSIGNMENTS
from . import _diffby, _permute, _tables
from ._kernels import ControlRows, Replicates
from ._perts import components_of, ranges
from .positives import pool_codes

__all__ = ["stream_key", "components", "prepare_component", "run_batch", "run_screen", "pert_spec", "batch_specs",
           "default_threads", "Component", "PerturbationSpec", "PerturbationResult",
           "MAX_EXACT_ASSIGNMENTS", "BATCH"]

#: Perturbations per batch (progress granularity; results do not depend on it).
BATCH = 64


def default_threads() -> int:
    """Threads for an in-process run: the cores this process may use (at most 32)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(32, cores))


def stream_key(seed: int, *parts) -> int:
    """The 64-bit key of a random stream derived from (seed, *parts), as a Python int.

    BLAKE2b (8 bytes, little-endian) of ``str(seed)`` and ``str(part)`` joined by the unit separator
    ``\x1f`` (not Python's salted ``hash``), so a stream depends on what it is for, never on run
    order. The scoring uses (seed, perturbation key, stratum) for a perturbation's permutations in one
    stratum, (seed, "law", m, n) for a Monte Carlo law and (seed, "copairs", m, n) for a copairs row.
    """
    text = "\x1f".join(str(p) for p in (int(seed),) + parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def components(screen) -> list[list[int]]:
    """Indices of screen.perts grouped by connected strata, in a fixed order: perturbations in
    increasing index, components in order of their first stratum key (:func:`._perts.components_of`)."""
    return [members.tolist() for members, _ in components_of(screen.perts)]


@dataclass(frozen=True)
class Component:
    """The controls of a group of strata linked by perturbations, prepared once for all of them.

    Attributes
    ----------
    strata : list of str
        The stratum keys of the component, sorted; stratum j of ``controls`` is ``strata[j]``.
    controls : ControlRows
        Their control rows, each control's sorted similarities to the other controls of its stratum,
        and the ranks of those similarities (field by field in :class:`._kernels.ControlRows`).
    """

    strata: list
    controls: ControlRows


class PerturbationSpec(NamedTuple):
    """What the kernel needs to score perturbation ``index`` of a screen in its component."""

    index: int                #: position of the perturbation in ``screen.perts``
    replicates: Replicates    #: its replicate rows, their stratum positions, its strata in the component
    keys: np.ndarray          #: (J,) uint64 stream key of each of its strata (:func:`stream_key`)
    sizes: list               #: [(k_s, n_s)] replicates and controls of each of its strata
    rows: np.ndarray          #: (k,) input table row of each replicate
    codes: np.ndarray | None = None  #: (P, C) positives_differ_by codes of the pool members, or None


class PerturbationResult(NamedTuple):
    """The scores of one perturbation (what :func:`run_batch` gives per spec)."""

    index: int                #: position of the perturbation in ``screen.perts``
    ap: np.ndarray            #: (k,) tie-aware AP of each replicate query, in ``replicates`` order
    precision_at_r: np.ndarray  #: (k,) tie-aware Precision@R of each query
    map: float                #: observed mAP, the mean of ``ap``
    p_value: float            #: permutation p-value of ``map`` (NaN when no permutation was run)
    null: np.ndarray | None   #: the null mAP values, when asked for (``keep_null``), else None


def prepare_component(strata, Xc_list, kind) -> Component:
    """Concatenate the controls of ``strata``; sort each control's similarities once and rank them.

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
        _tables.sorted_control_rows(Xc[cstart[j]:cstart[j] + n], np.ascontiguousarray(XT[:, cstart[j]:cstart[j] + n]),
                                    kind, rows, pbuf[poff[j]:poff[j] + plens[j]])
    return Component(list(strata), ControlRows(Xc, cstart, csize, buf, soff, pbuf, poff, XT))


def pert_spec(screen, i, comp_strata, seed) -> PerturbationSpec:
    """The :class:`PerturbationSpec` of perturbation i, whose component has strata ``comp_strata``."""
    return batch_specs(screen, [i], comp_strata, seed)[0]


def batch_specs(screen, idx, comp_strata, seed) -> list:
    """The :class:`PerturbationSpec` of each perturbation of ``idx`` (one component, strata
    ``comp_strata``), read from the screen's :class:`._perts.PertTable` arrays: the batch's replicate
    rows are taken in one go, each spec's arrays are slices of them (C-contiguous)."""
    pt = screen.perts
    idx = np.asarray(idx, dtype=np.int64)
    segs = ranges(pt.soff, idx)
    seg_st = pt.seg_stratum[segs]
    where = {s: j for j, s in enumerate(comp_strata)}
    t_of = np.full(len(pt.strata), -1, dtype=np.int64)  # each stratum's position in the component
    need = np.unique(seg_st).tolist()
    t_of[need] = [where[pt.strata[j]] for j in need]
    names = [pt.strata[j] for j in seg_st.tolist()]
    keys = pt.keys.take(idx).tolist() if idx.size > 1 else [pt.keys[int(idx[0])]]
    xrows = pt.rows[ranges(pt.qoff, idx)]
    X = np.ascontiguousarray(screen.X[xrows])  # a new C-contiguous array; each row slice of it is too
    rows = screen.rows[xrows]
    seg_len = pt.seg_off[segs + 1] - pt.seg_off[segs]
    nseg = pt.soff[idx + 1] - pt.soff[idx]
    sstart = np.concatenate([[0], np.cumsum(nseg)]).astype(np.int64)
    qstart = np.concatenate([[0], np.cumsum(pt.qoff[idx + 1] - pt.qoff[idx])]).astype(np.int64)
    rep_str = np.repeat(np.arange(segs.size, dtype=np.int64) - np.repeat(sstart[:-1], nseg), seg_len)
    seg_t = t_of[seg_st]
    seg_k = seg_len.tolist()
    n_of = {s: len(screen.controls[s]) for s in set(names)}
    codes = getattr(screen, "codes", None)
    out = []
    for j, (i, key) in enumerate(zip(idx.tolist(), keys)):
        a, b, sa, sb = int(qstart[j]), int(qstart[j + 1]), int(sstart[j]), int(sstart[j + 1])
        strata = names[sa:sb]
        kj = np.array([stream_key(seed, key, s) for s in strata], dtype=np.uint64)
        sizes = [(seg_k[g], n_of[s]) for g, s in zip(range(sa, sb), strata)]
        pc = None
        if codes is not None:  # the replicates' X rows of each stratum, and its controls'
            reps = np.split(xrows[a:b], np.cumsum(seg_len[sa:sb])[:-1])
            pc = pool_codes(codes, reps, [screen.controls[s] for s in strata])
        out.append(PerturbationSpec(i, Replicates(X[a:b], rep_str[a:b], seg_t[sa:sb]), kj, sizes, rows[a:b], pc))
    return out


def assignment_count(sizes) -> int:
    """Number of label assignments: prod_s C(k_s + n_s, k_s)."""
    return math.prod(math.comb(k + n, k) for k, n in sizes)


def all_assignments(sizes) -> np.ndarray:
    """Every assignment as pool indices (T x k), strata in order, members ascending within each."""
    per, off = [], 0
    for k, n in sizes:
        per.append([tuple(off + c for c in combo) for combo in itertools.combinations(range(k + n), k)])
        off += k + n
    rows = [tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*per)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), sum(k for k, _ in sizes))


def run_batch(comp: Component, specs, kind, B, exact, keep_null=False, pool=None) -> list[PerturbationResult]:
    """Score a batch of :class:`PerturbationSpec`: one :class:`PerturbationResult` per spec, in order.

    ``B = 0`` computes the observed values only. ``exact`` enumerates every assignment:
    p = #{null >= mAP - tol} / T; otherwise p = (1 + #{null >= mAP - tol}) / (1 + B)
    (:func:`apnull.law.permutation_pvalue`). ``pool``: an executor whose threads score the specs
    concurrently (same results, in order).
    """
    def one(sp: PerturbationSpec) -> PerturbationResult:
        k = sp.replicates.X.shape[0]
        draws = np.empty((0, k), dtype=np.int64)
        if exact:
            draws = all_assignments(sp.sizes)
        if sp.codes is None:
            ap, pr, m_obs, null = _permute.perturbation_scores(
                sp.replicates, comp.controls, kind, 0 if exact else int(B), sp.keys, draws)
        else:  # positives_differ_by (see apnull.score.positives)
            ap, pr, m_obs, null = _diffby.perturbation_scores_excluding(
                sp.replicates, comp.controls, kind, 0 if exact else int(B), sp.keys, draws, sp.codes)
        p = permutation_pvalue(null, m_obs, exact)
        return PerturbationResult(sp.index, ap, pr, float(m_obs), p, null if keep_null else None)

    if pool is None or len(specs) < 2:
        return [one(sp) for sp in specs]
    return list(pool.map(one, specs))


def _plan(screen, seed, batch):
    pt = screen.perts
    for members, strata in components_of(pt):
        keys = [pt.strata[s] for s in strata.tolist()]
        Xc_list = [screen.X[screen.controls[s]] for s in keys]
        idx = members.tolist()
        yield keys, Xc_list, [idx[a:a + batch] for a in range(0, len(idx), batch)]


def run_screen(screen, seed, B, exact, client=None, progress=None, batch=BATCH, threads=None):
    """Score every perturbation of the screen: {index: :class:`PerturbationResult`}, filled in any order.

    ``B`` permutations per perturbation (0: observed values only), or every assignment if ``exact``;
    the null values are not kept. In process (``client`` None) ``threads`` threads score each batch
    (default: one per core); with a dask ``client`` every component and batch is a task.
    ``progress(done, total)`` is called as batches finish.
    """
    total = len(screen.perts)
    done = 0
    results = {}
    if progress:
        progress(0, total)
    if client is None:
        threads = default_threads() if threads is None else threads
        pool = ThreadPoolExecutor(threads, thread_name_prefix="apnull-score") if threads > 1 else None
        with pool or contextlib.nullcontext():
            for strata, Xc_list, batches in _plan(screen, seed, batch):
                comp = prepare_component(strata, Xc_list, screen.kind)
                for b in batches:
                    specs = batch_specs(screen, b, strata, seed)
                    for r in run_batch(comp, specs, screen.kind, B, exact, pool=pool):
                        results[r.index] = r
                    done += len(b)
                    if progress:
                        progress(done, total)
                del comp
        return results
    from dask.distributed import as_completed

    futures = []
    for strata, Xc_list, batches in _plan(screen, seed, batch):
        comp = client.submit(prepare_component, strata, Xc_list, screen.kind, pure=False)
        for b in batches:
            specs = batch_specs(screen, b, strata, seed)
            futures.append(client.submit(run_batch, comp, specs, screen.kind, B, exact, pure=False))
    for fut in as_completed(futures):
        batch_out = fut.result()
        for r in batch_out:
            results[r.index] = r
        done += len(batch_out)
        if progress:
            progress(done, total)
    return results
