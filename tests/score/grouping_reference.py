"""The grouping ``prepare_screen`` used before the screen was held as arrays (reference for
tests/score/test_score_layout.py and test_score_matrix.py): the perturbations' rows grouped by label
and stratum, replicates in canonical order. ``apnull.score.table.perts`` must give the same groups.
"""

from __future__ import annotations

import numpy as np


def _group_spans(order, gf, sf, tied):
    """The (start, stop) in ``order`` of each (label, stratum) group holding a position of ``tied``."""
    spans = []
    for t in np.unique(tied):
        if spans and t < spans[-1][1]:
            continue
        a, b = t, t + 2
        while a > 0 and gf[order[a - 1]] == gf[order[t]] and sf[order[a - 1]] == sf[order[t]]:
            a -= 1
        while b < order.size and gf[order[b]] == gf[order[t]] and sf[order[b]] == sf[order[t]]:
            b += 1
        spans.append((a, b))
    return spans


def grouped_rows(X: np.ndarray, labels: np.ndarray, strata: np.ndarray, members: np.ndarray) -> list:
    """The rows ``members`` (a boolean mask over X's rows) grouped by label, then by stratum.

    Returns
    -------
    list of (label, strata, reps, first)
        One entry per distinct label, labels sorted; ``strata`` the label's strata sorted; ``reps``
        per stratum the row indices in canonical order (lexicographic by the rows of X, ties in row
        order: what ``np.lexsort`` of each group's rows gives); ``first`` the label's first row.
        One stable ``np.lexsort`` of all rows by (label, stratum, X's columns) replaces a sort per
        group (its keys are read one column at a time).
    """
    rows = np.flatnonzero(members)
    keys, g = np.unique(labels[rows], return_inverse=True)
    skeys, s = np.unique(strata[rows], return_inverse=True)
    gf = np.full(X.shape[0], -1, dtype=np.int64)
    gf[rows] = g.ravel()
    sf = np.zeros(X.shape[0], dtype=np.int64)
    sf[rows] = s.ravel()
    first_col = X[:, 0] if X.shape[1] else np.zeros(X.shape[0])
    order = np.lexsort([first_col, sf, gf])
    order = order[gf[order] >= 0]
    same = (gf[order[1:]] == gf[order[:-1]]) & (sf[order[1:]] == sf[order[:-1]])
    tied = np.flatnonzero(same & (first_col[order[1:]] == first_col[order[:-1]]))
    if tied.size:  # groups with equal first values: sorted again by all columns, ties in row order
        for a, b in _group_spans(order, gf, sf, tied):
            seg = np.sort(order[a:b])
            order[a:b] = seg[np.lexsort(X[seg].T[::-1])]
    go, so = gf[order], sf[order]
    bounds = np.searchsorted(go, np.arange(keys.size + 1))
    out = []
    for k in range(keys.size):
        seg, ss = order[bounds[k]:bounds[k + 1]], so[bounds[k]:bounds[k + 1]]
        if ss[0] == ss[-1]:  # one stratum (ss is sorted)
            out.append((keys[k], [skeys[ss[0]]], [seg], int(seg.min())))
            continue
        cut = np.flatnonzero(ss[1:] != ss[:-1]) + 1
        starts = [0, *cut.tolist()]
        out.append((keys[k], [skeys[ss[a]] for a in starts], np.split(seg, cut), int(seg.min())))
    return out


def components_reference(perts) -> list:
    """Indices of ``perts`` (any sequence of ``Pert``) grouped by connected strata: the union-find on
    stratum keys the engine used before it read the table's arrays (components in order of their
    smallest stratum key, perturbations in increasing index)."""
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in perts:
        for s in p.strata[1:]:
            a, b = find(p.strata[0]), find(s)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict = {}
    for i, p in enumerate(perts):
        groups.setdefault(find(p.strata[0]), []).append(i)
    return [groups[k] for k in sorted(groups)]


def spec_reference(screen, i, comp_strata, seed, stream_key):
    """(X, stratum, strata, keys, sizes, rows) of perturbation i as the engine built them from its
    ``Pert`` before it read the table's arrays."""
    p = screen.perts[i]
    where = {s: j for j, s in enumerate(comp_strata)}
    return (screen.X[np.concatenate(p.reps)], np.repeat(np.arange(len(p.strata)), [len(r) for r in p.reps]),
            np.array([where[s] for s in p.strata]), np.array([stream_key(seed, p.key, s) for s in p.strata],
                                                            dtype=np.uint64),
            [(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)], screen.rows[np.concatenate(p.reps)])
