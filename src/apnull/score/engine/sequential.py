"""The one engine of every scoring null: draw null values until each unit's decision is resolved.

A *null* (:class:`Null`) has *units*, each with an observed value and its own keyed stream of null
values (:mod:`apnull.streams`), continued by compiled kernels from saved state. :func:`resolve` runs
the streams in rounds and turns the counts into p-values:

- a fixed number B of draws is one round of B draws: p = (1 + g) / (1 + B), g the draws reaching the
  observed value (``>= observed - tol``); an enumeration of every assignment is one round: p = g / T;
- ``"auto"``: rounds of ``FIRST * GROWTH**r`` draws in total (100, 400, 1,600, ... up to ``CAP``; the mAP
  null of a crossed screen doubles the total from ``FINE_FROM`` draws on instead, see :func:`schedule`), each
  continuing the streams where the last left them, so no draw is wasted and the first L draws are
  those of a fixed run of L. A unit stops at its ``H``-th null value reaching the observed one, with
  p = H / L (Besag & Clifford 1991, "Sequential Monte Carlo p-values", Biometrika 78). After each
  round every unit has a Clopper-Pearson interval for its ideal p-value (B -> infinity) from its g
  exceedances in L draws, at level ``DELTA / (units * rounds)``, so all intervals hold together with
  probability >= 1 - DELTA; Benjamini-Hochberg applied to the upper ends rejects a set the ideal
  p-values surely reject, applied to the lower ends a superset, and only the units in between (the
  undecided) are refined (MMCTest, Gandy & Hahn 2014, Scand. J. Statist. 41; QuickMMCTest 2016; Zhang,
  Zou & Tse 2019 reach a fixed large B's decisions with similar bounds). When none is left, the BH
  decisions at every level of ``LEVELS`` equal those of the ideal p-values with probability
  >= 1 - DELTA. Reported p-value: H / L after a stop, else (1 + g) / (1 + L); with g = 0 it is an
  upper bound.

Which units are refined depends only on the draws, never on threads, workers or row order: every run
of the same input gives the same bits, unless a time ``budget`` stops the refinement (a run then says
which decisions stayed open). Progress is reported in every round, with the draws spent and, before a
refinement round, the draws it may take and their estimated time.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from ...fdr import bh_reject
from ...law import counted_pvalue
from ..table.names import count_text
from .clock import CompileWatch, Pace, alone_fits, deadline_of, drawers_on, estimate_text
from .executor import run_round, runner, thread_pool

__all__ = ["CAP", "FIRST", "GROWTH", "FINE_FROM", "H", "DELTA", "LEVELS", "schedule", "clopper_pearson", "Intervals", "undecided",
           "still_open", "sequential_pvalue", "Rounds", "rounds_of", "Null", "Resolved", "RoundInfo", "resolve",
           "CompileWatch", "unit_costs"]

CAP = 1_000_000     #: most draws of one unit
FIRST = 100         #: draws of the first round
GROWTH = 4          #: each round multiplies the total draws by this
FINE_FROM = 6_400   #: the mAP null of a crossed screen: each round from this total on doubles it (:func:`schedule`)
H = 20              #: Besag-Clifford: stop at the H-th null value reaching the observed one
DELTA = 1e-3        #: probability that some BH decision differs from that of the ideal p-values
LEVELS = (0.05,)    #: FDR levels whose BH decisions are resolved


def schedule(cap: int = CAP, first: int = FIRST, fine_from: int | None = None) -> list:
    """Total draws after each round: first * GROWTH**r, the last one ``cap``; with ``fine_from``, each
    round from a total of ``fine_from`` on doubles it instead (100, 400, 1,600, 6,400, 12,800, 25,600, ...).

    Past the first rounds the draws go to the few units near a BH line, and a unit stops in the first
    round whose total settles it: a round that quadruples the total draws up to 4 times what the unit
    needed, one that doubles it up to twice, for a few more rounds. The mAP null of a crossed screen takes
    the finer tail (:func:`rounds_of`): its refinement is a few perturbations at the BH line (on the
    2,000-compound benchmark screen 25 of them took 83% of the draws under x4 rounds; 23% fewer draws
    with the finer tail, the same decisions). The block layout keeps ``GROWTH`` throughout, so its
    p-values stay those of earlier versions, bit for bit, and so does the queries' null (its refinement
    is mostly counted exactly; there the finer tail took 10% more draws)."""
    out, t = [], int(first)
    while t < cap:
        out.append(t)
        t *= 2 if fine_from is not None and t >= fine_from else GROWTH
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
    """The Beta quantiles of :func:`clopper_pearson`: lo = B^-1(err/2; g, L-g+1), hi = B^-1(1-err/2; g+1, L-g).
    ``scipy.special.betaincinv`` is the inverse regularised incomplete beta that ``scipy.stats.beta.ppf``
    evaluates (the same bits), without importing scipy.stats: about 1.2 s of CPU in every process that
    runs an adaptive null, where the rest of scoring needs none of it."""
    from scipy.special import betaincinv

    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(g > 0, betaincinv(g, L - g + 1, err / 2), 0.0)
        hi = np.where(g < L, betaincinv(g + 1, L - g, 1 - err / 2), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


class Intervals:
    """:func:`clopper_pearson` of a run's rounds, each distinct (g, L) pair computed once: a round changes
    the counts of the units it drew only, so every later round finds most pairs already known. The same
    values (the Beta quantiles are computed elementwise); integer counts below 2^32 only, others are
    computed as :func:`clopper_pearson` does, and a new ``err`` starts afresh."""

    def __init__(self):
        self.err, self.keys, self.lo, self.hi = None, np.zeros(0, dtype=np.uint64), np.zeros(0), np.zeros(0)

    def __call__(self, g, L, err):
        g, L = np.asarray(g), np.asarray(L)
        if (g.dtype.kind not in "iu" or L.dtype.kind not in "iu" or g.ndim != 1 or not g.size
                or g.min() < 0 or L.max() >= 1 << 32 or L.min() < 0):
            return clopper_pearson(g, L, err)
        if err != self.err:
            self.__init__()
            self.err = err
        key = (L.astype(np.uint64) << np.uint64(32)) | g.astype(np.uint64)
        at = np.minimum(np.searchsorted(self.keys, key), max(self.keys.size - 1, 0))
        new = np.unique(key[self.keys[at] != key] if self.keys.size else key)
        if new.size:
            lo, hi = _interval((new & np.uint64(0xFFFFFFFF)).astype(float), (new >> np.uint64(32)).astype(float), err)
            keys = np.concatenate([self.keys, new])
            order = np.argsort(keys, kind="stable")
            self.keys, self.lo, self.hi = keys[order], np.concatenate([self.lo, lo])[order], np.concatenate(
                [self.hi, hi])[order]
            at = np.searchsorted(self.keys, key)
        return self.lo[at], self.hi[at]


def undecided(lo, hi, levels=LEVELS) -> np.ndarray:
    """Units whose BH decision is not settled by their intervals [lo, hi] at some level of ``levels``:
    rejected by BH on the lower ends but not by BH on the upper ends (MMCTest's undecided set), BH being
    :func:`apnull.fdr.bh_reject` (the decisions of the reported q-values)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    out = np.zeros(lo.size, dtype=bool)
    for q in levels:
        out |= bh_reject(lo, q) & ~bh_reject(hi, q)
    return out


def still_open(reached, drawn, rounds, cap=CAP, delta=DELTA, levels=LEVELS, known=None, exact=None,
               intervals=clopper_pearson) -> np.ndarray:
    """Units to refine after a round: MMCTest-undecided (:func:`undecided` on Clopper-Pearson intervals
    at level ``delta / (tests * rounds)``) and below ``cap`` draws. ``reached``/``drawn`` hold every
    unit of the run (their BH decisions are joint); ``known`` the p-values of the other tests of the
    same BH family, exact ones (e.g. the per-query p-values of the exact law beside the conditional
    ones); ``exact`` (bool per unit, optional) marks units whose counts are an enumeration (p =
    reached / drawn exactly: its interval is that point, and it is never refined); ``rounds`` is
    ``len(schedule(cap))``; ``intervals``: :func:`clopper_pearson`, or an :class:`Intervals` kept over a run's
    rounds."""
    g = np.asarray(reached)
    L = np.asarray(drawn)
    known = np.empty(0) if known is None else np.asarray(known, dtype=float)
    lo, hi = intervals(g, L, delta / (max(g.size + known.size, 1) * rounds))
    if exact is not None and np.any(exact):
        p = counted_pvalue(g, L, exact=True)
        lo, hi = np.where(exact, p, lo), np.where(exact, p, hi)
    und = undecided(np.concatenate([lo, known]), np.concatenate([hi, known]), levels)[:g.size]
    if exact is not None:
        und &= ~np.asarray(exact, dtype=bool)
    return und & (L < cap)


def sequential_pvalue(reached, drawn, stopped):
    """(p, bound): H / L where a unit stopped at its H-th exceedance, else (1 + g) / (1 + L); bound is
    True where g = 0 (the p-value is then an upper bound, not an estimate); the formula is
    :func:`apnull.law.counted_pvalue`'s."""
    p = counted_pvalue(reached, drawn, exact=stopped)
    return np.minimum(p, 1.0), np.asarray(reached) == 0


class Rounds(NamedTuple):
    """How a run draws (:func:`rounds_of`)."""

    targets: list      #: total draws of each unit after each round
    h: int             #: Besag-Clifford stop at the h-th exceedance (> targets[-1]: never)
    adaptive: bool     #: refine only the undecided units after each round (MMCTest)
    exhaustive: bool   #: every assignment enumerated (one round): p = g / T


def rounds_of(permutations, cap: int = CAP, h: int = H, crossed: bool = False) -> Rounds:
    """The :class:`Rounds` of ``permutations``: "auto" (adaptive up to ``cap``), a whole number B (one
    round, no early stop), "all" (one exhaustive round) or 0 (observed values only). ``crossed``: the
    screen has the crossed layout (:attr:`..table.perts.PertTable.crossed`): "auto" refines with the finer
    tail of :func:`schedule` (from :data:`FINE_FROM` draws)."""
    if permutations == "auto":
        return Rounds(schedule(cap, fine_from=FINE_FROM if crossed else None), int(h), True, False)
    if permutations == "all":
        return Rounds([0], 1, False, True)  # the null's kernels enumerate; the target is theirs
    B = int(permutations)
    return Rounds([B], B + 1, False, False)


@dataclass
class Null:
    """One null as the engine runs it: units, their state and how one round continues them.

    ``state`` holds every array the rounds read or write, each at a level of ``work.offsets`` or
    "item" (``levels``); ``inputs`` are the names the batch function ``fn`` reads (see
    :mod:`.executor`). The units' own counts are ``state["drawn"]``, ``["reached"]`` and
    ``["stopped"]`` at the level ``unit_level``, entries ``units``; ``unit_item`` is each unit's item.
    When ``state`` has an "active" array (at the units' level) the engine marks the units a round
    should continue there, and the kernels skip the others.
    """

    work: object
    fn: Callable
    state: dict
    levels: dict
    inputs: tuple
    unit_level: str
    units: np.ndarray
    unit_item: np.ndarray
    label: str = "units"      #: what a unit is, for progress lines ("perturbations", "labels")
    pieces: object = None     #: how an item's round is cut for threads (:class:`.executor.Pieces`), if it can be

    def counts(self) -> tuple:
        """(reached, drawn, stopped) of every unit."""
        s = self.state
        return s["reached"][self.units], s["drawn"][self.units], s["stopped"][self.units]

    def exact(self):
        """(units,) bool: units whose counts are an enumeration of their exact law (p = reached /
        drawn), or None when the null has no such units (no "exact" array in its state)."""
        return self.state["exact"][self.units] if "exact" in self.state else None


@dataclass
class Resolved:
    """What :func:`resolve` gives per unit (arrays in unit order)."""

    p_value: np.ndarray       #: sequential (or fixed-B, or exact) p-value
    drawn: np.ndarray         #: null draws used
    bound: np.ndarray         #: no draw reached the observed value: p is an upper bound
    open: np.ndarray          #: the BH decision was still undecided when a budget stopped the rounds
    seconds: float = 0.0      #: time spent in the rounds, compiling code excluded
    stopped_by_budget: str = ""  #: why the refinement stopped early ("" if it did not)
    rounds: list = field(default_factory=list)  #: a RoundInfo per round run
    exact: np.ndarray | None = None  #: units whose p-value is their exact law, counted (drawn: its choices)


class RoundInfo(NamedTuple):
    """A round, as progress reports it before it runs (``estimate`` None when unknown)."""

    number: int               #: 0 for the first round
    units: int                #: units the round continues
    label: str                #: what a unit is
    target: int               #: draws of each unit after the round
    draws_so_far: int         #: draws of all units before the round (never fewer than the round before's)
    draws_at_most: int        #: draws the round may take (fewer when units stop early)
    estimate: float | None    #: estimated seconds, from the draws per second of the rounds before


def unit_costs(null: Null) -> np.ndarray:
    """(units,) a draw's cost of each unit of ``null`` relative to the others': its work's item weights
    (``weights()``, :class:`.executor.Work`) shared among the item's units, or ones. A round's estimate
    counts its draws at these costs, so a round of light units is not timed at the pace of a round of
    heavy ones (a positive control on every plate: k (k - 1) pairs a draw, against 20 for five plates)."""
    weights = getattr(null.work, "weights", None)
    if weights is None:
        return np.ones(null.units.size)
    w = np.asarray(weights(), dtype=float)
    per = np.bincount(null.unit_item, minlength=w.size)
    return w[null.unit_item] / per[null.unit_item]


def resolve(null: Null, rounds: Rounds, *, client=None, threads=None, known=None, progress=None,
            budget=None, cap=CAP, delta=DELTA, levels=LEVELS, after_first=None) -> Resolved:
    """Run ``null``'s rounds (see the module) and return its units' p-values.

    Parameters
    ----------
    null : Null
    rounds : Rounds
        From :func:`rounds_of`.
    client : dask client, :class:`.executor.Scattered` or None
        None: threads of this process (``threads``, default one per core).
    known : array, optional
        Exact p-values of the other tests of the units' BH family (see :func:`still_open`).
    progress : callable(done, total), optional
        Called with (0, items) as each round starts and as its batches finish; when it also has a
        method ``round(info)``, that is called with a :class:`RoundInfo` before each round, and
        ``compiling()`` / ``compiled(seconds)`` as numba compiles kernels (:class:`CompileWatch`; the
        seconds are never counted as scoring time).
    budget : float or :class:`.clock.Deadline`, optional
        Seconds from now, or the run's deadline (shared with its other stages): a refinement round
        (after the first) whose estimated time would take the run past it is not started, and the
        undecided units are reported ``open``. A round's estimate: its draws, each at its unit's cost
        (:func:`unit_costs`), at the rate of the latest round of comparable draws (:class:`.clock.Pace`),
        times the nulls drawing on the clock now over those during all of that round (at least 1,
        :meth:`.clock.Deadline.drawers`); the first null holds the others for a round that fits only alone.
    after_first : callable, optional
        Called (no arguments) once the first round's outputs are in ``null.state``, before the next
        round: work that needs them may start beside the refinement rounds.
    """
    state = null.state
    U = null.units.size
    active = np.ones(U, dtype=bool)
    info, start, pace = [], time.monotonic(), Pace()
    cost = unit_costs(null)
    intervals = Intervals()  # the units' Clopper-Pearson intervals, each distinct (g, L) computed once
    why = ""
    watch = CompileWatch(progress)
    deadline = deadline_of(budget)
    L, exact = null.counts()[1], null.exact()
    spent = int(L.sum() if exact is None else L[~exact].sum())  # draws so far, a running total: an enumerated
    # law was not drawn, and a unit whose law is counted later keeps the draws it made before
    with thread_pool(threads) as pool, watch.installed(), \
            (deadline.watching() if deadline is not None else contextlib.nullcontext()), \
            (deadline.drawing() if deadline is not None else contextlib.nullcontext(False)) as first:
        run = runner(client, null.work, pool)
        steps = _steps(rounds, deadline is not None)
        for step, (number, target, decides, timed) in enumerate(steps):
            if "active" in state:
                state["active"][null.units] = active
            g, L, _ = null.counts()
            if not decides and pace.rounds:  # a step of the first round whose whole round would fit
                whole = next(t for _, t, d, _ in steps[step:] if d)  # within the time left: no need to stop
                if not deadline.passed(pace.ahead(float((np.maximum(whole - L[active], 0) * cost[active]).sum()),
                                                  drawers_on(deadline))[0]):
                    continue
            left = np.maximum(target - L[active], 0)  # each active unit's draws to go
            at_most = int(left.sum())
            estimate, slower = pace.ahead(float((left * cost[active]).sum()), drawers_on(deadline))  # at their costs
            alone = bool(info) and timed and alone_fits(deadline, first, estimate, slower)  # the others held
            estimate = estimate / slower if alone else estimate
            round_info = RoundInfo(number, int(active.sum()), null.label, int(target), spent, at_most, estimate)
            if deadline is not None and info and deadline.passed(estimate if timed and estimate is not None else 0.0):
                why = (f"{'refining' if number else 'drawing for'} {count_text(round_info.units, null.label)} to "
                       f"{target:,} draws each would take {estimate_text(estimate or 0.0)}, past {deadline.text()}")
                break
            info.append(round_info)
            if hasattr(progress, "round"):
                progress.round(round_info)
            items = np.unique(null.unit_item[active])
            if progress:
                progress(0, int(items.size))
            with deadline.held() if alone else contextlib.nullcontext():
                t0, c0, before = time.monotonic(), watch.seconds, drawers_on(deadline)
                run_round(run, items, state, null.levels, null.inputs, target, rounds.h, null.fn, progress, null.pieces)
                during = min(before, drawers_on(deadline))  # the nulls drawing at once during all of the round
            seconds = time.monotonic() - t0 - (watch.seconds - c0)  # compiling is not drawing
            exact = null.exact()
            drawn = (int(null.counts()[1].sum()) - spent if exact is None
                     else int(null.counts()[1][~exact].sum()) - int(L[~exact].sum()))
            moved = (null.counts()[1] - L) * cost  # the round's draws at their costs: the rate is of a unit cost
            done = float(moved.sum() if exact is None else moved[~exact].sum())
            pace.add(seconds, done, during)  # the first's has one-off set-up
            spent += drawn
            if after_first is not None and decides:
                after_first, told = None, after_first
                told()
            if not rounds.adaptive:
                active[:] = False
                break
            if not decides:  # a step of the first round under a deadline: the same draws, no decision yet
                active &= ~null.counts()[2]  # a unit stopped at its h-th exceedance draws no more this round
                continue
            g, L, _ = null.counts()
            active = still_open(g, L, len(rounds.targets), cap, delta, levels, known, null.exact(), intervals)
            if not active.any():
                break
    g, L, stopped = null.counts()
    if rounds.exhaustive:
        p, bound = counted_pvalue(g, L, exact=True), np.zeros(U, dtype=bool)
    else:
        p, bound = sequential_pvalue(g, L, stopped)
    exact = null.exact()
    open_ = (still_open(g, L, len(rounds.targets), cap, delta, levels, known, exact) if why
             else np.zeros(U, dtype=bool))
    return Resolved(p, L.astype(np.int64), bound, open_, time.monotonic() - start - watch.seconds, why, info,
                    np.zeros(U, dtype=bool) if exact is None else exact.copy())


#: Under a deadline, the first adaptive round is drawn in steps to these totals (then ``FIRST``), so a
#: run that cannot afford the whole round still ends in time; a unit's draws are the same either way.
FIRST_STEPS = (10, 30)


def _steps(rounds: Rounds, budgeted: bool) -> list:
    """(round number, target, decides, timed) of each step of ``rounds``: every round as one step,
    ``decides`` (the undecided units are chosen after it); with a deadline, adaptive runs draw the first
    round in steps to :data:`FIRST_STEPS` that decide nothing (the streams continue where they stop,
    so the draws and decisions are those of one step); :func:`resolve` skips a step once the whole
    round's estimate fits within the time left. ``timed``: the draws per second of the step
    before estimate this one (not after the very first step, whose time holds one-off set-up; only
    a deadline already passed stops the step after it)."""
    out = [(r, int(t), True, r > 0) for r, t in enumerate(rounds.targets)]
    if budgeted and rounds.adaptive and out and out[0][1] > FIRST_STEPS[-1]:
        out = [(0, t, False, i > 0) for i, t in enumerate(FIRST_STEPS)] + [(0, out[0][1], True, True)] + out[1:]
    return out
