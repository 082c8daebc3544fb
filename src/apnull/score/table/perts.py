"""The perturbations of a screen as a few arrays (one table), not one Python object each.

A screen of 100,000 perturbations held as 100,000 ``Pert`` objects (each with its lists of strata and
of row arrays) costs about 60 MB of small objects, and building them costs as much again. A
:class:`PertTable` holds the same in flat arrays, perturbation by perturbation:

- ``rows``: the screen's X row of every replicate, grouped by perturbation, then by stratum (sorted
  keys), canonical order within (lexicographic by the prepared feature rows, ties in row order);
- ``qoff`` (P + 1): perturbation i's replicates are ``rows[qoff[i]:qoff[i + 1]]`` (its queries);
- ``soff`` (P + 1): its segments (one per stratum it has replicates in) are ``soff[i]:soff[i + 1]``;
  segment j holds the replicates ``rows[seg_off[j]:seg_off[j + 1]]`` in stratum ``strata[seg_stratum[j]]``;
- ``names`` (the first row's value of the perturbation column, as the tables show it) and ``keys``
  (that value as text, the key of its random streams); ``shown``, when the column has pandas's text
  dtype, the names as that column's own array (the result tables take their rows from it without
  converting a Python string per row). When the names are that text and each is its own key,
  ``names`` and ``keys`` are that array too (a few bytes a name instead of a Python string each):
  read them by index, slice or ``tolist()``, as any 1-D array.

``table[i]`` gives the :class:`._prepare.Pert` of perturbation i (built when asked), so code reading
one perturbation at a time keeps working; whole-screen code reads the arrays.
:func:`group_rows` builds the table with one sort of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .segments import offsets, ranges
from .segments import linked_roots

__all__ = ["Pert", "PertTable", "Scores", "group_rows", "ranges", "components_of", "sorted_order"]


@dataclass
class Pert:
    """One scored perturbation: its name, strata (sorted keys) and replicate rows per stratum."""
    name: object
    key: str
    strata: list
    reps: list  # per stratum: array of Screen.X row indices, in canonical order

    @property
    def k(self) -> int:
        return int(sum(len(r) for r in self.reps))


@dataclass
class PertTable:
    """The scored perturbations of a screen (see the module's description of the fields)."""

    names: object            # (P,) each perturbation's name (object ndarray, or ``shown``)
    keys: object             # (P,) its key (text; object ndarray, or ``shown``)
    rows: np.ndarray         # (Q,) int64 X row of each replicate
    qoff: np.ndarray         # (P + 1,) int64
    soff: np.ndarray         # (P + 1,) int64
    seg_off: np.ndarray      # (S + 1,) int64
    seg_stratum: np.ndarray  # (S,) int64 index into ``strata``
    strata: np.ndarray       # (T,) object: stratum keys, sorted
    shown: object = None     # (P,) the names as the input column's own pandas array, or None

    def __len__(self) -> int:
        return int(self.qoff.size - 1)

    def __getitem__(self, i) -> Pert:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i = int(i) % len(self)
        segs = range(int(self.soff[i]), int(self.soff[i + 1]))
        return Pert(name=self.names[i], key=self.keys[i], strata=[self.strata[self.seg_stratum[j]] for j in segs],
                    reps=[self.rows[self.seg_off[j]:self.seg_off[j + 1]] for j in segs])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def k(self) -> np.ndarray:
        """(P,) replicates of each perturbation."""
        return np.diff(self.qoff)

    @property
    def seg_len(self) -> np.ndarray:
        """(S,) replicates of each segment."""
        return np.diff(self.seg_off)

    @property
    def seg_pert(self) -> np.ndarray:
        """(S,) the perturbation of each segment."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.soff))

    @property
    def crossed(self) -> bool:
        """True for the crossed layout (JUMP's): most perturbations spanning several strata have one
        replicate on each (a few with two wells on a plate, such as positive controls, do not change the
        layout). A screen without a stratum column is one stratum: block, as is a screen whose
        perturbations have their replicates together on a plate."""
        nseg = np.diff(self.soff)
        spans = nseg > 1
        if not spans.any():
            return False
        longest = np.maximum.reduceat(self.seg_len, self.soff[:-1])[spans]  # every perturbation has a segment
        return 2 * int((longest == 1).sum()) > int(spans.sum())

    def query_pert(self) -> np.ndarray:
        """(Q,) the perturbation of each replicate."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.k)

    def take(self, idx) -> "PertTable":
        """The perturbations ``idx`` (ascending), as a new table."""
        idx = np.asarray(idx, dtype=np.int64)
        segs = ranges(self.soff, idx)
        seg_len = self.seg_len[segs]
        nseg = self.soff[idx + 1] - self.soff[idx]
        shown = None if self.shown is None else self.shown.take(idx)
        names = shown if self.names is self.shown else self.names[idx]
        keys = shown if self.keys is self.shown else self.keys[idx]
        return PertTable(names, keys, self.rows[ranges(self.qoff, idx)], offsets(self.k[idx]), offsets(nseg),
                         offsets(seg_len), self.seg_stratum[segs], self.strata, shown)

    @classmethod
    def from_perts(cls, perts, strata) -> "PertTable":
        """The table of a list of :class:`Pert` whose strata are among ``strata`` (sorted keys)."""
        where = {s: j for j, s in enumerate(strata)}
        names = np.empty(len(perts), dtype=object)
        keys = np.empty(len(perts), dtype=object)
        names[:] = [p.name for p in perts]
        keys[:] = [p.key for p in perts]
        reps = [r for p in perts for r in p.reps]
        return cls(names, keys, np.concatenate(reps).astype(np.int64) if reps else np.empty(0, np.int64),
                   offsets([p.k for p in perts]), offsets([len(p.reps) for p in perts]),
                   offsets([len(r) for r in reps]), np.array([where[s] for p in perts for s in p.strata],
                                                             dtype=np.int64), np.asarray(strata, dtype=object))


def components_of(table: PertTable) -> list:
    """[(perturbation indices, stratum indices)] of each component of ``table``'s strata.

    Two strata are in one component when a perturbation has replicates in both (:func:`.segments.linked_roots`
    on the segments' stratum indices, the smaller index the root). Each component lists its perturbations in
    increasing index and its strata in increasing index (= key order: ``strata`` is sorted); the
    components come in order of their first stratum. Strata no perturbation has are in none.
    """
    root = linked_roots(len(table.strata), table.seg_stratum, table.soff)
    first = table.seg_stratum[table.soff[:-1]]
    of_pert = root[first] if first.size else np.empty(0, np.int64)
    order = np.argsort(of_pert, kind="stable")
    cuts = np.flatnonzero(np.diff(of_pert[order])) + 1
    by_root = np.argsort(root, kind="stable")
    starts = np.flatnonzero(np.diff(root[by_root], prepend=-1))
    strata_of = dict(zip(root[by_root][starts].tolist(), np.split(by_root, starts[1:])))
    return [(members, strata_of[int(of_pert[members[0]])]) for members in np.split(order, cuts) if members.size]


def sorted_order(X, primary, rows):
    """Order of ``rows`` by (primary, X[row, 0], X[row, 1], ..., row): what ``np.lexsort`` of all
    those keys gives, reading the feature columns only where the keys before them tie."""
    x0 = X[rows, 0] if X.shape[1] else np.zeros(rows.size)
    order = np.lexsort((x0, primary))
    if X.shape[1] < 2 or order.size < 2:
        return order
    p, x = primary[order], x0[order]
    tie = (p[1:] == p[:-1]) & (x[1:] == x[:-1])
    if not tie.any():
        return order
    in_run = np.zeros(order.size, dtype=bool)
    in_run[1:] |= tie
    in_run[:-1] |= tie
    at = np.flatnonzero(in_run)  # positions of the tied runs, each run in row order (stable sort)
    run = np.cumsum(np.concatenate([[1], ~tie[at[1:] - 1]]))  # run id of each position (new run unless tied)
    sub = rows[order[at]]
    if isinstance(X, np.ndarray):
        keys = [X[sub, j] for j in range(X.shape[1] - 1, 0, -1)] + [run]
    else:  # rows made when asked (:class:`.rows.BlockRows`): the tied rows made once, not once a column
        tied = X[sub]
        keys = [tied[:, j] for j in range(X.shape[1] - 1, 0, -1)] + [run]
    order[at] = order[at][np.lexsort(keys)]
    return order


def group_rows(X, label_rank, stratum_rank, members, names_of, keys_of, strata) -> tuple:
    """The rows ``members`` (indices into X, ascending) grouped into a :class:`PertTable`.

    Parameters
    ----------
    X : (N, d) prepared feature rows
    label_rank, stratum_rank : (N,) int64
        Each row's perturbation and stratum, as ranks of their sorted keys.
    members : (M,) int64 ascending rows of perturbations.
    names_of : callable(first rows) -> ((G,) names, their pandas array or None);
    keys_of : callable(label ranks) -> (G,) keys.
    strata : (T,) sorted stratum keys.

    Returns
    -------
    table : PertTable
        Every perturbation (labels sorted by key), even those to skip.
    """
    primary = label_rank[members] * np.int64(max(len(strata), 1)) + stratum_rank[members]
    order = sorted_order(X, primary, members)
    rows = members[order]
    lab, st = label_rank[rows], stratum_rank[rows]
    new_seg = np.ones(rows.size, dtype=bool)
    new_seg[1:] = (lab[1:] != lab[:-1]) | (st[1:] != st[:-1])
    new_pert = np.ones(rows.size, dtype=bool)
    new_pert[1:] = lab[1:] != lab[:-1]
    seg_start = np.flatnonzero(new_seg)
    pert_start = np.flatnonzero(new_pert)
    seg_off = np.append(seg_start, rows.size).astype(np.int64)
    qoff = np.append(pert_start, rows.size).astype(np.int64)
    soff = np.append(np.searchsorted(seg_start, pert_start), seg_start.size).astype(np.int64)
    first = np.minimum.reduceat(rows, pert_start) if rows.size else np.empty(0, np.int64)
    names = np.empty(pert_start.size, dtype=object)
    values, shown = names_of(first)
    names[:] = list(values)
    del values
    keys = np.empty(pert_start.size, dtype=object)
    keys[:] = list(keys_of(lab[pert_start]))
    same = names == keys  # a text name is its own key: hold one string, not two equal ones
    if shown is not None and same.all() and all(type(v) is str for v in names.tolist()):
        names = keys = shown  # the column's own text array, not a Python string per name
    else:
        keys[same] = names[same]
    return PertTable(names, keys, rows.astype(np.int64), qoff, soff, seg_off, st[seg_start].astype(np.int64),
                     np.asarray(strata, dtype=object), shown)


class Scores(NamedTuple):
    """The observed scores and mAP p-values of every perturbation of a :class:`PertTable`, as arrays
    (queries in the table's replicate order)."""

    ap: np.ndarray              #: (Q,) tie-aware AP of each query
    precision_at_r: np.ndarray  #: (Q,) tie-aware Precision@R of each query
    map: np.ndarray             #: (P,) observed mAP, the mean of the perturbation's APs
    p_value: np.ndarray         #: (P,) permutation p-value of the mAP (NaN when no permutation was run)
    permutations: np.ndarray    #: (P,) int64 null draws the p-value used
    bound: np.ndarray           #: (P,) bool: no draw reached the observed mAP (p is an upper bound)
    open: np.ndarray            #: (P,) bool: a time budget stopped the rounds before its BH decision settled

    @classmethod
    def observed(cls, ap, precision_at_r, maps) -> "Scores":
        """The observed scores with no mAP p-value (NaN, 0 permutations, no bound, not open): a null that
        draws none, or before its rounds have ended."""
        P = np.asarray(maps).size
        return cls(ap, precision_at_r, maps, np.full(P, np.nan), np.zeros(P, dtype=np.int64), np.zeros(P, dtype=bool),
                   np.zeros(P, dtype=bool))
