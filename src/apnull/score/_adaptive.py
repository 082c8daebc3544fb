"""Adaptive permutations: sequential Monte Carlo p-values whose effort follows the BH decision.

The p-value of a unit (a perturbation's mAP, or one query's AP under the conditional null) is
estimated from its own keyed stream of null draws, continued in rounds of ``100 * 4**r`` draws in
total (100, 400, 1,600, ... up to ``CAP``). Round r + 1 continues the streams where round r left
them, so no draw is wasted and the first L draws are those of a fixed run of L permutations.

Stopping (two rules, both per unit):

- Besag & Clifford (1991), "Sequential Monte Carlo p-values", Biometrika 78: a unit stops at its
  ``H``-th null value reaching the observed one, after L draws, with p = H / L. Units far from any
  threshold (most of a screen) stop within the first hundred draws.
- MMCTest (Gandy & Hahn 2014, "MMCTest - a safe algorithm for implementing multiple Monte Carlo
  tests", Scand. J. Statist. 41; QuickMMCTest, Gandy & Hahn 2016): after each round every unit has a
  Clopper-Pearson interval for its ideal p-value (the p-value of B -> infinity) from its g
  exceedances in L draws, at level ``DELTA / (units * rounds)``, so that all intervals of the run
  hold together with probability >= 1 - DELTA. Benjamini-Hochberg applied to the upper ends rejects
  a set that the ideal p-values surely reject; applied to the lower ends, it rejects a superset. The
  units in between are undecided, and only they are refined, at each FDR level of ``LEVELS``. When
  none is left (or the cap is reached), the BH decisions equal those of the ideal p-values at every
  level of ``LEVELS`` with probability >= 1 - DELTA. Zhang, Zou & Tse (2019, "Adaptive Monte Carlo
  multiple testing via multi-armed bandits", ICML) reach the decisions of a fixed large B with
  similar confidence bounds and a bandit allocation; the round structure here is MMCTest's, which
  targets the ideal p-values rather than one fixed B and keeps every unit's draws deterministic.

Reported p-value of a unit: H / L if it stopped at its H-th exceedance, else (1 + g) / (1 + L).
With g = 0 the value is an upper bound (no null draw reached the observed value; ``bound`` True).
Streams are keyed by (seed, unit name), never by row order, threads or workers, and which units
are refined depends only on the whole screen's draws: results are identical in any run of the same
screen.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from scipy.stats import beta

from ..law import VALUE_TOL
from . import _engine, _rounds, _scattered
from ._perts import Scores
from ._sequential import sequential_batch, sequential_scores

__all__ = ["CAP", "FIRST", "GROWTH", "H", "DELTA", "LEVELS", "schedule", "clopper_pearson",
           "undecided", "still_open", "sequential_pvalue", "Sequential", "runner", "shared", "executor",
           "run_screen_auto"]

CAP = 1_000_000     #: most draws of one unit
FIRST = 100         #: draws of the first round
GROWTH = 4          #: each round multiplies the total draws by this
H = 20              #: Besag-Clifford: stop at the H-th null value reaching the observed one
DELTA = 1e-3        #: probability that some BH decision differs from that of the ideal p-values
LEVELS = (0.05,)  #: FDR levels whose BH decisions are resolved


def schedule(cap: int = CAP, first: int = FIRST) -> list:
    """Total draws after each round: first * GROWTH**r, the last one ``cap``."""
    out, t = [], int(first)
    while t < cap:
        out.append(t)
        t *= GROWTH
    return out + [int(cap)]


def clopper_pearson(g, L, err):
    """Two-sided Clopper-Pearson interval (lo, hi) of a binomial proportion, g successes in L trials,
    each end missed with probability at most err / 2 (lo = 0 at g = 0, hi = 1 at g = L)."""
    g = np.asarray(g, dtype=float)
    L = np.asarray(L, dtype=float)
    if g.ndim == 1 and g.size > 64:  # units share (g, L) pairs (every unit of a round has the same L
        # unless it stopped): each distinct pair once, then spread; the same values, a fraction of the work
        order = np.lexsort((g, L))
        gs, Ls = g[order], L[order]
        first = np.ones(g.size, dtype=bool)
        first[1:] = (gs[1:] != gs[:-1]) | (Ls[1:] != Ls[:-1])
        lo, hi = _interval(gs[first], Ls[first], err)
        back = np.empty(g.size, dtype=np.int64)
        back[order] = np.cumsum(first) - 1
        return lo[back], hi[back]
    return _interval(g, L, err)


def _interval(g, L, err):
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(g > 0, beta.ppf(err / 2, g, L - g + 1), 0.0)
        hi = np.where(g < L, beta.ppf(1 - err / 2, g + 1, L - g), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def _bh_reject(p, q):
    """Benjamini-Hochberg rejections at level q (boolean mask)."""
    m = p.size
    order = np.argsort(p, kind="mergesort")
    ok = p[order] <= q * np.arange(1, m + 1) / m
    out = np.zeros(m, dtype=bool)
    if ok.any():
        out[order[:np.flatnonzero(ok)[-1] + 1]] = True
    return out


def undecided(lo, hi, levels=LEVELS) -> np.ndarray:
    """Units whose BH decision is not settled by their intervals [lo, hi] at some level of ``levels``:
    rejected by BH on the lower ends but not by BH on the upper ends (MMCTest's undecided set)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    out = np.zeros(lo.size, dtype=bool)
    for q in levels:
        out |= _bh_reject(lo, q) & ~_bh_reject(hi, q)
    return out


def sequential_pvalue(reached, drawn, stopped):
    """(p, bound): H / L where a unit stopped at its H-th exceedance, else (1 + g) / (1 + L); bound is
    True where g = 0 (the p-value is then an upper bound, not an estimate)."""
    g = np.asarray(reached, dtype=float)
    L = np.asarray(drawn, dtype=float)
    p = np.where(stopped, g / np.maximum(L, 1), (1.0 + g) / (1.0 + L))
    return np.minimum(p, 1.0), g == 0


class Sequential(NamedTuple):
    """The draws of one unit so far (``counters`` continue its streams)."""

    counters: np.ndarray      #: uint64 next uniform index of each of its streams
    drawn: int                #: null draws so far
    reached: int              #: of which reached the observed value
    stopped: bool             #: the last round stopped it at its H-th exceedance


#: Levels of the mAP rounds' arrays (see :mod:`._rounds`).
MAP_LEVELS = {"counters": "seg", "drawn": "pert", "reached": "pert", "stopped": "pert", "ap": "query",
              "pr": "query", "map": "pert"}


def _map_batch(part, pos, st, kind, target, h):
    """One round of the mAP null for the perturbations ``pos`` of ``part`` (a :mod:`._rounds` batch)."""
    qo = np.concatenate([[0], np.cumsum(part.qoff[pos + 1] - part.qoff[pos])])
    so = np.concatenate([[0], np.cumsum(part.soff[pos + 1] - part.soff[pos])])
    counters, drawn, reached = st["counters"].copy(), st["drawn"].copy(), st["reached"].copy()
    stopped = np.zeros(pos.size, dtype=bool)
    ap, pr, maps = np.empty(qo[-1]), np.empty(qo[-1]), np.empty(pos.size)
    if part.rep_codes is None:  # one compiled call per run of perturbations sharing a component
        comp_of = part.comp_of[pos]
        cuts = np.concatenate([[0], np.flatnonzero(np.diff(comp_of)) + 1, [pos.size]])
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            t = slice(a, b)
            sequential_batch(part.X, part.rows, part.qoff, part.soff, part.seg_len, part.seg_comp, part.keys,
                             part.comps[comp_of[a]].controls, kind, pos[t], counters[so[a]:so[b]], drawn[t],
                             reached[t], target, h, VALUE_TOL, ap[qo[a]:qo[b]], pr[qo[a]:qo[b]], maps[t], stopped[t])
        return {"counters": counters, "drawn": drawn, "reached": reached, "stopped": stopped, "ap": ap, "pr": pr,
                "map": maps}
    for t, j in enumerate(pos.tolist()):
        comp = part.comps[part.comp_of[j]]
        a, p, m, L, g, stop = sequential_scores(part.replicates(j), comp.controls, kind,
                                                part.keys[part.segments(j)], counters[so[t]:so[t + 1]],
                                                int(drawn[t]), int(reached[t]), target, h, VALUE_TOL,
                                                part.pool_codes(j))
        ap[qo[t]:qo[t + 1]], pr[qo[t]:qo[t + 1]] = a, p
        maps[t], drawn[t], reached[t], stopped[t] = m, L, g, stop
    return {"counters": counters, "drawn": drawn, "reached": reached, "stopped": stopped, "ap": ap, "pr": pr,
            "map": maps}


def shared(client, screen, seed):
    """``client`` as a :class:`._scattered.Scattered` for rounds on the same screen (None stays None)."""
    if client is None or isinstance(client, _scattered.Scattered):
        return client
    return _scattered.Scattered(client, screen, seed)


def runner(client, screen, seed, pool):
    """What runs the rounds: the dask ``client`` (made :func:`shared`) or this process on ``pool``."""
    return _rounds.InProcess(screen, seed, pool) if client is None else shared(client, screen, seed)


def executor(threads):
    """A thread pool of ``threads`` (default one per core), or a null context for one thread."""
    threads = _engine.default_threads() if threads is None else threads
    return ThreadPoolExecutor(threads, thread_name_prefix="apnull-auto") if threads > 1 else contextlib.nullcontext()


def run_screen_auto(screen, seed, client=None, progress=None, threads=None, cap=CAP, h=H, delta=DELTA,
                    levels=LEVELS) -> Scores:
    """Score every perturbation with adaptive permutations of the mAP null.

    Returns
    -------
    Scores
        Observed APs, Precision@R and mAPs, the sequential p-values (:func:`sequential_pvalue`), the
        draws each used and whether it is a bound, as arrays over ``screen.perts``.
    """
    pt = screen.perts
    n, Q = len(pt), int(pt.qoff[-1])
    state = {"counters": np.zeros(pt.seg_stratum.size, dtype=np.uint64), "drawn": np.zeros(n, dtype=np.int64),
             "reached": np.zeros(n, dtype=np.int64), "stopped": np.zeros(n, dtype=bool), "ap": np.empty(Q),
             "pr": np.empty(Q), "map": np.empty(n)}
    targets = schedule(cap)
    err = delta / (max(n, 1) * len(targets))
    active = np.arange(n)
    with executor(threads) as pool:
        run = runner(client, screen, seed, pool)
        for r, target in enumerate(targets):
            _rounds.run_rounds(run, active, state, MAP_LEVELS, ("counters", "drawn", "reached"), target, h,
                               _map_batch, progress if r == 0 else None)
            lo, hi = clopper_pearson(state["reached"], state["drawn"], err)
            active = np.flatnonzero(undecided(lo, hi, levels) & (state["drawn"] < cap))
            if not active.size:
                break
    p, bound = sequential_pvalue(state["reached"], state["drawn"], state["stopped"])
    return Scores(state["ap"], state["pr"], state["map"], p, state["drawn"], bound)


def still_open(reached, drawn, rounds, cap=CAP, delta=DELTA, levels=LEVELS) -> np.ndarray:
    """Units to refine after a round: MMCTest-undecided (:func:`undecided` on Clopper-Pearson
    intervals at level ``delta / (units * rounds)``) and below ``cap`` draws. ``reached``/``drawn``
    hold every unit of the screen (their BH decisions are joint), ``rounds`` is ``len(schedule(cap))``."""
    g = np.asarray(reached)
    L = np.asarray(drawn)
    lo, hi = clopper_pearson(g, L, delta / (max(g.size, 1) * rounds))
    return undecided(lo, hi, levels) & (L < cap)
