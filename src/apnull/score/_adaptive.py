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
from . import _engine, _permute, _scattered

__all__ = ["CAP", "FIRST", "GROWTH", "H", "DELTA", "LEVELS", "schedule", "clopper_pearson",
           "undecided", "still_open", "sequential_pvalue", "Sequential", "run_rounds", "run_screen_auto"]

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


def _map_round(comp, specs, states, kind, target, h):
    """One round for perturbations (the mAP null): [(index, ap, pr, mAP, Sequential)]."""
    out = []
    for sp, st in zip(specs, states):
        c = st.counters.copy()
        ap, pr, m, L, g, stop = _permute.sequential_scores(sp.replicates, comp.controls, kind, sp.keys, c,
                                                           st.drawn, st.reached, target, h, VALUE_TOL)
        out.append((sp.index, ap, pr, float(m), Sequential(c, int(L), int(g), bool(stop))))
    return out


def run_rounds(screen, seed, indices, states, target, h, one_batch, client=None, pool=None,
               batch=_engine.BATCH, progress=None):
    """Run ``one_batch(comp, specs, states, kind, target, h)`` over the perturbations ``indices``,
    component by component and in batches, on the thread ``pool`` or the dask ``client``.

    Returns the concatenated outputs (in any order). ``states[i]`` is the state of perturbation i.
    """
    chosen = set(indices)
    plan = []
    for comp_idx in _engine.components(screen):
        todo = [i for i in comp_idx if i in chosen]
        if not todo:
            continue
        strata = sorted({s for i in todo for s in screen.perts[i].strata})
        plan.append((strata, [todo[a:a + batch] for a in range(0, len(todo), batch)]))
    out, done = [], 0
    if client is None:
        for strata, batches in plan:
            comp = _engine.prepare_component(strata, [screen.X[screen.controls[s]] for s in strata], screen.kind)
            for b in batches:
                specs = [_engine.pert_spec(screen, i, strata, seed) for i in b]
                sts = [states[i] for i in b]
                if pool is None or len(b) < 2:
                    parts = [one_batch(comp, [sp], [st], screen.kind, target, h) for sp, st in zip(specs, sts)]
                else:
                    parts = list(pool.map(lambda a: one_batch(comp, [a[0]], [a[1]], screen.kind, target, h),
                                          zip(specs, sts)))
                for part in parts:
                    out.extend(part)
                done += len(b)
                if progress:
                    progress(done, len(chosen))
        return out
    # dask: the components go to the workers once (see apnull.score._scattered)
    shared_ = client if isinstance(client, _scattered.Scattered) else _scattered.Scattered(client, screen, seed)
    return shared_.run(indices, states, target, h, one_batch, batch, progress)


def shared(client, screen, seed):
    """``client`` as a :class:`._scattered.Scattered` for rounds on the same screen (None stays None)."""
    return None if client is None else _scattered.Scattered(client, screen, seed)


def executor(threads):
    """A thread pool of ``threads`` (default one per core), or a null context for one thread."""
    threads = _engine.default_threads() if threads is None else threads
    return ThreadPoolExecutor(threads, thread_name_prefix="apnull-auto") if threads > 1 else contextlib.nullcontext()


def run_screen_auto(screen, seed, client=None, progress=None, threads=None, cap=CAP, h=H, delta=DELTA,
                    levels=LEVELS):
    """Score every perturbation with adaptive permutations of the mAP null.

    Returns
    -------
    results : dict
        {index: :class:`_engine.PerturbationResult`} (``p_value`` the sequential p-value).
    draws : dict
        {index: (permutations used, bound)}.
    """
    n = len(screen.perts)
    states = {i: Sequential(np.zeros(len(p.strata), dtype=np.uint64), 0, 0, False)
              for i, p in enumerate(screen.perts)}
    observed = {}
    targets = schedule(cap)
    err = delta / (max(n, 1) * len(targets))
    active = list(range(n))
    client = shared(client, screen, seed)
    with executor(threads) as pool:
        for r, target in enumerate(targets):
            out = run_rounds(screen, seed, active, states, target, h, _map_round, client, pool,
                             progress=progress if r == 0 else None)
            for i, ap, pr, m, st in out:
                states[i] = st
                observed[i] = (ap, pr, m)
            g = np.array([states[i].reached for i in range(n)])
            L = np.array([states[i].drawn for i in range(n)])
            lo, hi = clopper_pearson(g, L, err)
            und = undecided(lo, hi, levels)
            active = [i for i in range(n) if und[i] and L[i] < cap]
            if not active:
                break
    g = np.array([states[i].reached for i in range(n)])
    L = np.array([states[i].drawn for i in range(n)])
    p, bound = sequential_pvalue(g, L, np.array([states[i].stopped for i in range(n)]))
    results = {i: _engine.PerturbationResult(i, observed[i][0], observed[i][1], observed[i][2], float(p[i]), None)
               for i in range(n)}
    return results, {i: (int(L[i]), bool(bound[i])) for i in range(n)}


def still_open(reached, drawn, rounds, cap=CAP, delta=DELTA, levels=LEVELS) -> np.ndarray:
    """Units to refine after a round: MMCTest-undecided (:func:`undecided` on Clopper-Pearson
    intervals at level ``delta / (units * rounds)``) and below ``cap`` draws. ``reached``/``drawn``
    hold every unit of the screen (their BH decisions are joint), ``rounds`` is ``len(schedule(cap))``."""
    g = np.asarray(reached)
    L = np.asarray(drawn)
    lo, hi = clopper_pearson(g, L, delta / (max(g.size, 1) * rounds))
    return undecided(lo, hi, levels) & (L < cap)
