"""Per-query p-values that stay calibrated under plate effects: the exact law or a conditional null.

A query q of perturbation t ranks t's other replicates (positives) and the controls of its own
stratum (negatives). Which null each query gets:

- "exact law": every positive shares q's stratum (t has replicates in one stratum). Positives and
  negatives are then exchangeable, and the AP law of (m, n) is exact (:meth:`.laws.LawCache.query_pvalues`).
- "conditional permutation": some positive lies in another stratum. With a plate effect, a positive
  from another plate is less similar to q than q's own controls whatever t does, so the exact law is
  valid but far too conservative. The conditional null keeps q and gives each positive's label to a
  random member of its own stratum's pool (t's replicates and the controls there, q excluded), then
  recomputes q's AP (:func:`..kernels.draws.continue_conditional`). Exact under exchangeability of t's
  replicates and the controls within each stratum, given q: p = (1 + #{null AP >= AP - tol}) /
  (1 + L), or adaptive (:mod:`..engine.sequential`) for ``"auto"``, the BH family being every query
  of the screen (the exact-law ones as known p-values).

  On the crossed layout (one replicate a plate) the conditional law itself is counted where that is
  cheaper than drawing it: under ``"auto"``, on a screen of at least :data:`EXACT_MIN_QUERIES` such
  queries, a query without ties in its row whose round would still take at least :data:`EXACT_DRAWS` draws (to the round's end, or to its H-th exceedance at the rate
  seen so far) counts the choices T = prod_s (n_s + 1) of one member of each other plate's pool
  reaching its AP (:func:`..kernels.querylaw.law_count`, its cost bounded by the draws it replaces;
  past that bound the draws run as before). Its p-value is then exact, p = #{choices with AP >= AP_obs
  - tol} / T (never 0: the observed choice is one), reported with T permutations and no bound, and the
  engine takes it as a point, never refined (:func:`..engine.sequential.still_open`'s ``exact``). A
  row with ties, a fixed number of permutations, or the general path's queries are drawn.

Query i of t (position in t's replicate order: strata sorted, canonical rows within) draws from the
stream keyed by (seed, "query", t, i) only. The null runs on the mAP null's work (:class:`.permutation.
ScreenWork`): the same parts, sent to dask workers once.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ...law import VALUE_TOL
from ...streams import stream_keys
from ..table.perts import Scores
from ..table.rows import PreparedRows, held_whole
from ..table.segments import offsets, ranges
from ..engine.clock import deadline_of, tell_stage
from ..engine.sequential import Null, resolve, rounds_of, undecided
from ..kernels.crossed import EXACT_STEPS, crossed_conditional_batch, crossed_pools, law_batch, pool_sizes
from ..kernels.draws import Counts, conditional_batch
from .pooltables import NO_SHARED, crossed_of, keep_done, kept_pools

__all__ = ["QUERY_NULLS", "QueryP", "query_null", "conditional_pvalues", "query_pvalues", "bounds_undecided",
           "QUERY_CHUNK", "QueriesBeside", "NULL_NAMES"]

#: The label of each per-query null, as the ``null`` column of the query table says.
QUERY_NULLS = {"exact": "exact law", "conditional": "conditional permutation",
               "counted": "conditional law (all choices counted)"}

#: Queries whose exact-law p-values are computed together (a few MB of temporaries at a time).
QUERY_CHUNK = 65536

#: Levels of the conditional null's state arrays: one entry per query.
QUERY_LEVELS = dict.fromkeys(("keys", "counters", "drawn", "reached", "stopped", "active", "exact", "countable",
                              "before"), "query")

#: Under adaptive stopping, a crossed query without ties whose round would still take at least this
#: many draws counts its exact conditional law instead (:func:`..kernels.querylaw.law_count`); 0: never.
EXACT_DRAWS = 1024
#: ... and only on a screen of at least this many such queries: the count's compiled code costs a fresh
#: install about 5 s of compiling (once), more than a smaller screen's near-line queries take to draw.
#: A property of the screen, so the same seed gives the same answer on any threads or workers.
EXACT_MIN_QUERIES = 1000


class QueryP(NamedTuple):
    """Every query's p-value, as arrays over the queries of ``screen.perts`` (replicate order)."""

    p: np.ndarray             #: (Q,) p-value
    conditional: np.ndarray   #: (Q,) bool: the conditional permutation null (else the exact law)
    permutations: np.ndarray  #: (Q,) int64 null draws (0 for the exact law)
    bound: np.ndarray         #: (Q,) bool: no draw reached the observed AP (p is an upper bound)
    open: np.ndarray          #: (Q,) bool: the BH decision stayed open when a budget stopped the rounds
    counted: np.ndarray       #: (Q,) bool: a conditional query whose law was counted over every choice
                              #: (:mod:`..kernels.querylaw`): p exact, ``permutations`` the number of choices
    before: np.ndarray        #: (Q,) int64: the draws a counted query made before its law was counted (else 0)


def law_wanted(counts, active, target, h):
    """(lawful, expect): the active queries whose round would still take at least :data:`EXACT_DRAWS`
    draws under adaptive stopping (``h <= target``), and those draws: to the round's target, or to
    the h-th exceedance at the rate seen so far (a query already past h exceedances, refined, draws to
    the target). None under a fixed number of draws, or with :data:`EXACT_DRAWS` 0."""
    drawn, reached = counts.drawn, counts.reached
    expect = np.maximum(target - drawn, 0)
    early = (reached > 0) & (reached < h)
    expect[early] = np.minimum(expect[early], (h - reached[early]) * drawn[early] // reached[early] + 1)
    if not EXACT_DRAWS or h > target:
        return np.zeros(drawn.size, dtype=bool), expect
    return active & (expect >= EXACT_DRAWS), expect


def query_batch(part, pos, st, target, h):
    """One round of the conditional null for the active queries of the perturbations ``pos`` of ``part``:
    {"counters", "drawn", "reached", "stopped"}, one compiled call per component run (perturbations of one
    replicate a stratum by the crossed layout's look-ups, :mod:`..kernels.crossed`)."""
    pos = np.asarray(pos, dtype=np.int64)
    arr = part.arrays
    qo = offsets(arr.qoff[pos + 1] - arr.qoff[pos])
    counts = Counts(st["counters"].copy(), st["drawn"].copy(), st["reached"].copy(), st["stopped"].copy())
    exact, before = st["exact"].copy(), st["before"].copy()
    ap = np.empty(qo[-1])
    comp_of = part.comp_of[pos]
    crossed = crossed_of(part, pos, crossed_pools)  # a small screen: the general kernels (same values)
    cuts = np.concatenate([[0], np.flatnonzero(np.diff(comp_of) | np.diff(crossed.astype(np.int64))) + 1, [pos.size]])
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        q = slice(qo[a], qo[b])
        batch = Counts(*(x[q] for x in counts))
        args = (arr, part.comps[comp_of[a]], part.kind, pos[a:b], st["keys"][q], batch)
        if not crossed[a]:
            conditional_batch(*args, st["active"][q], target, h, VALUE_TOL, ap[q])
            continue
        active = st["active"][q]
        lawful, expect = law_wanted(batch, active & st["countable"][q], target, h)
        width = pool_sizes(arr, part.comps, part.comp_of, pos[a:b]).max() if lawful.any() else 0
        rows = np.zeros((lawful.size if width else 0, width), dtype=np.int64)
        kmax = int((arr.soff[pos[a:b] + 1] - arr.soff[pos[a:b]]).max())
        shape = np.zeros((rows.shape[0], 2 + 2 * kmax), dtype=np.int64)
        untied = np.zeros(lawful.size, dtype=bool)
        shared = NO_SHARED  # its draws read no pair of two controls: a query is a replicate
        pools = kept_pools(part, comp_of[a], pos[a:b])  # the pools' similarities, kept by the mAP null's rounds
        crossed_conditional_batch(*args, active, target, h, VALUE_TOL, ap[q], lawful, rows, shape, untied, shared,
                                  pools)
        if (lawful & untied).any():  # the exact law where it costs less than the draws (a small entry)
            drawn = batch.drawn.copy()  # a counted query's draws become its choices: what it drew is kept apart
            law_batch(rows, shape, lawful & untied, ap[q], VALUE_TOL, EXACT_STEPS * expect, batch, exact[q])
            counted = lawful & untied & exact[q]
            before[q][counted] = drawn[counted]
        rest = lawful & ~exact[q]  # a tied row, or a count past its limit: drawn after all
        if rest.any():
            crossed_conditional_batch(*args, rest, target, h, VALUE_TOL, ap[q], np.zeros_like(rest), rows, shape,
                                      untied, shared, pools)
        keep_done(part, comp_of[a], pos[a:b], pools, "pools")
    return {"counters": counts.counters, "drawn": counts.drawn, "reached": counts.reached, "stopped": counts.stopped,
            "exact": exact, "before": before}


def query_null(work, seed) -> Null:
    """The conditional null of the queries of every perturbation of ``work``'s screen that spans several
    strata (its units; none when no perturbation does)."""
    pt = work.screen.perts
    idx = np.flatnonzero(np.diff(pt.soff) > 1)
    Q = int(pt.qoff[-1])
    qidx = ranges(pt.qoff, idx)
    state = {"keys": np.zeros(Q, dtype=np.uint64), "counters": np.zeros(Q, dtype=np.uint64),
             "drawn": np.zeros(Q, dtype=np.int64), "reached": np.zeros(Q, dtype=np.int64),
             "stopped": np.zeros(Q, dtype=bool), "active": np.zeros(Q, dtype=bool), "exact": np.zeros(Q, dtype=bool),
             "countable": np.zeros(Q, dtype=bool), "before": np.zeros(Q, dtype=np.int64)}
    names = pt.keys.tolist()
    unit_item = np.repeat(idx, pt.qoff[idx + 1] - pt.qoff[idx])  # each query's perturbation
    state["keys"][qidx] = stream_keys(seed, ["query"] * qidx.size, [names[i] for i in unit_item.tolist()],
                                      (qidx - pt.qoff[unit_item]).tolist())  # stream_key(seed, "query", key, j)
    state["countable"][qidx] = qidx.size >= EXACT_MIN_QUERIES  # the exact law: see EXACT_MIN_QUERIES
    return Null(work, query_batch, state, QUERY_LEVELS, tuple(QUERY_LEVELS), "query", qidx, unit_item, "queries")


def conditional_pvalues(work, seed, permutations, known, client=None, threads=None, budget=None, progress=None):
    """Conditional-null p-values of the queries of every perturbation that spans several strata.

    Parameters
    ----------
    work : ScreenWork
    seed : int
    permutations : int or "auto"
        Draws per query, or adaptive (rounds, Besag-Clifford stop, MMCTest refinement of the BH
        decisions across all queries of the screen, with the exact-law queries as known p-values).
    known : ndarray
        The exact-law p-values of the other queries.
    client : dask client, Scattered or None
    budget : float or Deadline, optional
        The run's time budget (:func:`..engine.sequential.resolve`).
    progress : optional
        Told the stage (its counts are of perturbations, each with its queries) and the rounds
        (:mod:`..engine.clock`).

    Returns
    -------
    queries : ndarray
        The conditional queries (positions among all queries; empty when no perturbation spans several
        strata).
    resolved : Resolved or None
    before : ndarray
        The draws each of ``queries`` made before its law was counted (0 where it was not).
    """
    null = query_null(work, seed)
    if not null.units.size:
        return null.units, None, null.units
    tell_stage(progress, "perturbations (conditional null of their queries)")  # a round counts perturbations
    res = resolve(null, rounds_of(permutations), client=client, threads=threads, known=known, budget=budget,
                  progress=progress)
    return null.units, res, null.state["before"][null.units]


def query_pvalues(work, scores, laws, seed, permutations, client=None, threads=None, budget=None,
                  progress=None) -> QueryP:
    """Every query's p-value and the null it used.

    Parameters
    ----------
    scores : Scores
        The observed ``ap`` of every query (:class:`..table.perts.Scores`).
    laws : LawCache
        The exact laws of the run (their far tails counted within its deadline).
    permutations : int or "auto"
        Draws per conditional query (``"auto"``: adaptive).
    budget : Deadline, optional
        The run's clock (:class:`..engine.clock.Deadline`): the conditional rounds stay within it (and
        the exact laws' far-tail counting within ``laws.deadline``, :meth:`.laws.LawCache.counted_pvalues`).
    progress : optional
        Told each stage and its progress (:mod:`..engine.clock`).

    Returns
    -------
    QueryP
        Exact-law queries have 0 permutations and bound False, except where the deadline passed
        before their far tail was counted: p is then the law's guaranteed upper end, bound True, and
        open True where the BH decision at the engine's levels could change (rejected with p = 0 but
        not with the bound; :func:`..engine.sequential.undecided`).
    """
    screen = work.screen
    pt = screen.perts
    Q = int(pt.qoff[-1])
    k = pt.k
    single = np.repeat(np.diff(pt.soff) == 1, k)  # the exact law: every positive shares the query's stratum
    out = QueryP(np.empty(Q), ~single, np.zeros(Q, dtype=np.int64), np.zeros(Q, dtype=bool), np.zeros(Q, dtype=bool),
                 np.zeros(Q, dtype=bool), np.zeros(Q, dtype=np.int64))
    deadline = deadline_of(budget)
    if single.any():  # the laws' work is per (m, n), not per query; chunks of queries bound the temporaries
        ns = screen.query_negatives()
        qpert = pt.query_pert()
        for a in range(0, Q, QUERY_CHUNK):
            pos = a + np.flatnonzero(single[a:a + QUERY_CHUNK])
            if pos.size:
                out.p[pos], out.bound[pos] = laws.counted_pvalues(k[qpert[pos]] - 1, ns[pos], scores.ap[pos],
                                                                  progress)
        del qpert, ns
    uncounted = out.bound.copy()
    where, res, before = conditional_pvalues(work, seed, permutations, out.p[single], client, threads, deadline,
                                             progress)
    out.before[where] = before
    if res is not None:
        out.p[where], out.permutations[where], out.bound[where], out.open[where] = (res.p_value, res.drawn,
                                                                                    res.bound, res.open)
        if res.exact is not None:
            out.counted[where] = res.exact
    if uncounted.any():
        out.open[uncounted] = bounds_undecided(out.p, out.bound)[uncounted]
    return out


def bounds_undecided(p, bound) -> np.ndarray:
    """Where the BH decisions (at the engine's levels) of p-values ``p`` could change, ``p`` being
    upper bounds where ``bound`` (anywhere in [0, p]) and exact elsewhere: rejected with the lower
    ends but not with the upper ends (:func:`..engine.sequential.undecided`). NaN counts as 1."""
    hi = np.nan_to_num(np.asarray(p, dtype=float), nan=1.0)
    return undecided(np.where(bound, 0.0, hi), hi)


class _Stopped(Exception):
    """The run that started :class:`QueriesBeside` failed: its thread ends at its next progress call."""


class _Checked:
    """The progress of the queries' null beside the mAP null: each count first checks that the run still
    goes on (raises :class:`_Stopped` once it failed) and waits while the mAP null holds it for a round
    (``deadline``, :meth:`..engine.clock.Deadline.held`), then goes to ``told`` (the run's reporter's
    ``beside``, or None: nothing shown), whose hooks (round, stage, compiling, ...) it offers as its own."""

    def __init__(self, stop, told, deadline=None):
        self.stop, self.told, self.deadline = stop, told, deadline

    def __call__(self, done, total):
        while self.deadline is not None and not self.deadline.wait_turn(0.05) and not self.stop.is_set():
            pass  # the mAP null draws a round alone
        if self.stop.is_set():
            raise _Stopped
        if self.told is not None:
            self.told(done, total)

    def __getattr__(self, name):
        return getattr(self.told, name)  # AttributeError without a reporter: no hook


#: The names of the two nulls in progress lines while they run beside each other.
NULL_NAMES = ("mAP null", "per-query null")

#: Under a deadline the queries' null starts beside the mAP null's refinement only while the time left is at
#: least this many times the run's time so far (its first round): else the nulls run in turn, the mAP null
#: alone first, as a tight budget needs (beside, its rounds would share the cores when the time runs out).
BESIDE_ROOM = 10.0


def _kept_whole(X) -> bool:
    """Whether a run keeps the screen's rows ``X`` for both nulls anyway: rows read from the table
    (:class:`..table.rows.PreparedRows`), or a matrix small enough to hold whole
    (:func:`..table.rows.held_whole`; a larger one is let go before the queries' null)."""
    return isinstance(X, PreparedRows) or (isinstance(X, np.ndarray) and held_whole(X))


class QueriesBeside:
    """The queries' p-values (:func:`query_pvalues`) of a run whose options are ``opts`` (its seed,
    permutations, threads, deadline and progress), computed in a thread of their own beside the mAP null's
    refinement rounds where it can: started (:meth:`start`, the mAP null's ``after_first`` hook of
    :func:`..engine.sequential.resolve`) once the first round has given every query's observed AP, taken
    by :meth:`result` (None when it never started: then :meth:`after` runs them once the mAP null is
    done). Each null's draws read only their own streams and the values its pools would compute, so the
    p-values are the same bits either way; the two nulls' rounds keep both cores busy where one null
    alone leaves a core idle (the Python between its rounds, its last rounds' few units, the queries'
    keys).

    Beside only in process (``client`` None), with no progress or a reporter that can speak for two
    nulls at once (``progress.beside``: :class:`..engine.progress.LineProgress`, the command line's,
    :class:`..engine.progress.NotebookProgress`, a notebook's, and the dashboard's
    ``apnull.ui.progress.ScoreProgress``; its lines then name their null, :data:`NULL_NAMES`), when nothing
    would be let go between the nulls (:func:`_kept_whole`: the screen's rows read from the table already,
    or a matrix small enough to hold for both) and they are read as one group
    (:meth:`.permutation.ScreenWork.groups`: the in-process part's rows are kept for both nulls). Under a
    deadline both nulls draw on its one clock: each one's rounds are estimated from its rounds before and
    started only within the time left, an estimate doubled where the last round ran alone and the other
    null now draws beside it (:meth:`..engine.clock.Deadline.drawers`). The mAP null's decisions come
    first, as when the nulls run in turn: beside only while the time left is :data:`BESIDE_ROOM` times the
    run's so far, and a round of the mAP null's that fits in the time left only alone is drawn with the
    queries' null held at its next batch (:meth:`..engine.clock.Deadline.held`).
    ``then``: the run's next step (its rows held for the result), called in the thread once its null is
    done, while the mAP null's last rounds run (a core they leave idle), its value in ``kept``. Used as a
    context: when the block fails, the thread stops at its next batch and is waited for."""

    def __init__(self, work, state, laws, opts, client=None, then=None):
        self.work, self.state, self.laws, self.opts, self.client = work, state, laws, opts, client
        self.then, self.kept = then, None  # the run's next step, done in the thread once its null is (None: none)
        self.permutations = opts.permutations if isinstance(opts.permutations, int) else "auto"  # "all": drawn
        self.able = (client is None
                     and (opts.progress is None or hasattr(opts.progress, "beside"))
                     and _kept_whole(work.screen.X) and len(work.groups()) == 1)
        self._thread, self._out, self._error, self._stop = None, None, None, threading.Event()

    def after(self, scores) -> QueryP:
        """The queries' p-values, computed now (``scores``: the run's :class:`..table.perts.Scores`)."""
        o = self.opts
        return query_pvalues(self.work, scores, self.laws, o.seed, self.permutations, self.client, o.threads,
                             o.deadline, o.progress)

    def _run(self, scores, progress):
        o = self.opts
        try:
            self._out = query_pvalues(self.work, scores, self.laws, o.seed, self.permutations, None, o.threads,
                                      o.deadline, progress)
            if self.then is not None and not self._stop.is_set():  # while the mAP null's last rounds run
                self.kept = self.then()
        except BaseException as error:  # taken to the caller by result()
            self._error = error

    def start(self) -> None:
        d = self.opts.deadline  # a tight budget: in turn (BESIDE_ROOM)
        if self.able and self._thread is None and (d is None or d.left() >= BESIDE_ROOM * max(d.elapsed(), 0.0)):
            state, told = self.state, self.opts.progress  # the first round's observed scores (no mAP p-value yet)
            scores = Scores.observed(state["ap"].copy(), state["pr"].copy(), state["map"].copy())
            progress = _Checked(self._stop, told.beside(*NULL_NAMES) if told is not None else None, self.opts.deadline)
            self._thread = threading.Thread(target=self._run, args=(scores, progress), name="apnull-queries",
                                            daemon=True)
            self._thread.start()

    def _join(self) -> None:
        self._thread.join()
        if self.opts.progress is not None:
            self.opts.progress.alone()  # the mAP null's lines name no null again

    def result(self) -> QueryP | None:
        if self._thread is None:
            return None
        self._join()
        if self._error is not None:
            raise self._error
        return self._out

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if self._thread is not None and kind is not None:
            self._stop.set()
            self._join()
        return False
