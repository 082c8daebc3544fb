"""Arrays of runs and links, at the bottom of the scoring wing (the table, the engine and the nulls read
them): runs of consecutive entries as offsets (:func:`offsets`, :func:`ranges`) and the components of
nodes linked by groups (:func:`linked_roots`, a union-find)."""

from __future__ import annotations

import numpy as np

__all__ = ["offsets", "ranges", "linked_roots"]


def offsets(lengths) -> np.ndarray:
    """(len + 1,) int64 offsets of consecutive runs of ``lengths``: run i is ``offsets[i]`` ..
    ``offsets[i + 1] - 1``."""
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


def ranges(off: np.ndarray, idx) -> np.ndarray:
    """The positions ``off[i] .. off[i + 1] - 1`` of every i in ``idx``, concatenated (int64)."""
    idx = np.asarray(idx, dtype=np.int64)
    lo, hi = off[idx], off[idx + 1]
    lens = hi - lo
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return starts + np.arange(total, dtype=np.int64)


def linked_roots(count: int, groups) -> np.ndarray:
    """The component of each of ``count`` nodes (0 .. count - 1) when the members of every group (a
    sequence of node indices) are linked: (count,) int64, each node's root, the smallest node of its
    component (a union-find with path halving, the smaller root kept). A node no group names is its
    own component; a group of one links nothing."""
    parent = list(range(count))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for group in groups:
        if len(group) < 2:
            continue
        a = find(int(group[0]))
        for s in group[1:]:
            b = find(int(s))
            if a != b:
                parent[max(a, b)] = min(a, b)
                a = min(a, b)
    return np.array([find(s) for s in range(count)], dtype=np.int64)
