"""The null of a pipeline comparison: the two pipelines swapped on whole units (a sign flip per unit).

Two pipelines A and B score the same wells; each compared perturbation t has a difference
x_t (delta = mAP_b - mAP_a, or retrieved_b - retrieved_a). A *unit* is a set of perturbations sharing
controls or replicates: a component of strata (two strata are linked when a compared perturbation
has replicates in both; every perturbation of a component ranks its replicates among that
component's controls only). Swapping A and B on the wells of one unit swaps exactly its
perturbations' scores and leaves every other unit's as they were: each x_t of the unit changes sign.

Null hypothesis: the joint law of (A, B) is unchanged by swapping the pipelines on any set of units
(the pipelines are exchangeable within each unit, whatever the units share with each other or how
plate quality varies). The unit sums x_u = sum_{t in u} x_t then have the law of s_u x_u for every
sign vector s, and the statistic T = sum_u x_u is compared with T_s = sum_u s_u x_u:
p = #{s : |T_s| >= |T| - tol} / 2^U over all 2^U flips (exact; :func:`flip_null` with
``exhaustive``), or (1 + g) / (1 + B) over B random flips (the engine's rounds, fixed or adaptive).
Flipping single perturbations instead would treat the perturbations of a plate as independent,
which they are not when a pipeline handles a plate well or badly; the unit flips keep that
dependence whole.

The retrieved counts (perturbations with q_value <= alpha on each side) are not sums over units:
Benjamini-Hochberg couples every unit (a pipeline that does well on a few plates lowers the BH
threshold everywhere), so flipping each unit's retrieved flags rejected 42% of 200 true-null pairs of
real profiles at 0.05 (``benchmarks/compare.py``). :class:`RetrievedWork` flips the p-values instead: under flip s the perturbations of
a flipped unit take B's p-value on side A and A's on side B, BH is counted again on both sides, and
the statistic is R_B - R_A (exact when each p-value depends on its own unit only, as with a fixed
number of permutations).

The interval of the mean delta mu (:func:`flip_interval`) inverts the same test under a shift: mu is
kept when the test of the values x_t - mu keeps the null. Flip s (flipped units F, kept units K)
reaches the observed value at mu exactly when mu lies between the mean delta of F's perturbations
and the mean delta of K's (|sum_K (x - mu) - sum_F (x - mu)| >= |sum (x - mu)| expands to
(mu - m_F)(mu - m_K) <= 0), so the p-value at every mu is a count of intervals, and the interval is the
hull of the mu whose p-value passes the level. It assumes a common shift: every x_t - mu symmetric
about 0 under the swaps.

Streams: the flips of statistic ``name`` are keyed by (seed, "compare", name) (:func:`flip_key`).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ...fdr import first_levels
from ...law import VALUE_TOL
from ...limits import SCORE_MAX_EXACT_ASSIGNMENTS
from ...streams import stream_key
from ..engine.executor import WholeWork
from ..engine.sequential import Null
from ..kernels.flips import flip_batch as _flip_kernel
from ..kernels.flips import flipped_parts, retrieved_flips
from ..table.segments import linked_roots, offsets
from .crossed import MIN_PLATES

__all__ = ["FlipPart", "FlipWork", "RetrievedPart", "RetrievedWork", "first_levels", "flip_key", "flip_null",
           "flips_batch", "retrieved_batch", "enumerable", "smallest_p", "flip_interval", "units_of",
           "MAX_EXACT_FLIPS", "INTERVAL_DRAWS", "LEVEL", "TESTS", "MIN_UNITS", "which_test"]

#: The most flips enumerated (2^U at most this: U <= 17 units); more units draw random flips.
MAX_EXACT_FLIPS = SCORE_MAX_EXACT_ASSIGNMENTS
#: Random flips behind the interval at least (more when the p-value used more).
INTERVAL_DRAWS = 9_999
#: Levels of the flip null's state arrays: one entry per statistic.
FLIP_LEVELS = dict.fromkeys(("drawn", "reached", "stopped"), "item")


def enumerable(units: int) -> bool:
    """Whether every one of the 2^units flips is enumerated (2^units <= :data:`MAX_EXACT_FLIPS`)."""
    return 2 ** int(units) <= MAX_EXACT_FLIPS


def smallest_p(units: int) -> float:
    """The smallest p-value the exact test can give with ``units`` units: 2 / 2^units (a flip and its
    complement reach the same |T|), 1 for one unit."""
    return min(1.0, 2.0 / 2.0 ** int(units))


def flip_key(seed: int, name: str) -> np.uint64:
    """The stream key of statistic ``name``'s flips: (seed, "compare", name)."""
    return np.uint64(stream_key(seed, "compare", name))


def units_of(strata_of: list) -> tuple:
    """(unit of each perturbation, the strata of each unit): ``strata_of[t]`` lists the strata of
    perturbation t's replicates (as text, on either side); units are the components of strata linked
    by a perturbation, numbered in order of their smallest stratum, each unit's strata sorted, so row
    order never matters. One unit when no stratum is given (every list holds the same single key)."""
    names = sorted({s for strata in strata_of for s in strata})
    index = {s: i for i, s in enumerate(names)}
    root = linked_roots(len(names), [index[s] for strata in strata_of for s in strata],
                        offsets([len(strata) for strata in strata_of]))
    roots = np.unique(root)  # ascending: in order of each unit's smallest stratum
    number = np.searchsorted(roots, root)
    unit = np.array([number[index[strata[0]]] for strata in strata_of], dtype=np.int64)
    return unit, [[names[i] for i in np.flatnonzero(root == r)] for r in roots.tolist()]


class FlipPart(NamedTuple):
    """Some statistics of a comparison with what their kernel reads."""

    index: np.ndarray   #: (p,) the statistics' indices in the work
    sums: np.ndarray    #: (p, U) each statistic's unit values x_u, units in order
    keys: np.ndarray    #: (p,) uint64 stream keys
    tol: np.ndarray     #: (p,) tolerance of "reaches the observed value"


class FlipWork(WholeWork):
    """The statistics of a comparison (rows of ``sums``, each over the same U units) as the engine's
    work: one group, sent whole to every dask worker (it is a few numbers)."""

    def __init__(self, sums, names, seed: int):
        self.sums = np.ascontiguousarray(np.atleast_2d(np.asarray(sums, dtype=np.float64)))
        self.names = list(names)
        self.size = self.sums.shape[0]
        self.keys = np.array([flip_key(seed, n) for n in self.names], dtype=np.uint64)
        scale = np.maximum(1.0, np.abs(self.sums).sum(axis=1))
        self.tol = VALUE_TOL * scale

    @property
    def units(self) -> int:
        return int(self.sums.shape[1])

    def part(self, items, worker: bool) -> FlipPart:
        items = np.asarray(items, dtype=np.int64)
        return FlipPart(items, np.ascontiguousarray(self.sums[items]), self.keys[items], self.tol[items])


def flips_batch(part: FlipPart, pos, st, target, h, exhaustive=False):
    """One round of the flip nulls at positions ``pos`` of ``part`` (the engine's batch function):
    {"drawn", "reached", "stopped"}, one compiled call."""
    pos = np.asarray(pos, dtype=np.int64)
    drawn, reached = st["drawn"].copy(), st["reached"].copy()
    stopped = np.zeros(pos.size, dtype=bool)
    _flip_kernel(np.ascontiguousarray(part.sums[pos]), part.keys[pos], part.tol[pos], drawn, reached, stopped,
                 np.int64(target), np.int64(h), bool(exhaustive))
    return {"drawn": drawn, "reached": reached, "stopped": stopped}


class RetrievedPart(NamedTuple):
    """What the retrieved counts' flip null reads (the whole work)."""

    index: np.ndarray   #: (1,) the one statistic
    ca: np.ndarray      #: (T,) first levels on side A (:func:`apnull.fdr.first_levels`)
    cb: np.ndarray      #: (T,) first levels on side B
    unit: np.ndarray    #: (T,) each perturbation's unit
    units: int          #: U
    key: np.uint64      #: the flips' stream


class RetrievedWork(WholeWork):
    """The retrieved counts of a comparison as the engine's work: R_B - R_A, the numbers of
    perturbations Benjamini-Hochberg retrieves at ``alpha`` on each side, with every flip counting BH
    again on both sides (the p-values of a flipped unit's perturbations swap sides; BH couples all
    units, so the flags themselves are not flipped). Exact under the swap null when each p-value
    depends on its own unit only (a fixed number of permutations)."""

    def __init__(self, p_a, p_b, unit, units: int, alpha: float, seed: int):
        self.ca, self.cb = first_levels(p_a, alpha), first_levels(p_b, alpha)
        self.unit = np.asarray(unit, dtype=np.int64)
        self.units = int(units)
        self.size = 1
        self.keys = np.array([flip_key(seed, "retrieved")], dtype=np.uint64)

    def part(self, items, worker: bool) -> RetrievedPart:
        return RetrievedPart(np.asarray(items, dtype=np.int64), self.ca, self.cb, self.unit, self.units, self.keys[0])


def retrieved_batch(part: RetrievedPart, pos, st, target, h, exhaustive=False):
    """One round of the retrieved counts' flip null (the engine's batch function)."""
    L, g, stop = retrieved_flips(part.ca, part.cb, part.unit, np.int64(part.units), part.key, np.int64(st["drawn"][0]),
                                 np.int64(st["reached"][0]), np.int64(target), np.int64(h), bool(exhaustive))
    return {"drawn": np.array([L], dtype=np.int64), "reached": np.array([g], dtype=np.int64),
            "stopped": np.array([stop], dtype=bool)}


def flip_null(work, item: int, *, exhaustive=False) -> Null:
    """The flip null of statistic ``item`` of ``work`` (a :class:`FlipWork` or :class:`RetrievedWork`)
    alone (its own BH family of one, so the engine settles its decision at the level itself), state
    zeroed."""
    S = work.size
    state = {"drawn": np.zeros(S, dtype=np.int64), "reached": np.zeros(S, dtype=np.int64),
             "stopped": np.zeros(S, dtype=bool)}
    batch = retrieved_batch if isinstance(work, RetrievedWork) else flips_batch
    fn = functools.partial(batch, exhaustive=True) if exhaustive else batch
    one = np.array([int(item)], dtype=np.int64)
    return Null(work, fn, state, FLIP_LEVELS, ("drawn", "reached"), "item", one, one, "comparisons")


def flip_interval(values, counts, key, *, exhaustive: bool, draws: int = INTERVAL_DRAWS,
                  level: float = 0.95) -> tuple:
    """(low, high) of the mean difference: the hull of every mu the flip test keeps at ``1 - level``.

    Parameters
    ----------
    values : (U,) array
        Each unit's sum of differences x_u.
    counts : (U,) int array
        Each unit's number of perturbations (all >= 1).
    key : uint64
        The stream of the flips (random flips only).
    exhaustive : bool
        All 2^U flips (p(mu) = count / 2^U), else the first ``draws`` random flips of ``key``
        (p(mu) = (1 + count) / (1 + draws)).

    The flip with flipped units F and kept units K counts at mu when mu lies between m_F = x_F / n_F
    and m_K = x_K / n_K (see the module); a flip with F or K empty counts at every mu. mu is kept when
    p(mu) > 1 - level. Returns (nan, nan) when no mu can be rejected (too few flips: the test can
    never reach the level) or there are no units. The interval always holds the observed mean.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    U = values.size
    if U == 0:
        return math.nan, math.nan
    total = 2 ** U if exhaustive else int(draws)
    part, size = flipped_parts(np.ascontiguousarray(values), np.ascontiguousarray(counts), np.uint64(key),
                               np.int64(total), bool(exhaustive))
    S, P = float(values.sum()), int(counts.sum())
    every = (size == 0) | (size == P)
    # kept at mu when p(mu) > alpha: count(mu) > alpha * T (exhaustive) or 1 + count(mu) > alpha (1 + B)
    alpha = round(1.0 - level, 12)
    need = (math.floor(alpha * total) + 1) if exhaustive else (math.floor(alpha * (1 + total)))
    need -= int(every.sum())  # flips counting at every mu
    if need <= 0:
        return math.nan, math.nan
    some = ~every
    m_f = part[some] / size[some]
    m_k = (S - part[some]) / (P - size[some])
    lo, hi = np.minimum(m_f, m_k), np.maximum(m_f, m_k)
    # sweep: +1 at each lo, -1 just after each hi (closed intervals: starts before ends at a tie)
    at = np.concatenate([lo, hi])
    step = np.concatenate([np.ones(lo.size, np.int64), -np.ones(hi.size, np.int64)])
    order = np.lexsort((-step, at))
    cover = np.cumsum(step[order])
    where = at[order]
    reach = np.flatnonzero(cover >= need)
    if reach.size == 0:  # unreachable: the observed mean is in every interval, so this cannot happen
        return math.nan, math.nan
    low = float(where[reach[0]])
    # the last point still covered enough: an end event with coverage >= need before it, < need after
    falls = np.flatnonzero((cover - step[order] >= need) & (cover < need))
    return low, float(where[falls[-1]])


#: Confidence level of the interval of the mean delta.
LEVEL = 0.95

#: The tests of the mean delta (``summary["test"]``): sign flips of whole units (block layouts), the
#: plate-clustered t test (crossed layouts, :mod:`.nulls.crossed`), or none.
TESTS = ("unit sign flips", "plate-clustered t", "none")

#: The fewest units the sign flips are used with: with U units their smallest p-value is 2 / 2^U, and
#: 6 is the fewest that reaches 0.05.
MIN_UNITS = 6


def which_test(units: int, plates_of: list) -> tuple:
    """(test, why, plates): which test of the mean delta a comparison gets, and why, in plain words.

    ``units`` is the number of units (components of strata, :func:`.nulls.compare.units_of`) and
    ``plates_of[t]`` the strata of perturbation t's replicates ("" when there is no stratum). The rule:

    - at least :data:`MIN_UNITS` units: sign flips of whole units (exact, whatever each plate's quality);
    - else at least :data:`.nulls.crossed.MIN_PLATES` plates: the plate-clustered t test (crossed layouts);
    - else 2 to 5 units: the unit sign flips, which cannot reach 0.05 (the reason says so);
    - else none.

    Both tests answer the same question: would plates like these, handled by the two pipelines, retrieve
    replicates equally well on average? How well each pipeline handled each plate counts as chance.
    ``plates`` is the number of distinct strata (0 without a stratum).
    """
    plates = len({p for s in plates_of for p in s if p != ""})
    if units >= MIN_UNITS:
        return TESTS[0], (f"the {plates:,} plates form {units:,} units that hold their own perturbations, so "
                          f"A and B can be swapped on whole units: sign flips of the {units:,} units"), plates
    if plates >= MIN_PLATES:
        return TESTS[1], (f"perturbations have replicates on several plates, linking the {plates:,} plates into "
                          f"{units:,} unit{'s' if units != 1 else ''}: a t test whose variance counts every two "
                          f"perturbations sharing a plate as dependent, with {plates - 1:,} degrees of freedom "
                          "(the plates taken as drawn at random)"), plates
    if units >= 2:
        return TESTS[0], (f"with {units} units the smallest p-value the sign flips can give is "
                          f"{smallest_p(units):.3g} (2 / 2^{units}), so they cannot reach {1 - LEVEL:.2g} and the "
                          f"{LEVEL:.0%} interval is unbounded; at least {MIN_UNITS} units, or {MIN_PLATES} plates "
                          "for the plate-clustered test, are needed"), plates
    if plates == 0:
        why = ("no stratum column: the whole table is one unit (the plates are not known, so the perturbations "
               "cannot be resampled in the groups that share controls and nuisance); give the plate (or batch) "
               "column as the stratum")
    else:
        why = (f"the screen is one unit on {plates} plate{'s' if plates != 1 else ''}: every perturbation shares "
               f"controls with the others, so no swap of whole units can test it, and the plate-clustered test "
               f"needs at least {MIN_PLATES} plates")
    return TESTS[2], why, plates
