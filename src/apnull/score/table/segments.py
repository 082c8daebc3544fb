"""Arrays of runs and links, at the bottom of the scoring wing (the table, the engine and the nulls read
them): runs of consecutive entries as offsets (:func:`offsets`, :func:`ranges`) and the components of
nodes linked by groups (:func:`linked_roots`, a union-find)."""

from __future__ import annotations

import numpy as np

__all__ = ["offsets", "ranges", "linked_roots"]


def offsets(lengths) -> np.ndarray:
    """(len + 1,) int64 offsets of consecutive runs of ``lengths``: run i is ``offsets[i]`` ..
    ``offsets[i + 1] - 1``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


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


def linked_roots(count: int, members, off) -> np.ndarray:
    """The component of each of ``count`` nodes (0 .. count - 1) when the members of every group are
    linked: (count,) int64, each node's root, the smallest node of its component. Group i is
    ``members[off[i]:off[i + 1]]`` (runs as :func:`offsets` makes them). A node no group names is its own
    component; a group of one links nothing.

    Whole arrays, no Python loop a node: each group links its members to its first. Then, until no link
    joins two components, every root with a link to a smaller root is hooked under the smallest of them,
    and every node is pointed at its root (pointer jumping). The component's smallest node is never hooked,
    so it ends as the root; a round at least halves the roots a component has left (a root not hooked
    has no smaller neighbour root), so there are O(log count) rounds."""
    members = np.asarray(members, dtype=np.int64)
    off = np.asarray(off, dtype=np.int64)
    root = np.arange(count, dtype=np.int64)
    lens = np.diff(off)
    head = members[np.repeat(off[:-1], lens)] if members.size else members  # each member's group's first
    tail = members
    while True:
        a, b = root[head], root[tail]
        apart = a != b
        if not apart.any():
            return root
        a, b = a[apart], b[apart]
        np.minimum.at(root, np.maximum(a, b), np.minimum(a, b))  # each root under its smallest neighbour root
        while True:  # every node pointed at its root
            up = root[root]
            if np.array_equal(up, root):
                break
            root = up
