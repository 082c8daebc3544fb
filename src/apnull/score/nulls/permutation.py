"""The mAP null of a perturbation: its label permuted among its pool, within every stratum.

For perturbation t, in every stratum s, t's k_s replicates and the n_s controls there form a pool;
a null draw takes k_s members of each pool, uniformly without replacement (stratum s from the stream
keyed by (seed, t, s)), gives them t's label (the other members act as controls), and recomputes the
k APs and their mean. Exact under exchangeability of t's replicates and the controls within each
stratum. With negatives="others" the pool of stratum s is every profile there (controls, t's
replicates and the other perturbations' replicates): a draw takes k_s of them, the rest are the
negatives; exact under exchangeability of t's replicates with the other profiles of their stratum. The pair rule (``positives_differ_by``) is a mask on the same draws (:func:`..kernels.pool.
evaluate`). With ``permutations="all"`` every assignment is enumerated.

The work (:class:`ScreenWork`) is the screen cut into *components*: strata linked by perturbations
with replicates in both, whose controls' tables (:func:`..kernels.controls.control_rows`) are built
once for all their perturbations. A :class:`Part` holds some perturbations' rows, offsets and stream
keys with their components; :func:`perturbations_batch` (the batch function the engine runs) scores a
batch of them in one compiled call per component: single-stratum pools without pair rule by the chunked
kernel, the others one draw at a time. The conditional per-query null (:mod:`.conditional`) runs on
the same work and parts.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np

from ...law import VALUE_TOL
from ...limits import SCORE_MAX_EXACT_ASSIGNMENTS as MAX_EXACT_ASSIGNMENTS
from ...streams import stream_keys
from ..table.segments import offsets, ranges
from ..engine.sequential import Null
from ..engine.shards import screen_shards, strata_order, touched_strata
from ..kernels.chunks import FIRST_CHUNK
from ..kernels.controls import ControlRows, control_rows
from ..kernels.crossed import crossed_batch as _crossed_kernel
from ..kernels.crossed import crossed_pools
from ..kernels.draws import NO_MEMBERS, Counts, Observed, PartRows
from ..kernels.draws import mean_batch as _mean_kernel
from ..kernels.draws import single_batch as _single_kernel
from ..table.perts import components_of
from ..table.rows import received_rows, sent_rows
from .pieces import CrossedPieces
from .pooltables import BuiltComponents, crossed_of, keep_done, kept_fills, kept_pools, shared_table

__all__ = ["Part", "ScreenWork", "mean_null", "perturbations_batch", "null_values", "segment_keys",
           "assignment_count", "all_assignments", "MAX_EXACT_ASSIGNMENTS", "NO_CODES_2D"]

#: Segments whose stream keys are made together (:func:`segment_keys`).
KEY_CHUNK = 8192
#: Feature values of an in-process part's replicate rows at most when the screen's rows are made when asked
#: (``X`` not an array: a table of float32 features, or the rows read again after the mAP null): a part
#: holds its rows in float64, so a component of the whole screen (the crossed layout) is cut into groups
#: of about this many values (64 MB: 11,382 rows at 737 features) instead of copying every row at once.
PART_CELLS = 1 << 23
#: An empty int64 table: no pair-rule codes, no explicit draws, no kept null values.
NO_CODES_2D = np.zeros((0, 0), dtype=np.int64)


#: A screen of fewer perturbations takes the general kernels for every perturbation, crossed ones
#: included (:mod:`..kernels.crossed`'s look-ups give the same draws and values, bit for bit): compiling
#: the crossed kernels costs a fresh install's first run about 12 s of CPU more than the general ones,
#: which a small screen's draws never win back (the digits example, 14 perturbations on 4 plates: 36 s
#: of CPU for its first run with the general kernels, 48 s with the crossed ones).
CROSSED_MIN_PERTURBATIONS = 200


class Part(NamedTuple):
    """Some perturbations of a screen with what their kernels read."""

    comps: list              #: each component's :class:`..kernels.controls.ControlRows` (or, before
    #: ``prepare_part``, its list of control row arrays, one per stratum)
    comp_of: np.ndarray      #: (p,) position in ``comps`` of perturbation j's component
    index: np.ndarray        #: (p,) perturbation j's index in the screen
    arrays: PartRows         #: the perturbations' rows, offsets, strata and stream keys (:func:`segment_keys`)
    kind: int                #: similarity kind (:mod:`..kernels.similarity`)
    ctl_codes: list          #: per component: (controls, C) codes aligned with its ``ControlRows.X``
    crossed: bool = True     #: its crossed perturbations may take the crossed kernels (a large screen)
    shared: list = None      #: per component a dict holding its :class:`..kernels.filled.Shared` once
    #: built (:func:`shared_table`); in process the same dict in every round and null of the run

    def replicates(self, j) -> tuple:
        """(rows (k, d), stratum position of each) of perturbation j, as the kernels group them."""
        a = self.arrays
        q, s = slice(a.qoff[j], a.qoff[j + 1]), slice(a.soff[j], a.soff[j + 1])
        return (np.ascontiguousarray(a.X[a.rows[q]]),
                np.repeat(np.arange(s.stop - s.start, dtype=np.int64), a.seg_len[s]))


def segment_keys(perts, seed) -> np.ndarray:
    """(s,) uint64 stream key of every segment's permutations: ``stream_key(seed, key, stratum)``."""
    keys = np.empty(perts.seg_stratum.size, dtype=np.uint64)
    owner = perts.seg_pert
    for a in range(0, owner.size, KEY_CHUNK):  # a chunk of names at a time (a Python string each)
        b = min(a + KEY_CHUNK, owner.size)
        first = int(owner[a])
        names = perts.keys[first:int(owner[b - 1]) + 1].tolist()
        keys[a:b] = stream_keys(seed, [names[i] for i in (owner[a:b] - first).tolist()],
                                np.asarray(perts.strata, dtype=object)[perts.seg_stratum[a:b]].tolist())
    return keys


def prepare_part(part: Part) -> Part:
    """``part`` made ready on the worker it was sent to: its rows prepared where they came as the table holds
    them (:class:`..table.rows.RawRows`), and each component's control rows (sent as (rows, each stratum's
    count)) made into its :class:`ControlRows`."""
    comps = [_control_tables(received_rows(every), sizes, part.kind) for every, sizes in part.comps]
    return part._replace(arrays=part.arrays._replace(X=received_rows(part.arrays.X)), comps=comps,
                         shared=[{} for _ in part.comps])


def _control_tables(every, sizes, kind) -> ControlRows:
    """The :class:`ControlRows` of a component's control rows ``every`` (its strata's, ``sizes`` rows each, in turn)."""
    return control_rows([np.ascontiguousarray(r) for r in np.split(every, np.cumsum(sizes)[:-1])], kind)


class ScreenWork:
    """A screen's perturbations as the engine's work (:class:`..engine.executor.Work`): items are the
    perturbations, grouped by component; levels "seg" (a perturbation's strata) and "query" (its
    replicates). The screen goes to dask workers once for every null run on it."""

    broadcast = False
    prepare = staticmethod(prepare_part)

    def __init__(self, screen, seed: int):
        self.screen, self.seed = screen, int(seed)
        pt = screen.perts
        self.size = len(pt)
        self.offsets = {"seg": pt.soff, "query": pt.qoff}
        self._comps = self._keys = self._comp_of = self._groups = None
        self._built = BuiltComponents()  # each component's ControlRows and holder, kept for later rounds

    @property
    def components(self) -> list:
        """[(perturbation indices, stratum indices)] of each component (:func:`..table.perts.components_of`)."""
        if self._comps is None:
            self._comps = components_of(self.screen.perts)
            self._comp_of = np.empty(self.size, dtype=np.int64)
            for c, (members, _) in enumerate(self._comps):
                self._comp_of[members] = c
        return self._comps

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None:
            self._keys = segment_keys(self.screen.perts, self.seed)
        return self._keys

    def groups(self) -> list:
        """Each component's perturbations; when the rows are made when asked (``X`` not an array), a
        component's cut into groups of about :data:`PART_CELLS` values of replicate rows (its control
        tables are built once for all of them). A group's perturbations are drawn in order of their
        strata (:func:`..engine.shards.strata_order`): on the crossed layout the pools of perturbations on
        the same plates read the same blocks of the shared pairs of two controls (:func:`.pooltables.
        shared_table`), so a block stays in the processor's caches from one pool to the next (in index
        order a draw's look-ups missed them: the most of the first rounds' draws). No value changes:
        each perturbation reads its own data and streams."""
        whole = isinstance(self.screen.X, np.ndarray)
        if self._groups is None or self._groups[0] != whole:  # the same each round: made once (per kind of X)
            self._groups = (whole, self._made_groups(whole))
        return self._groups[1]

    def _made_groups(self, whole: bool) -> list:
        pt = self.screen.perts
        if whole:
            groups = [members for members, _ in self.components]
        else:
            rows = max(1, PART_CELLS // max(self.screen.X.shape[1], 1))
            groups = []
            for members, _ in self.components:
                size = np.cumsum(pt.qoff[members + 1] - pt.qoff[members])
                cut = np.searchsorted(size, np.arange(rows, int(size[-1]), rows), side="right")
                groups.extend(np.split(members, np.unique(cut)))
        return [strata_order(pt.soff, pt.seg_stratum, g) for g in groups if g.size]

    def weights(self) -> np.ndarray:
        """Each perturbation's cost of a draw relative to the others': k (k - 1) + 1 for its k replicates
        (each query ranks k - 1 positives; the 1 for what a perturbation costs whatever its size). The
        batches in process, the tasks on dask and the shards are cut by it (:func:`..engine.shards.batch_bounds`)."""
        k = np.diff(self.screen.perts.qoff).astype(float)
        return k * (k - 1) + 1

    def shards(self, count: int) -> list:
        """About ``count`` shards of similar cost (:meth:`weights`): whole components, and a component
        larger than a shard's share (the crossed layout: one component of every plate) cut by its
        perturbations (:func:`..engine.shards.screen_shards`)."""
        pt = self.screen.perts
        return screen_shards([members for members, _ in self.components], pt.qoff, pt.soff, pt.seg_stratum,
                             count, self.weights())

    def part(self, items, worker: bool) -> Part:
        """The :class:`Part` of the perturbations ``items``, a component's perturbations together (in
        component order, ascending within): in process, prepared and pointing into the screen's matrix;
        for a worker, their rows and the control rows of the strata they have replicates in (all of a whole
        component's; a shard of a cut component's, its own plates only), as the table holds them where the
        screen reads its rows when asked (:func:`..table.rows.sent_rows`), prepared on the worker."""
        sc = self.screen
        pt = sc.perts
        comps = self.components
        items = np.asarray(items, dtype=np.int64)
        of = self._comp_of[items]
        where = np.full(len(pt.strata), -1, dtype=np.int64)
        copy = worker or not isinstance(sc.X, np.ndarray)  # rows read back from the table: once per part
        codes = sc.codes
        built, comp_of, ctl_codes, order, holders = [], np.empty(self.size, dtype=np.int64), [], [], []
        for comp in np.unique(of).tolist():
            strata = comps[comp][1]
            todo = np.sort(items[of == comp])
            if worker:  # a shard holds the controls of its perturbations' strata only
                strata = touched_strata(pt.soff, pt.seg_stratum, todo, strata)
            c = len(built)
            where[strata] = np.arange(strata.size)
            names = [pt.strata[s] for s in strata.tolist()]
            known = None if worker else self._built.get(comp)
            if known is not None:  # built for an earlier round, null or group: its tables again
                built.append(known.rows)
                holders.append(known.holder)
            else:
                pools = [sc.controls[s] for s in names]
                sizes, rows = [p.size for p in pools], np.concatenate(pools) if pools else np.zeros(0, np.int64)
                built.append((sent_rows(sc.X, rows), sizes) if worker else  # a worker makes its tables itself
                             _control_tables(sc.X[rows] if pools else np.empty((0, sc.X.shape[1])), sizes, sc.kind))
                holders.append({})
                if not worker:
                    self._built.keep(comp, built[-1], holders[-1])
            comp_of[todo] = c
            width = 0 if codes is None else codes.shape[1]
            ctl_codes.append(np.ascontiguousarray(np.concatenate([codes[sc.controls[s]] for s in names]))
                             if codes is not None else np.zeros((0, width), dtype=np.int64))
            order.append(todo)
        index = np.concatenate(order) if order else np.empty(0, np.int64)
        segs = ranges(pt.soff, index)
        rows = pt.rows[ranges(pt.qoff, index)]
        kept = None if worker or not copy else self._built.kept_rows(index, pt.qoff)
        if kept is not None:  # an earlier round's or null's part made them: read from its rows
            X, at = kept
        elif worker:
            X, at = sent_rows(sc.X, rows), np.arange(rows.size)
        elif copy:
            X, at = np.ascontiguousarray(sc.X[rows]), np.arange(rows.size)
            self._built.keep_rows(index, pt.qoff, X)
        else:
            X, at = sc.X, rows
        rep_codes = (np.ascontiguousarray(codes[rows]) if codes is not None else
                     np.zeros((rows.size, 0), dtype=np.int64))
        members = NO_MEMBERS if sc.member is None else np.ascontiguousarray(sc.member[rows])
        arrays = PartRows(X, at, offsets(pt.qoff[index + 1] - pt.qoff[index]),
                          offsets(pt.soff[index + 1] - pt.soff[index]), pt.seg_len[segs], where[pt.seg_stratum[segs]],
                          self.keys[segs], rep_codes, members)
        return Part(built, comp_of[index], index, arrays, sc.kind, ctl_codes, self.size >= CROSSED_MIN_PERTURBATIONS,
                    holders)


#: Levels of the mAP null's state arrays (see :mod:`..engine.executor`).
MEAN_LEVELS = {"counters": "seg", "drawn": "item", "reached": "item", "stopped": "item", "ap": "query",
               "pr": "query", "map": "item"}


def perturbations_batch(part: Part, pos, st, target, h, exhaustive=False, keep=0):
    """One round of the mAP null for the perturbations at positions ``pos`` of ``part`` (the batch
    function of :func:`mean_null`): {"counters", "drawn", "reached", "stopped", "ap", "pr", "map"}, and
    with ``keep`` > 0 "values", the first ``keep`` null values of each.

    Perturbations sharing a component run in one compiled call: pools over one stratum without pair rule
    by the chunked kernel, pools of one replicate a stratum (the crossed layout) by look-ups
    (:mod:`..kernels.crossed`), the others one draw at a time. ``exhaustive``: each perturbation's every
    assignment is enumerated instead (``target`` ignored).
    """
    pos = np.asarray(pos, dtype=np.int64)
    arr = part.arrays
    qo = offsets(arr.qoff[pos + 1] - arr.qoff[pos])
    so = offsets(arr.soff[pos + 1] - arr.soff[pos])
    n = pos.size
    counts = Counts(st["counters"].copy(), st["drawn"].copy(), st["reached"].copy(), np.zeros(n, dtype=bool))
    seen = Observed(np.empty(qo[-1]), np.empty(qo[-1]), np.empty(n))
    values = np.full((n, keep), np.nan)
    single = ((np.diff(so) == 1) & (arr.rep_codes.shape[1] == 0) & (np.diff(qo) >= 2) & (not exhaustive)
              & (arr.members.size == 0))  # negatives="others": one draw at a time
    comp_of = part.comp_of[pos]
    crossed = crossed_of(part, pos, crossed_pools) if not exhaustive else np.zeros(n, dtype=bool)
    path = single.astype(np.int64) + 2 * crossed
    cuts = np.concatenate([[0], np.flatnonzero(np.diff(comp_of) | np.diff(path)) + 1, [n]])
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        controls = part.comps[comp_of[a]]
        if crossed[a]:  # one replicate a stratum: look-ups (the same values as the general path)
            kept = kept_fills(part, comp_of[a], pos[a:b], counts.drawn[a:b], target)
            pools = kept_pools(part, comp_of[a], pos[a:b])
            _crossed_kernel(arr, controls, part.kind, pos[a:b], _counts(counts, slice(a, b), slice(so[a], so[b])),
                            target, h, VALUE_TOL, _observed(seen, slice(a, b), slice(qo[a], qo[b])), values[a:b],
                            shared_table(part, comp_of[a]), kept, pools, False)
            keep_done(part, comp_of[a], pos[a:b], kept)
            keep_done(part, comp_of[a], pos[a:b], pools, "pools")
            continue
        if single[a]:
            _single_kernel(arr, controls, part.kind, pos[a:b], _counts(counts, slice(a, b), slice(so[a], so[b])),
                           target, h, VALUE_TOL, FIRST_CHUNK if h <= target else target,
                           _observed(seen, slice(a, b), slice(qo[a], qo[b])), values[a:b])
            continue
        ones = range(a, b) if exhaustive else [None]
        for i in ones:  # exhaustive: each perturbation's own enumeration, one at a time
            t = slice(a, b) if i is None else slice(i, i + 1)
            draws = NO_CODES_2D if i is None else all_assignments(_sizes(part, controls, int(pos[i])))
            T = draws.shape[0]
            _mean_kernel(arr, controls, part.ctl_codes[comp_of[a]], part.kind, pos[t],
                         _counts(counts, t, slice(so[t.start], so[t.stop])), target if not T else T,
                         h if not T else T + 1, VALUE_TOL, _observed(seen, t, slice(qo[t.start], qo[t.stop])),
                         values[t], draws)
    counters, drawn, reached, stopped = counts
    ap, pr, maps = seen
    out = {"counters": counters, "drawn": drawn, "reached": reached, "stopped": stopped, "ap": ap, "pr": pr,
           "map": maps}
    if keep:
        out["values"] = values
    return out


def _counts(counts: Counts, t: slice, segs: slice) -> Counts:
    """``counts`` of the perturbations ``t`` of a batch, their segments' counters ``segs`` (views: the
    kernels write through them)."""
    return Counts(counts.counters[segs], counts.drawn[t], counts.reached[t], counts.stopped[t])


def _observed(seen: Observed, t: slice, queries: slice) -> Observed:
    """``seen`` of the perturbations ``t`` of a batch and their ``queries`` (views)."""
    return Observed(seen.ap[queries], seen.pr[queries], seen.maps[t])


def _sizes(part: Part, controls: ControlRows, j: int) -> list:
    """[(k_s, n_s)] of perturbation j's strata in a part: its pool of stratum s has k_s + n_s members
    (with negatives="others", the control tables hold the k_s replicates among them)."""
    a = part.arrays
    segs = range(int(a.soff[j]), int(a.soff[j + 1]))
    inside = a.members.size > 0
    return [(int(a.seg_len[g]), int(controls.size[a.seg_comp[g]]) - (int(a.seg_len[g]) if inside else 0))
            for g in segs]


def mean_null(work: ScreenWork, *, exhaustive=False, keep=0) -> Null:
    """The mAP null of every perturbation of ``work``'s screen, as the engine runs it (state zeroed)."""
    pt = work.screen.perts
    P, Q = len(pt), int(pt.qoff[-1])
    state = {"counters": np.zeros(pt.seg_stratum.size, dtype=np.uint64), "drawn": np.zeros(P, dtype=np.int64),
             "reached": np.zeros(P, dtype=np.int64), "stopped": np.zeros(P, dtype=bool), "ap": np.empty(Q),
             "pr": np.empty(Q), "map": np.empty(P)}
    levels = dict(MEAN_LEVELS)
    if keep:
        state["values"] = np.empty((P, keep))
        levels["values"] = "item"
    fn = (functools.partial(perturbations_batch, exhaustive=exhaustive, keep=keep) if exhaustive or keep
          else perturbations_batch)
    return Null(work, fn, state, levels, ("counters", "drawn", "reached"), "item", np.arange(P), np.arange(P),
                "perturbations", None if exhaustive or keep else CrossedPieces())


def null_values(work: ScreenWork, i: int, draws: int, exhaustive=False) -> np.ndarray:
    """The first ``draws`` null mAPs of perturbation i (every assignment's for ``exhaustive``): exactly the
    values its p-value counted."""
    part = work.part(np.array([i]), False)
    null = mean_null(work, exhaustive=exhaustive, keep=max(int(draws), 1) if not exhaustive else 0)
    st = {name: null.state[name][_at(work, null.levels[name], i)] for name in null.inputs}
    if exhaustive:
        sizes = _sizes(part, part.comps[0], 0)
        out = _enumerated_values(part, sizes)
        return out
    out = perturbations_batch(part, np.array([0]), st, int(draws), int(draws) + 1, keep=int(draws))
    return out["values"][0, :int(draws)]


def _enumerated_values(part: Part, sizes) -> np.ndarray:
    draws = all_assignments(sizes)
    T = draws.shape[0]
    values = np.full((1, T), np.nan)
    k = int(part.arrays.qoff[1])
    counts = Counts(np.zeros(len(sizes), dtype=np.uint64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                    np.zeros(1, dtype=bool))
    _mean_kernel(part.arrays, part.comps[0], part.ctl_codes[0], part.kind, np.array([0], dtype=np.int64), counts,
                 T, T + 1, VALUE_TOL, Observed(np.empty(k), np.empty(k), np.empty(1)), values, draws)
    return values[0]


def _at(work, level, i):
    return np.array([i]) if level == "item" else ranges(work.offsets[level], np.array([i]))


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
